"""The demo store: realistic, deterministic memories with their histories, bulk-loaded fast.

Confidences are kept to four decimals and times to whole seconds, so that the JSON of a
million events is assembled from precomputed texts instead of formatting floats.
"""

from __future__ import annotations

import errno
import sqlite3
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from memory_console.demo import content
from memory_console.demo.content import Catalog, object_array
from memory_console.policies.reinforcement import REINFORCEMENT, boosted
from memory_console.policies.relevance import DEFAULT_RELEVANCE, decayed_confidence, relevance_rate
from memory_console.store import bulk_load, postgres
from memory_console.store.bulk_load import (
    check_target,
    create_temporary,
    move_into_place,
    sync_file,
)
from memory_console.store.errors import StoreError
from memory_console.store.records import MEMORY_COLUMNS
from memory_console.store.validate import DEFAULTS
from memory_console.store.vocab import TIERS

Progress = Callable[[str, float], None]
FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
BoolArray = NDArray[np.bool_]
ObjectArray = NDArray[np.object_]

DAY = 86400
YEAR_DAYS = 365.0
SCALE = 10_000  # confidences in 1/10,000ths
DECIMALS = object_array([repr(i / SCALE) for i in range(SCALE + 1)])
COUNTS = object_array([str(i) for i in range(100)])
SOURCES = ("user_directive", "background_scan", "session_review", "import", "manual")
SOURCE_WEIGHTS = (0.20, 0.35, 0.25, 0.12, 0.08)
DIRECTIVE, IMPORT, MANUAL = (SOURCES.index(s) for s in ("user_directive", "import", "manual"))
CREATED_ACTOR = object_array(("api", "api", "api", "import", "cli"))
PERSON_ACTOR = object_array(("cli", "tui"))
POLICIES = ("standard", "aggressive", "none")
KINDS = ("created", "protected", "accessed", "archived")
DUPLICATE_SHARE = 0.02
SECRET_SHARE = 0.003
GROUP_SIZES = (2, 3, 4)
GROUP_SIZE_WEIGHTS = (0.25, 0.5, 0.25)
# Where each stage starts in the overall fraction reported to `progress`.
STAGES = {
    "planning": 0.0,
    "memories": 0.05,
    "events": 0.35,
    "indexes": 0.70,
    "finishing": 0.90,
    "done": 1.0,
}


@dataclass(frozen=True)
class DemoReport:
    """What build_demo made: the store's path (or URL), its row counts and how long it took."""

    path: Path | str
    memories: int
    events: int
    seconds: float


def build_demo(
    path: Path | str,
    *,
    count: int = 2000,
    seed: int = 7,
    now: float | None = None,
    progress: Progress | None = None,
) -> DemoReport:
    """Create a new demo store of `count` memories at `path`, deterministic in (count, seed, now).

    It is built in a temporary file beside `path` and renamed into place only when complete;
    on PostgreSQL (`path` a URL), in one transaction in a new or empty database.
    `progress(stage, fraction)` receives the stage's name and the overall fraction done (0..1).
    """
    started = time.monotonic()
    if count < 0:
        raise StoreError(f"demo: count must be >= 0, not {count}")
    url = str(path) if postgres.is_url(path) else None
    target = Path(path) if url is None else Path()
    if url is None:
        check_target(target)
    report = progress or (lambda stage, fraction: None)
    report("planning", STAGES["planning"])
    catalog = Catalog()
    rng = np.random.default_rng(seed)
    plan = plan_memories(catalog, count, time.time() if now is None else float(now), rng)
    log = simulate_accesses(catalog, plan, rng)
    events = plan_events(plan, log)
    if url is not None:
        # One transaction in the database: nothing of a failed build is kept.
        postgres.load_new_postgres(
            url, *demo_rows(catalog, plan, log, events), stage_report(report)
        )
        report("done", STAGES["done"])
        seconds = time.monotonic() - started
        return DemoReport(postgres.shown_url(url), count, events.size, seconds)
    temporary = create_temporary(target)
    try:
        load(temporary, catalog, plan, log, events, report)
        sync_file(temporary)
        move_into_place(temporary, target)
    except BaseException as error:
        for suffix in ("", "-wal", "-shm", "-journal"):
            Path(f"{temporary}{suffix}").unlink(missing_ok=True)
        if isinstance(error, sqlite3.OperationalError | OSError):
            full = "full" in str(error) or getattr(error, "errno", None) == errno.ENOSPC
            reason = "the disk is full" if full else str(error)
            raise StoreError(f"{target}: cannot build the demo store: {reason}") from error
        raise
    report("done", STAGES["done"])
    return DemoReport(target, count, events.size, time.monotonic() - started)


