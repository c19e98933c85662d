"""The store's own settings: named keys with types and defaults, shared by every process.

A key is either a scalar setting (`decay_enabled`, `decay_policy`, `update_threshold`,
`forget_threshold`), a pass interval (`interval.<pass>`) or a policy/pass parameter
(`<set>.<parameter>`, e.g. `relevance.floor`, `periodic.boost`, `consolidate.min_cosine`).
Adding a setting is adding a SettingSpec to SCALARS or a field to a parameter class. Values
are stored as JSON, so what is read back has the type it was set with; durations are seconds.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memory_console.policies.params import PolicyParams

DEFAULT = "default"
STORE = "store"
HOUR = 3600.0
DAY = 24 * HOUR
POLICY_NAMES = ("relevance", "periodic", "exponential")


@dataclass(frozen=True)
class SettingSpec:
    """One setting: its kind (bool, choice, number, duration), default and allowed range."""

    key: str
    kind: str
    default: Any
    help: str
    low: float | None = None
    high: float | None = None
    choices: tuple[str, ...] = ()

    def parse(self, value: Any) -> Any:
        """The value as stored, from text (`config set`) or a JSON value; ValueError if bad."""
        if self.kind == "bool":
            return parse_bool(self.key, value)
        if self.kind == "choice":
            text = str(value).strip()
            if text not in self.choices:
                raise ValueError(f"{self.key} must be one of {', '.join(self.choices)}")
            return text
        number = parse_duration(self.key, value) if self.kind == "duration" else value
        number = parse_number(self.key, number, whole=self.kind == "int")
        if (self.low is not None and number < self.low) or (
            self.high is not None and number > self.high
        ):
            low = "-inf" if self.low is None else f"{self.low:g}"
            high = "inf" if self.high is None else f"{self.high:g}"
            raise ValueError(f"{self.key}={number:g} must be in [{low}, {high}]")
        return number

    def show(self, value: Any) -> str:
        """The value as the operator reads it (durations as 6h, 7d)."""
        if self.kind == "bool":
            return "true" if value else "false"
        if self.kind == "duration":
            return duration_text(float(value))
        if isinstance(value, float):
            return f"{value:g}"
        return str(value)


def parse_bool(key: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"{key} must be true or false, got {value!r}")


def parse_number(key: str, value: Any, *, whole: bool = False) -> float | int:
    if isinstance(value, bool):
        raise ValueError(f"{key} must be a number, not {value!r}")
    try:
        number = float(str(value).strip()) if isinstance(value, str) else float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{key} must be a number, got {value!r}") from None
    if not math.isfinite(number):
        raise ValueError(f"{key} must be finite, got {value!r}")
    if whole:
        if number != int(number):
            raise ValueError(f"{key} must be a whole number, got {value!r}")
        return int(number)
    return number


UNITS = {"s": 1.0, "m": 60.0, "h": HOUR, "d": DAY, "w": 7 * DAY}


def parse_duration(key: str, value: Any) -> Any:
    """`90m`, `6h`, `7d`, `1w` in seconds; a bare number is seconds already."""
    if isinstance(value, str):
        found = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([smhdw])\s*", value.lower())
        if found:
            return float(found.group(1)) * UNITS[found.group(2)]
    return value


def duration_text(seconds: float) -> str:
    for unit in ("w", "d", "h", "m"):
        size = UNITS[unit]
        if seconds >= size and seconds % size == 0:
            return f"{seconds / size:g}{unit}"
    return f"{seconds:g}s"


def interval(name: str, default: float, why: str) -> SettingSpec:
    return SettingSpec(
        f"interval.{name}",
        "duration",
        default,
        f"maintain --due runs {name} when this long has passed since its last applied run"
        + (f" ({why})" if why else ""),
        low=0.0,
    )


# The cosine at which a routing document's UPDATE or DELETE without an id matches a memory:
# chosen on labelled update pairs (tests/data/update_pairs.jsonl) for precision first, since a
# wrong match overwrites a fact. The bank TTLs are the expire_banks pass's own parameters
# (`expire_banks.working_ttl_hours`, `expire_banks.short_term_ttl_hours`).
UPDATE_THRESHOLD = 0.55
# The cosine at which the agent API's forget(phrase) archives the memory a phrase means (the
# best one, and only when it leads the next by a margin): chosen on labelled forget phrases
# (tests/data/forget_phrases.jsonl, benchmarks/forget_threshold.py) for precision first, since
# a wrong archive loses a memory the user did not ask about.
FORGET_THRESHOLD = 0.49
# recall's default floor: a memory less similar to the query than this, and not holding every
# word of it, is left out rather than put into an agent's prompt (MiniLM: unrelated ~0-0.15;
# operator search keeps such hits and calls them "unrelated" instead).
RECALL_MIN_COSINE = 0.2
# A text this close to a memory of its owner repeats it (remember reinforces instead of storing):
# the consolidation threshold it used to share, kept when consolidation went to 0.85 with guards.
DUPLICATE_COSINE = 0.92
# The consolidate pass's default: members of a group are at least this similar (with guards).
CONSOLIDATE_MIN_COSINE = 0.85
# Every cosine above is a decision the embedder's kernels must not move: calibration.py refuses
# a kernel that decides any pair of its texts otherwise than the model as shipped.

# The scalar settings and the pass schedule (the maintenance pass table: expire-banks hourly,
# expire and quota daily, decay every 6 hours with its cleanup, consolidation weekly).
SCALARS: tuple[SettingSpec, ...] = (
    SettingSpec(
        "decay_enabled",
        "bool",
        True,
        "whether decay passes change anything (false: they plan nothing, and say so)",
    ),
    SettingSpec(
        "decay_policy",
        "choice",
        "relevance",
        "the decay policy every process uses: reinforcement on access, forecasts, passes",
        choices=POLICY_NAMES,
    ),
    SettingSpec(
        "update_threshold",
        "number",
        UPDATE_THRESHOLD,
        "an UPDATE or DELETE without an id matches the most similar memory at or above this",
        low=0.0,
        high=1.0,
    ),
    SettingSpec(
        "forget_threshold",
        "number",
        FORGET_THRESHOLD,
        "the agent's forget(phrase) archives the best memory at or above this cosine",
        low=0.0,
        high=1.0,
    ),
    interval("expire-banks", HOUR, ""),
    interval("expire", DAY, ""),
    interval("consolidate", 7 * DAY, ""),
    interval("decay", 6 * HOUR, ""),
    interval("cleanup", 6 * HOUR, "with decay"),
    interval("quota", DAY, ""),
)
SCALAR_SPECS: dict[str, SettingSpec] = {spec.key: spec for spec in SCALARS}


def parameter_specs(classes: Mapping[str, type[PolicyParams]]) -> dict[str, SettingSpec]:
    """`<set>.<parameter>` keys for every field of the given parameter classes."""
    specs: dict[str, SettingSpec] = {}
    for set_name, kind in classes.items():
        for f in fields(kind):
            whole = type(f.default) is int
            specs[f"{set_name}.{f.name}"] = SettingSpec(
                f"{set_name}.{f.name}",
                "int" if whole else "number",
                f.default,
                f"{set_name} parameter {f.name}",
            )
    return specs


def default_classes() -> Mapping[str, type[PolicyParams]]:
    from memory_console.policies import PARAMETER_SETS

    return PARAMETER_SETS


def all_specs(
    classes: Mapping[str, type[PolicyParams]] | None = None,
) -> dict[str, SettingSpec]:
    """Every known key: the scalars, then the parameters of `classes` (default: the
    policies' sets; the maintenance registry adds the passes' own)."""
    return {**SCALAR_SPECS, **parameter_specs(classes or default_classes())}


def check_value(
    key: str, value: Any, classes: Mapping[str, type[PolicyParams]] | None = None
) -> Any:
    """The parsed value for `key`, or ValueError naming the problem in one line."""
    specs = all_specs(classes)
    spec = specs.get(key)
    if spec is None:
        raise ValueError(f"unknown setting {key!r}; `memory-console config` lists them")
    parsed = spec.parse(value)
    if "." in key and not key.startswith("interval."):
        set_name, name = key.split(".", 1)
        kind = (classes or default_classes())[set_name]
        kind.from_dict({name: parsed})  # the parameter class's own range checks
    return parsed


@dataclass(frozen=True)
class SettingChange:
    """One recorded change of a setting: who, when, from what to what (None: the default)."""

    key: str
    before: Any
    after: Any
    at: float
    actor: str


@dataclass(frozen=True)
class StoreSettings:
    """The store's settings as of one read: stored values over the built-in defaults."""

    stored: Mapping[str, Any] = field(default_factory=dict)

    def get(self, key: str) -> Any:
        """A setting's value (stored, else its default); KeyError for an unknown scalar key
        without a stored value."""
        if key in self.stored:
            return self.stored[key]
        if key in SCALAR_SPECS:
            return SCALAR_SPECS[key].default
        raise KeyError(key)

    def source(self, key: str) -> str:
        return STORE if key in self.stored else DEFAULT

    @property
    def decay_enabled(self) -> bool:
        return bool(self.get("decay_enabled"))

    @property
    def decay_policy(self) -> str:
        return str(self.get("decay_policy"))

    @property
    def update_threshold(self) -> float:
        return float(self.get("update_threshold"))

    @property
    def forget_threshold(self) -> float:
        return float(self.get("forget_threshold"))

    @property
    def consolidation_threshold(self) -> float:
        return float(self.stored.get("consolidate.min_cosine", CONSOLIDATE_MIN_COSINE))

    def interval(self, pass_name: str) -> float | None:
        """Seconds between due runs of a pass; None for a pass without an interval."""
        key = f"interval.{pass_name}"
        return float(self.get(key)) if key in self.stored or key in SCALAR_SPECS else None

    def overrides(self, set_name: str) -> dict[str, Any]:
        """The stored parameters of one set (`relevance`, `consolidate` ...), by name."""
        prefix = f"{set_name}."
        return {k[len(prefix) :]: v for k, v in self.stored.items() if k.startswith(prefix)}

    def params(self, set_name: str | None = None) -> PolicyParams:
        """A policy's parameters (default: the store's policy) with the stored values."""
        from memory_console.policies import params_for

        name = set_name or self.decay_policy
        return params_for(name, self.overrides(name))

    def rows(
        self, classes: Mapping[str, type[PolicyParams]] | None = None
    ) -> list[tuple[SettingSpec, Any, str]]:
        """Every known setting with its value and where it came from (store or default)."""
        return [
            (spec, self.stored.get(key, spec.default), self.source(key))
            for key, spec in all_specs(classes).items()
        ]


def dumps(value: Any) -> str:
    return json.dumps(value)


def loads(text: str) -> Any:
    return json.loads(text)
