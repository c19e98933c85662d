"""What the demo store is made of: owners, slot pools, fact templates, showcase memories.

The texts are package data (memory_console/demo/texts.json), read once on import; the month
and weekday pools are the calendar's own words (timeutil). A template is a `str.format`
pattern over named slots: `{city}` is a slot value's text, `{city.kw}` its keyword and
`{city.2}` its third field; `{person2}` is a second draw from the `person` pool. Texts hold no
double quote or backslash, so JSON is built by formatting alone.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from importlib import resources
from typing import Any

import numpy as np
from numpy.typing import NDArray

from memory_console.store.validate import TITLE_LENGTH
from memory_console.timeutil import MONTHS, WEEKDAYS

OWNERS = (
    "alice",
    "bob",
    "carol",
    "dmitri",
    "priya",
    "support-bot",
    "coding-assistant",
    "travel-planner",
    "home-assistant",
    "sales-copilot",
)
OWNER_WEIGHTS = (0.14, 0.11, 0.09, 0.08, 0.09, 0.14, 0.13, 0.07, 0.08, 0.07)

TOPIC_WEIGHTS = {
    "preferences": 0.22,
    "user_info": 0.16,
    "contacts": 0.14,
    "projects": 0.20,
    "decisions": 0.12,
    "general": 0.16,
}
TYPE_WEIGHTS = {
    "preferences": {"semantic": 0.72, "procedural": 0.16, "episodic": 0.12},
    "user_info": {"semantic": 0.84, "episodic": 0.16},
    "contacts": {"semantic": 0.80, "episodic": 0.12, "procedural": 0.08},
    "projects": {"semantic": 0.40, "episodic": 0.30, "procedural": 0.30},
    "decisions": {"semantic": 0.55, "episodic": 0.35, "procedural": 0.10},
    "general": {"semantic": 0.42, "episodic": 0.38, "procedural": 0.20},
}


@dataclass(frozen=True)
class Template:
    """One kind of fact: patterns for its content, keywords and the user's own words."""

    topic: str
    memory_type: str
    content: str
    keywords: str  # 2 to 5 space-separated keyword patterns
    queries: tuple[str, ...]  # retrieval questions that found it (plain text)
    said: str | None = None  # what the user said, without the final full stop
    weight: float = 1.0
    health: bool = False
    family: str | None = None  # paraphrases of one fact (near-duplicates) share a family


@dataclass(frozen=True)
class Showcase:
    """A fixed memory of the showcase owner, with its traits, present in every demo store."""

    template: Template
    source: str
    tier: str = "long_term"
    decay_policy: str = "standard"
    protected: bool = False
    archived: bool = False
    accesses: int = 3
    age_days: float = 200.0
    user_requested: bool = False


IMPORT_SOURCES = ("mem0", "openmemory", "letta", "mcp-memory")
SHOWCASE_OWNER = "alice"
# Showcase traits a texts.json entry may leave out.
SHOWCASE_DEFAULTS: dict[str, Any] = {
    "tier": "long_term",
    "decay_policy": "standard",
    "protected": False,
    "archived": False,
    "accesses": 3,
    "age_days": 200.0,
    "user_requested": False,
}


def template_of(entry: dict[str, Any]) -> Template:
    """A Template from its texts.json entry (weight, health, said and family optional)."""
    return Template(
        topic=entry["topic"],
        memory_type=entry["type"],
        content=entry["content"],
        keywords=entry["keywords"],
        queries=tuple(entry["queries"]),
        said=entry.get("said"),
        weight=entry.get("weight", 1.0),
        health=entry.get("health", False),
        family=entry.get("family"),
    )


def showcase_of(entry: dict[str, Any]) -> Showcase:
    """A Showcase from its texts.json entry: a template, its source and its traits."""
    traits = {name: entry.get(name, default) for name, default in SHOWCASE_DEFAULTS.items()}
    return Showcase(template_of(entry), entry["source"], **traits)