# -- the file ------------------------------------------------------------------------------


def load(
    path: Path, catalog: Catalog, plan: Plan, log: AccessLog, events: EventPlan, report: Progress
) -> None:
    """Bulk-load the planned memories and events into the new file at `path` (see
    store.bulk_load), with a side file beside it for the events."""
    side = create_temporary(path)
    try:
        bulk_load.load_new_store(
            path, side, *demo_rows(catalog, plan, log, events), stage_report(report)
        )
    finally:
        side.unlink(missing_ok=True)


def demo_rows(
    catalog: Catalog, plan: Plan, log: AccessLog, events: EventPlan
) -> tuple[bulk_load.Rows, bulk_load.Rows]:
    """The planned memories and events, made a chunk at a time as the loader asks."""
    return (
        bulk_load.Rows(plan.size, lambda lo, hi: memory_rows(catalog, plan, log, lo, hi)),
        bulk_load.Rows(events.size, lambda lo, hi: event_rows(catalog, plan, log, events, lo, hi)),
    )


def stage_report(report: Progress) -> Progress:
    """The loader's progress (a stage, the fraction of it done) as the overall fraction."""
    return lambda stage, within: report(stage, stage_fraction(stage, within))


def stage_fraction(stage: str, within: float) -> float:
    """The overall fraction done at `within` (0..1) of `stage`."""
    names = list(STAGES)
    end = STAGES[names[names.index(stage) + 1]]
    return STAGES[stage] + (end - STAGES[stage]) * within


# -- planning ------------------------------------------------------------------------------


@dataclass
class Plan:
    """Every memory's drawn traits by memory index (id - 1); times in whole seconds."""

    size: int
    template: IntArray
    slots: IntArray  # raw draws, reduced modulo each pool's size when rendered
    owner: IntArray
    source: IntArray
    tier: IntArray
    policy: IntArray
    importance: FloatArray
    confidence: IntArray  # initial, in 1/SCALE
    created_at: IntArray
    protected: BoolArray
    archived: BoolArray
    protected_at: IntArray
    archived_at: IntArray
    accesses: IntArray
    access_until: IntArray  # archiving time, or now
    session: BoolArray  # metadata names the chat session
    quoted: BoolArray  # metadata keeps the user's own words
    user_requested: BoolArray
    token: IntArray  # session id, import origin and opener are drawn from it
    person: IntArray  # cli or tui, for protect and archive events


