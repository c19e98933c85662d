"""What the maintenance screen asks for: passes, policy, parameters typed, evaluation time."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields

from memory_console.maintenance import MaintenanceParams, build_params
from memory_console.maintenance.params import POLICY
from memory_console.maintenance.registry import parameter_classes, used_sets
from memory_console.store import StoreSettings
from memory_console.timeutil import DAY, TIME_RANGE, in_range, parse_moment, to_date
from memory_console.tui.formatting import when as when_text

AHEAD = re.compile(r"^\+?\s*(\d+(?:\.\d+)?)\s*([dwmy]?)$")
UNIT_DAYS = {"": 1.0, "d": 1.0, "w": 7.0, "m": 30.0, "y": 365.0}
PRESETS = (
    ("now", "now"),
    ("+30", "in 30 days"),
    ("+90", "in 90 days"),
    ("+180", "in 180 days"),
    ("+365", "in a year"),
)


@dataclass(frozen=True)
class ParamField:
    """One parameter the chosen passes read: where an override goes and its default."""

    name: str
    sets: tuple[str, ...]
    default: int | float

    @property
    def is_int(self) -> bool:
        return type(self.default) is int

    @property
    def default_text(self) -> str:
        return f"{self.default:g}" if not self.is_int else str(self.default)


def param_fields(
    passes: Sequence[str], policy: str, settings: StoreSettings | None = None
) -> list[ParamField]:
    """The parameters of the sets `passes` read under `policy`, each once, routed as
    MaintenanceParams.build routes an override (the policy's own set first). A field's
    default is what applies when it is left empty: the store's setting, else the built-in."""
    classes = parameter_classes()
    used = [policy if name == POLICY else name for name in used_sets(passes)]
    used = [name for name in dict.fromkeys(used) if name in classes]
    found: dict[str, ParamField] = {}
    for set_name in used:
        for item in fields(classes[set_name]):
            if item.name in found:
                continue
            owners = [s for s in used if any(f.name == item.name for f in fields(classes[s]))]
            targets = (policy,) if policy in owners else tuple(owners)
            default = next(f.default for f in fields(classes[targets[0]]) if f.name == item.name)
            if settings is not None:
                default = settings.overrides(targets[0]).get(item.name, default)
            found[item.name] = ParamField(item.name, targets, default)  # type: ignore[arg-type]
    return list(found.values())


def evaluation_time(text: str, now: float) -> float:
    """`now`, `+90` (days), `+12w`, `+3m`, `+1y` or an ISO 8601 date, as unix seconds."""
    value = text.strip().lower()
    if value in ("", "now"):
        return now
    ahead = AHEAD.match(value)
    if not ahead:
        return parse_moment(text)
    moment = now + float(ahead.group(1)) * UNIT_DAYS[ahead.group(2)] * DAY
    if not in_range(moment):
        raise ValueError(f"{text.strip()} from now is outside {TIME_RANGE}")
    return moment


def describe_time(moment: float, now: float) -> str:
    """`now (2026-11-18 11:06 UTC)` or `in 90 days (2027-02-16)`."""
    days = (moment - now) / DAY
    if abs(days) < 1 / 1440:
        return f"now ({when_text(moment)})"
    if days > 0:
        return f"in {days:,.0f} days ({to_date(moment)})"
    return f"{-days:,.0f} days ago ({to_date(moment)})"


@dataclass(frozen=True)
class PlanRequest:
    """A preview to build: checked when made, so a PlanRequest always builds its params."""

    passes: tuple[str, ...]
    policy: str
    overrides: Mapping[str, str] = field(default_factory=dict)
    now: float = 0.0
    real_now: float = 0.0
    settings: StoreSettings | None = None  # the store's, under the fields typed

    def params(self) -> MaintenanceParams:
        """The parameters: the fields typed, over the store's settings, over the defaults
        (ValueError says what is wrong)."""
        return build_params(self.passes, self.policy, dict(self.overrides), self.settings)

    @property
    def when(self) -> str:
        return describe_time(self.now, self.real_now)

    @property
    def simulated(self) -> bool:
        return abs(self.now - self.real_now) >= 60.0
