"""Parameters of a maintenance plan: the chosen decay policy and every parameter set by name."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any, TypeVar

from memory_console.policies import PARAMETER_SETS, POLICIES, PolicyParams

P = TypeVar("P", bound=PolicyParams)
POLICY = "policy"  # in a pass's parameter sets: "the decay policy chosen for this plan"


def default_sets(
    classes: Mapping[str, type[PolicyParams]] | None = None,
) -> dict[str, PolicyParams]:
    return {name: kind() for name, kind in (classes or PARAMETER_SETS).items()}


@dataclass(frozen=True)
class MaintenanceParams:
    """The decay policy of a plan and every parameter set (defaults unless overridden).

    A run records all of them (`to_dict`), so it can be explained and repeated later.
    """

    policy: str = "relevance"
    sets: Mapping[str, PolicyParams] = field(default_factory=default_sets)

    def __post_init__(self) -> None:
        if self.policy not in POLICIES:
            raise ValueError(f"unknown policy {self.policy!r}; known: {', '.join(POLICIES)}")
        missing = [name for name in POLICIES if name not in self.sets]
        if missing:
            raise ValueError(f"missing parameter sets: {', '.join(missing)}")

    @property
    def decay(self) -> PolicyParams:
        """The parameters of the chosen decay policy."""
        return self.sets[self.policy]

    def of(self, kind: type[P]) -> P:
        """The parameter set of class `kind` (e.g. RelevanceParams)."""
        value = self.sets[kind.name]
        if not isinstance(value, kind):
            raise TypeError(f"parameter set {kind.name} is a {type(value).__name__}")
        return value

    def to_dict(self) -> dict[str, Any]:
        return {POLICY: self.policy, **{name: p.to_dict() for name, p in self.sets.items()}}

    @classmethod
    def from_dict(
        cls, data: Mapping[str, Any], classes: Mapping[str, type[PolicyParams]] | None = None
    ) -> MaintenanceParams:
        """Parameters as recorded by a run (unknown sets are ignored, missing ones default)."""
        known = classes or PARAMETER_SETS
        sets = {name: kind.from_dict(data.get(name) or {}) for name, kind in known.items()}
        return cls(policy=str(data.get(POLICY, "relevance")), sets=sets)

    @classmethod
    def build(
        cls,
        policy: str = "relevance",
        overrides: Mapping[str, Any] | None = None,
        *,
        used: Iterable[str] = (POLICY,),
        classes: Mapping[str, type[PolicyParams]] | None = None,
        stored: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> MaintenanceParams:
        """Defaults with `overrides` given by parameter name (as on the command line).

        A name goes to the chosen policy's set when it has one, otherwise to every set in
        `used` (the sets the plan's passes read) that has it; a name no used set knows is
        refused with a ValueError, so a typo or a parameter of another policy never passes
        silently. Invalid values raise ValueError too. `stored` holds the store's settings
        by set (`{"relevance": {"floor": 0.2}}`): they replace the defaults, and `overrides`
        (one run's flags) replace them.
        """
        known = dict(classes or PARAMETER_SETS)
        if policy not in POLICIES:
            raise ValueError(f"unknown policy {policy!r}; known: {', '.join(POLICIES)}")
        used_sets = [policy if name == POLICY else name for name in used]
        per_set: dict[str, dict[str, Any]] = {
            name: dict((stored or {}).get(name) or {}) for name in known
        }
        for name, value in (overrides or {}).items():
            targets = [s for s in used_sets if s in known and has_field(known[s], name)]
            if policy in targets:
                targets = [policy]
            if not targets:
                owners = [s for s, kind in known.items() if has_field(kind, name)]
                where = f"a parameter of {', '.join(owners)}" if owners else "not a parameter"
                raise ValueError(
                    f"--{name.replace('_', '-')} is {where}; this run uses "
                    f"{', '.join(dict.fromkeys(s for s in used_sets if s in known)) or 'none'}"
                )
            for target in targets:
                per_set[target][name] = value
        sets = {name: kind.from_dict(per_set[name]) for name, kind in known.items()}
        return cls(policy=policy, sets=sets)


def has_field(kind: type[PolicyParams], name: str) -> bool:
    return any(f.name == name for f in fields(kind))


def parameter_options(
    classes: Mapping[str, type[PolicyParams]],
) -> dict[str, list[tuple[str, Any]]]:
    """Every parameter name with the (set, default) pairs that define it, for CLI options."""
    options: dict[str, list[tuple[str, Any]]] = {}
    for set_name, kind in classes.items():
        for f in fields(kind):
            options.setdefault(f.name, []).append((set_name, f.default))
    return options