def plan_memories(catalog: Catalog, count: int, now: float, rng: np.random.Generator) -> Plan:
    """Draw every memory's template, slots, owner, traits and times (showcase first)."""
    shown = min(count, len(content.SHOWCASE))
    template, owner, slots = plan_bulk(catalog, count - shown, rng)
    template = np.concatenate([catalog.showcase[:shown], template])
    owner = np.concatenate([np.zeros(shown, np.int64), owner])
    slots = np.concatenate([np.zeros((shown, catalog.max_slots), np.int64), slots])
    ages = np.sort(0.25 + (YEAR_DAYS - 0.25) * (1 - np.sqrt(rng.random(count - shown))))[::-1]
    ages = np.concatenate([[s.age_days for s in content.SHOWCASE[:shown]], ages])
    created = np.floor(now - ages * DAY - rng.uniform(0, 36000, count) * (np.arange(count) < shown))
    source = rng.choice(len(SOURCES), size=count, p=SOURCE_WEIGHTS)
    directive = source == DIRECTIVE
    inferred = np.round(np.clip(rng.normal(0.5, 0.12, count), 0.1, 0.9), 2)
    manual = np.round(rng.uniform(0.6, 0.9, count), 2)
    sure = rng.integers(9500, SCALE + 1, count)
    guessed = rng.integers(50, 91, count) * 100
    tier = draw_tiers(catalog.memory_type[template] == "episodic", rng)
    protected = rng.random(count) < np.where(directive, 0.10, 0.012)
    plan = Plan(
        size=count,
        template=template,
        slots=slots,
        owner=owner,
        source=source,
        tier=tier,
        policy=draw_policies(
            catalog.topic[template] == "user_info", tier == TIERS.index("working"), rng
        ),
        importance=np.select([directive, source == MANUAL], [1.0, manual], inferred),
        confidence=np.where(directive, sure, guessed),
        created_at=created.astype(np.int64),
        protected=protected,
        archived=~protected & (rng.random(count) < 0.03),
        protected_at=(created + rng.integers(60, 3000, count)).astype(np.int64),
        archived_at=(created + (now - created) * rng.uniform(0.4, 0.97, count)).astype(np.int64),
        accesses=draw_access_counts(count, rng),
        access_until=np.zeros(count, np.int64),
        session=rng.random(count) < 0.9,
        quoted=rng.random(count) < 0.8,
        user_requested=catalog.health[template] & (rng.random(count) < 0.5),
        token=rng.integers(0, 2**48, count),
        person=rng.integers(0, 2, count),
    )
    apply_showcase(plan, content.SHOWCASE[:shown])
    plan.access_until = np.where(plan.archived, plan.archived_at, int(now))
    plan.accesses = np.minimum(plan.accesses, access_capacity(plan))
    return plan


def plan_bulk(
    catalog: Catalog, size: int, rng: np.random.Generator
) -> tuple[IntArray, IntArray, IntArray]:
    """Templates, owners and slot draws of the bulk (singles, near-duplicates, secrets),
    in a random order."""
    group_template, group_owner, group_slots = plan_groups(catalog, size, rng)
    grouped = len(group_template)
    secrets = min(size - grouped, round(size * SECRET_SHARE))
    singles = size - grouped - secrets
    template = np.concatenate(
        [
            rng.choice(catalog.regular, size=singles, p=catalog.regular_weights()),
            group_template,
            rng.choice(catalog.secrets, size=secrets),
        ]
    )
    owner = rng.choice(len(content.OWNERS), size=size, p=content.OWNER_WEIGHTS)
    owner[singles : singles + grouped] = group_owner
    slots = rng.integers(0, 2**31, size=(size, catalog.max_slots))
    slots[singles : singles + grouped] = group_slots
    order = rng.permutation(size)
    return template[order], owner[order], slots[order]