def calendar_pools() -> dict[str, tuple[tuple[str, ...], ...]]:
    """The month, workday and weekday pools: (the name as written, its keyword)."""
    return {
        "month": tuple((name.capitalize(), name) for name in MONTHS),
        "weekday": tuple((name.capitalize(), name) for name in WEEKDAYS[:5]),
        "day": tuple((name.capitalize(), name) for name in WEEKDAYS),
    }


_TEXTS: dict[str, Any] = json.loads(
    resources.files("memory_console.demo").joinpath("texts.json").read_text(encoding="utf-8")
)
# Slot pools: (text, keyword, *extra fields).
POOLS: dict[str, tuple[tuple[str, ...], ...]] = {
    **{name: tuple(tuple(value) for value in pool) for name, pool in _TEXTS["pools"].items()},
    **calendar_pools(),
}
TEMPLATES: tuple[Template, ...] = tuple(template_of(entry) for entry in _TEXTS["templates"])
# Paraphrases of one fact (each variant adds at most one keyword to its family's core): with
# vectors, consolidation merges those whose wording its guards let through.
FAMILIES: tuple[Template, ...] = tuple(template_of(entry) for entry in _TEXTS["families"])
# Clearly fake credentials and identifiers, for the sensitive scan to find.
SECRETS: tuple[Template, ...] = tuple(template_of(entry) for entry in _TEXTS["secrets"])
# Fixed memories of the showcase owner, with their traits, present in every demo store.
SHOWCASE: tuple[Showcase, ...] = tuple(showcase_of(entry) for entry in _TEXTS["showcase"])
GENERIC_QUERIES: tuple[str, ...] = tuple(_TEXTS["generic_queries"])
DIRECTIVE_OPENERS: tuple[str, ...] = tuple(_TEXTS["directive_openers"])
CHAT_OPENERS: tuple[str, ...] = tuple(_TEXTS["chat_openers"])

SLOT = re.compile(r"\{([a-z_]+?)(\d?)(?:\.(kw|\d))?\}")


@dataclass(frozen=True)
class Compiled:
    """A template as positional format strings over its slot values, in slot order."""

    template: Template
    pool_names: tuple[str, ...]
    pools: tuple[tuple[tuple[str, ...], ...], ...]
    repeats: tuple[int | None, ...]  # per slot: the earlier slot drawing from the same pool
    content: str
    keywords_json: str
    said: str | None


def compile_template(template: Template) -> Compiled:
    """Turn `{city}`, `{city.kw}`, `{city.2}` into `{0[0]}`, `{0[1]}`, `{0[2]}`."""
    order: list[str] = []

    def replace(match: re.Match[str]) -> str:
        name = match.group(1) + match.group(2)
        if name not in order:
            order.append(name)
        field = {None: "0", "kw": "1"}.get(match.group(3), match.group(3))
        return f"{{{order.index(name)}[{field}]}}"

    content = SLOT.sub(replace, template.content)
    words = [SLOT.sub(replace, word) for word in template.keywords.split()]
    said = SLOT.sub(replace, template.said) if template.said else None
    names = [name.rstrip("0123456789") for name in order]
    repeats = tuple(
        names.index(name) if names.index(name) < i else None for i, name in enumerate(names)
    )
    return Compiled(
        template=template,
        pool_names=tuple(names),
        pools=tuple(POOLS[name] for name in names),
        repeats=repeats,
        content=content,
        keywords_json="[" + ", ".join(f'"{word}"' for word in words) + "]",
        said=said,
    )


def object_array(items: Any) -> NDArray[np.object_]:
    """A 1-D object array of `items` (tuples stay whole)."""
    array = np.empty(len(items), dtype=object)
    array[:] = list(items)
    return array


def title_of(text: str) -> str:
    """validate.default_title for single-spaced, one-line text with no `!` or `?` stops."""
    cut = text.find(". ")
    if 0 < cut < TITLE_LENGTH:
        return text[: cut + 1].rstrip()
    return text if len(text) <= TITLE_LENGTH else text[: TITLE_LENGTH - 1].rstrip() + "…"


class Catalog:
    """Every template (showcase, bulk, families, secrets) by template id, ready to render."""

    def __init__(self) -> None:
        showcase = [item.template for item in SHOWCASE]
        templates = [*showcase, *TEMPLATES, *FAMILIES, *SECRETS]
        self.compiled = [compile_template(t) for t in templates]
        bounds = np.cumsum([0, len(showcase), len(TEMPLATES), len(FAMILIES), len(SECRETS)])
        self.showcase, self.regular, _, self.secrets = (
            np.arange(bounds[i], bounds[i + 1]) for i in range(4)
        )
        firsts = [i for i, t in enumerate(FAMILIES) if i == 0 or t.family != FAMILIES[i - 1].family]
        self.families = np.array(firsts, dtype=np.int64) + bounds[2]
        self.topic = object_array([t.topic for t in templates])
        self.memory_type = object_array([t.memory_type for t in templates])
        self.health = np.array([t.health for t in templates])
        self.max_slots = max(len(c.pools) for c in self.compiled)
        self.pools = {name: object_array(pool) for name, pool in POOLS.items()}
        queries = [t.queries for t in templates]
        self.query_start = np.cumsum([0] + [len(q) for q in queries[:-1]])
        self.query_count = np.array([len(q) for q in queries])
        self.queries = object_array([q for group in queries for q in group])

    def regular_weights(self) -> NDArray[np.float64]:
        """Chance of each bulk template: topic share x type share x its weight in the pair."""
        totals: dict[tuple[str, str], float] = {}
        for t in TEMPLATES:
            totals[(t.topic, t.memory_type)] = totals.get((t.topic, t.memory_type), 0.0) + t.weight
        weights = np.array(
            [
                TOPIC_WEIGHTS[t.topic]
                * TYPE_WEIGHTS[t.topic][t.memory_type]
                * t.weight
                / totals[(t.topic, t.memory_type)]
                for t in TEMPLATES
            ]
        )
        return weights / weights.sum()

    def render(
        self, templates: NDArray[np.int64], draws: NDArray[np.int64], quoted: NDArray[np.bool_]
    ) -> tuple[list[str], list[str], list[str], NDArray[np.object_]]:
        """Titles, contents, keyword JSON and (where `quoted`) the user's words, one template
        at a time."""
        size = len(templates)
        body = np.empty(size, dtype=object)
        keywords = np.empty(size, dtype=object)
        said = np.full(size, None, dtype=object)
        order = np.argsort(templates, kind="stable")
        cuts = np.flatnonzero(np.diff(templates[order])) + 1
        for rows in np.split(order, cuts) if size else []:
            compiled = self.compiled[templates[rows[0]]]
            values = self.slot_values(compiled, draws[rows])
            body[rows] = object_array([compiled.content.format(*v) for v in values])
            keywords[rows] = object_array([compiled.keywords_json.format(*v) for v in values])
            if compiled.said is not None:
                wanted = np.flatnonzero(quoted[rows])
                said[rows[wanted]] = object_array(
                    [compiled.said.format(*values[i]) for i in wanted.tolist()]
                )
        contents = body.tolist()
        return [title_of(text) for text in contents], contents, keywords.tolist(), said

    def slot_values(self, compiled: Compiled, draws: NDArray[np.int64]) -> list[tuple[Any, ...]]:
        """Each row's slot values (a tuple per slot); a pool drawn twice never repeats a value."""
        if not compiled.pools:
            return [()] * len(draws)
        chosen: list[NDArray[np.int64]] = []
        columns = []
        for j, name in enumerate(compiled.pool_names):
            pool = self.pools[name]
            index = draws[:, j] % len(pool)
            earlier = compiled.repeats[j]
            if earlier is not None:
                index = (chosen[earlier] + 1 + draws[:, j] % (len(pool) - 1)) % len(pool)
            chosen.append(index)
            columns.append(pool[index])
        return list(zip(*columns, strict=True))