def plan_groups(
    catalog: Catalog, size: int, rng: np.random.Generator
) -> tuple[IntArray, IntArray, IntArray]:
    """Groups of 2-4 paraphrases of one fact: same owner, topic and slot values."""
    wanted = round(size * DUPLICATE_SHARE)
    sizes = rng.choice(GROUP_SIZES, size=wanted // 2 + 1, p=GROUP_SIZE_WEIGHTS)
    sizes = sizes[np.cumsum(sizes) <= wanted]
    family = rng.integers(0, len(catalog.families), len(sizes))
    owner = rng.choice(len(content.OWNERS), size=len(sizes), p=content.OWNER_WEIGHTS)
    slots = rng.integers(0, 2**31, size=(len(sizes), catalog.max_slots))
    variants = np.argsort(rng.random((len(sizes), max(GROUP_SIZES))), axis=1)
    group = np.repeat(np.arange(len(sizes)), sizes)
    member = np.arange(len(group)) - (np.cumsum(sizes) - sizes)[group]
    return catalog.families[family[group]] + variants[group, member], owner[group], slots[group]


def draw_tiers(episodic: BoolArray, rng: np.random.Generator) -> IntArray:
    """Episodic memories mostly in the episodic tier, the others mostly long_term."""
    working, short_term, long_term, episodic_tier = (
        TIERS.index(name) for name in ("working", "short_term", "long_term", "episodic")
    )
    roll = rng.random(len(episodic))
    usual = np.select([roll < 0.07, roll < 0.18], [working, short_term], long_term)
    lived = np.select([roll < 0.08, roll < 0.20], [working, short_term], episodic_tier)
    return np.where(episodic, lived, usual)


def draw_policies(core: BoolArray, working: BoolArray, rng: np.random.Generator) -> IntArray:
    """Decay policy none for some core user facts, aggressive for some working memory."""
    roll = rng.random(len(core))
    never = roll < np.where(core, 0.08, 0.008)
    fast = ~never & (roll > 1 - np.where(working, 0.35, 0.03))
    return np.select([never, fast], [POLICIES.index("none"), POLICIES.index("aggressive")], 0)


def draw_access_counts(size: int, rng: np.random.Generator) -> IntArray:
    """Skewed retrieval counts: most 0-2, some 3-8, a few 10-35."""
    roll = rng.random(size)
    few = rng.geometric(0.6, size) - 1
    some = rng.integers(3, 9, size)
    many = rng.integers(10, 36, size)
    return np.select([roll < 0.875, roll < 0.975], [few, some], many).astype(np.int64)


def apply_showcase(plan: Plan, showcase: tuple[content.Showcase, ...]) -> None:
    """Give the showcase memories their fixed traits."""
    for i, item in enumerate(showcase):
        plan.source[i] = SOURCES.index(item.source)
        plan.tier[i] = TIERS.index(item.tier)
        plan.policy[i] = POLICIES.index(item.decay_policy)
        plan.protected[i] = item.protected
        plan.archived[i] = item.archived
        plan.accesses[i] = item.accesses
        plan.user_requested[i] = item.user_requested
        plan.session[i] = plan.quoted[i] = item.source != "manual"
        directive = item.source == "user_directive"
        plan.importance[i] = 1.0 if directive else 0.6
        plan.confidence[i] = 9700 if directive else 7000


def access_capacity(plan: Plan) -> IntArray:
    """At most four accesses a day between an hour after creation and archiving (or now)."""
    window = np.maximum(plan.access_until - plan.created_at - 3600, 0)
    return window * 4 // DAY


@dataclass
class AccessLog:
    """Every access, grouped by memory and in time order within it, with its confidences."""

    memory: IntArray
    at: IntArray
    rank: IntArray  # the memory's retrieval_count before this access
    before: IntArray  # confidence in 1/SCALE, decayed since the previous access
    after: IntArray  # confidence in 1/SCALE, reinforced
    query: IntArray
    keyword_rank: IntArray  # 0: found by the semantic search only
    cosine: IntArray  # in hundredths
    fused: IntArray  # in 1/SCALE
    confidence: IntArray  # per memory, after its last access (or initial)
    last_at: IntArray  # per memory, -1 if never accessed


def simulate_accesses(catalog: Catalog, plan: Plan, rng: np.random.Generator) -> AccessLog:
    """Replay each memory's accesses under the relevance policy, one access rank at a time.

    Before an access, a memory decay may touch (not semantic, not protected, policy standard
    or aggressive) loses confidence per whole 30-day period since its previous access or its
    creation; the access then reinforces it by type. The last value is its confidence.
    """
    memory = np.repeat(np.arange(plan.size), plan.accesses)
    start = plan.created_at[memory] + 3600
    span = plan.access_until[memory] - start
    at = start + np.floor(rng.random(len(memory)) * span).astype(np.int64)
    at = at[np.lexsort((at, memory))]
    rank = np.arange(len(memory)) - (np.cumsum(plan.accesses) - plan.accesses)[memory]
    types = catalog.memory_type[plan.template]
    boost = np.array([REINFORCEMENT[t][0] for t in types])
    cap = np.array([REINFORCEMENT[t][1] for t in types])
    aggressive = plan.policy == POLICIES.index("aggressive")
    decays = (types != "semantic") & ~plan.protected & (plan.policy != POLICIES.index("none"))
    base = plan.confidence.copy()
    last = plan.created_at.copy()
    before = np.empty(len(memory), np.int64)
    after = np.empty(len(memory), np.int64)
    p = DEFAULT_RELEVANCE
    by_rank = np.argsort(rank, kind="stable")
    ends = np.cumsum(np.bincount(rank)) if len(memory) else np.zeros(0, np.int64)
    for k, end in enumerate(ends.tolist()):
        rows = by_rank[(ends[k - 1] if k else 0) : end]
        owner = memory[rows]
        periods = (at[rows] - last[owner]) // int(p.period_days * DAY)
        rate = relevance_rate(np.full(len(rows), k), aggressive[owner], p)
        decayed = quantize(decayed_confidence(base[owner] / SCALE, rate, periods, p.floor))
        before[rows] = np.where(decays[owner], decayed, base[owner])
        after[rows] = quantize(boosted(before[rows] / SCALE, boost[owner], cap[owner]))
        base[owner] = after[rows]
        last[owner] = at[rows]
    return AccessLog(
        memory=memory,
        at=at,
        rank=rank,
        before=before,
        after=after,
        confidence=base,
        last_at=np.where(plan.accesses > 0, last, -1),
        **draw_scores(catalog, plan.template[memory], rng),
    )


def quantize(values: FloatArray) -> IntArray:
    """Confidences in 1/SCALE (four decimals)."""
    return np.rint(values * SCALE).astype(np.int64)


def draw_scores(catalog: Catalog, template: IntArray, rng: np.random.Generator) -> dict[str, Any]:
    """Each access's query and score breakdown: keyword rank, cosine, fused (RRF, k = 60)."""
    size = len(template)
    semantic_rank = np.minimum(rng.geometric(0.35, size), 20)
    keyword_rank = np.where(rng.random(size) < 0.15, 0, np.minimum(rng.geometric(0.3, size), 20))
    noise = rng.normal(0, 4, size)
    fused = 1 / (60 + semantic_rank) + np.where(keyword_rank > 0, 1 / (60 + keyword_rank), 0)
    pick = rng.integers(0, 2**31, size) % catalog.query_count[template]
    return {
        "query": catalog.query_start[template] + pick,
        "keyword_rank": keyword_rank,
        "cosine": np.clip(np.rint(90 - 3 * semantic_rank + noise), 30, 97).astype(np.int64),
        "fused": quantize(fused),
    }


@dataclass
class EventPlan:
    """Every event in time order: its memory, time, kind and the row of its kind."""

    size: int
    memory: IntArray
    at: IntArray
    kind: IntArray
    ref: IntArray  # memory index, or access index for accessed events


def plan_events(plan: Plan, log: AccessLog) -> EventPlan:
    """created, protected, accessed and archived events, sorted by time (stably)."""
    everyone = np.arange(plan.size)
    protected = np.flatnonzero(plan.protected)
    archived = np.flatnonzero(plan.archived)
    memory = np.concatenate([everyone, protected, log.memory, archived])
    at = np.concatenate(
        [plan.created_at, plan.protected_at[protected], log.at, plan.archived_at[archived]]
    )
    sizes = [plan.size, len(protected), len(log.at), len(archived)]
    kind = np.repeat(np.arange(len(KINDS)), sizes)
    ref = np.concatenate([everyone, protected, np.arange(len(log.at)), archived])
    order = np.argsort(at, kind="stable")
    return EventPlan(len(at), memory[order], at[order], kind[order], ref[order])


# -- rows ----------------------------------------------------------------------------------


def memory_rows(
    catalog: Catalog, plan: Plan, log: AccessLog, lo: int, hi: int
) -> Iterator[tuple[Any, ...]]:
    """Rows of the memory table for memory indexes lo..hi (ids lo + 1 ..)."""
    part = slice(lo, min(hi, plan.size))
    size = part.stop - lo
    template = plan.template[part]
    quoted = plan.session[part] & plan.quoted[part] & (plan.source[part] != IMPORT)
    titles, texts, keywords, said = catalog.render(template, plan.slots[part], quoted)
    created = plan.created_at[part]
    updated = np.max(
        [
            created,
            np.where(plan.protected[part], plan.protected_at[part], 0),
            np.where(plan.archived[part], plan.archived_at[part], 0),
        ],
        axis=0,
    )
    confidence = (log.confidence[part] / SCALE).tolist()
    given: dict[str, list[Any]] = {
        "id": list(range(lo + 1, lo + size + 1)),
        "owner": object_array(content.OWNERS)[plan.owner[part]].tolist(),
        "topic": catalog.topic[template].tolist(),
        "tier": object_array(TIERS)[plan.tier[part]].tolist(),
        "memory_type": catalog.memory_type[template].tolist(),
        "title": titles,
        "content": texts,
        "keywords": keywords,
        "source": object_array(SOURCES)[plan.source[part]].tolist(),
        "importance": plan.importance[part].tolist(),
        "confidence": confidence,
        "base_confidence": confidence,
        "retrieval_count": plan.accesses[part].tolist(),
        "created_at": created.astype(np.float64).tolist(),
        "updated_at": updated.astype(np.float64).tolist(),
        "last_accessed_at": [None if t < 0 else float(t) for t in log.last_at[part].tolist()],
        "decay_policy": object_array(POLICIES)[plan.policy[part]].tolist(),
        "is_protected": plan.protected[part].astype(np.int64).tolist(),
        "status": np.where(plan.archived[part], "archived", "active").tolist(),
        "metadata": metadata(plan, part, said),
        "external_id": external_ids(plan, part),
        "revision": (plan.accesses[part] + plan.protected[part] + plan.archived[part]).tolist(),
    }
    # Columns the demo does not fill take the table's default (consolidated_into: none).
    return zip(
        *(given[name] if name in given else [DEFAULTS[name]] * size for name in MEMORY_COLUMNS),
        strict=True,
    )


def metadata(plan: Plan, part: slice, said: ObjectArray) -> list[str]:
    """metadata JSON: where an import came from, or the chat session and the user's words."""
    source = plan.source[part]
    token = plan.token[part]
    meta = np.full(len(source), "{", dtype=object)
    imported = source == IMPORT
    origins = object_array([f'{{"imported_from": "{name}"' for name in content.IMPORT_SOURCES])
    meta[imported] = origins[token[imported] % len(origins)]
    chat = ~imported & (source != MANUAL) & plan.session[part]
    meta[chat] = object_array(
        [f'{{"session_id": "s-{t & 0xFFFFFFFF:08x}"' for t in token[chat].tolist()]
    )
    quoted = chat & np.fromiter((words is not None for words in said), bool, len(said))
    openers = np.where(
        source == DIRECTIVE,
        object_array(content.DIRECTIVE_OPENERS)[(token >> 32) % 4],
        object_array(content.CHAT_OPENERS)[(token >> 32) % 4],
    )
    meta[quoted] += ', "original_message": "' + openers[quoted] + said[quoted] + '."'
    requested = plan.user_requested[part]
    joiner = np.where(meta[requested] == "{", "", ", ").astype(object)
    meta[requested] += joiner + '"user_requested": true'
    return (meta + "}").tolist()


def external_ids(plan: Plan, part: slice) -> list[str | None]:
    """The id an imported memory had in the system it came from."""
    imported = (plan.source[part] == IMPORT).tolist()
    names = content.IMPORT_SOURCES
    return [
        f"{names[t % len(names)]}-{t >> 8:010x}" if flag else None
        for t, flag in zip(plan.token[part].tolist(), imported, strict=True)
    ]


def event_rows(
    catalog: Catalog, plan: Plan, log: AccessLog, events: EventPlan, lo: int, hi: int
) -> Iterator[tuple[Any, ...]]:
    """Rows of the memory_event table lo..hi, in time order."""
    part = slice(lo, min(hi, events.size))
    kind = events.kind[part]
    ref = events.ref[part]
    size = len(kind)
    actor = np.empty(size, dtype=object)
    before = np.full(size, None, dtype=object)
    after = np.empty(size, dtype=object)
    query = np.full(size, None, dtype=object)
    scores = np.full(size, None, dtype=object)
    created, protected, accessed, archived = (kind == k for k in range(len(KINDS)))
    actor[created] = CREATED_ACTOR[plan.source[ref[created]]]
    after[created] = '{"confidence":' + DECIMALS[plan.confidence[ref[created]]]
    after[created] += ',"status":"active"}'
    for mask, field, was, now in (
        (protected, "is_protected", "false", "true"),
        (archived, "status", '"active"', '"archived"'),
    ):
        actor[mask] = PERSON_ACTOR[plan.person[ref[mask]]]
        before[mask] = f'{{"{field}":{was}}}'
        after[mask] = f'{{"{field}":{now}}}'
    access = ref[accessed]
    actor[accessed] = "api"
    before[accessed], after[accessed] = access_json(log, access)
    query[accessed] = catalog.queries[log.query[access]]
    scores[accessed] = score_json(log, access)
    return zip(
        (events.memory[part] + 1).tolist(),
        events.at[part].astype(np.float64).tolist(),
        actor.tolist(),
        object_array(KINDS)[kind].tolist(),
        before.tolist(),
        after.tolist(),
        [None] * size,
        query.tolist(),
        scores.tolist(),
        [None] * size,  # evaluated_at: each event was made at its own time
        strict=True,
    )


def access_json(log: AccessLog, access: IntArray) -> tuple[ObjectArray, ObjectArray]:
    """before/after JSON of accesses, as Store.record_access writes them."""
    rank = log.rank[access]
    at = object_array([f"{t}.0" for t in log.at[access].tolist()])
    previous = object_array([f"{t}.0" for t in log.at[np.maximum(access - 1, 0)].tolist()])
    previous[rank == 0] = "null"
    before = [
        f'{{"confidence":{c},"retrieval_count":{k},"last_accessed_at":{t}}}'
        for c, k, t in zip(DECIMALS[log.before[access]], COUNTS[rank], previous, strict=True)
    ]
    after = [
        f'{{"confidence":{c},"retrieval_count":{k},"last_accessed_at":{t}}}'
        for c, k, t in zip(DECIMALS[log.after[access]], COUNTS[rank + 1], at, strict=True)
    ]
    return object_array(before), object_array(after)


def score_json(log: AccessLog, access: IntArray) -> ObjectArray:
    """The score breakdown of accesses: keyword rank (null if none), cosine, fused."""
    keyword = COUNTS[log.keyword_rank[access]]
    keyword[log.keyword_rank[access] == 0] = "null"
    scores = [
        f'{{"keyword_rank":{k},"cosine":{c},"fused":{f}}}'
        for k, c, f in zip(
            keyword, DECIMALS[log.cosine[access] * 100], DECIMALS[log.fused[access]], strict=True
        )
    ]
    return object_array(scores)
