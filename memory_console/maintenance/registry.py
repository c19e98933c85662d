"""The pass registry: every module in maintenance/passes/ that defines `PASS` is a pass.

A pass is a module with a function `plan_<name>(frame, params, now) -> PassResult` and a
`PASS = PassSpec(...)` naming it, its place in the canonical order, the rows and columns it
reads and the parameter sets it uses. Adding a pass (consolidate, say) is adding a module:
nothing here changes, and its parameter class (if any) becomes CLI options and is recorded
with every run.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

from memory_console.maintenance.params import POLICY, MaintenanceParams
from memory_console.policies import PARAMETER_SETS, PolicyParams
from memory_console.store.bulk import DUE_ROWS, Rows
from memory_console.store.settings import StoreSettings

if TYPE_CHECKING:
    from memory_console.maintenance.changes import PassResult
    from memory_console.maintenance.frame import Frame

PlanFunction = Callable[["Frame", MaintenanceParams, float], "PassResult"]
# A SQL condition (named parameters) that every row a pass may change or count satisfies.
Narrowing = Callable[[MaintenanceParams, float], "tuple[str, dict[str, Any]] | None"]
SCOPE_ORDER = ("decaying", "maintainable", "active")

# `maintain` runs these, in this order, as one plan (those that are registered); `maintain
# --due` runs each of them whose interval.<pass> setting has passed since its last applied run.
# expire-banks first: a working or short-term memory past its TTL is archived before the
# other passes score, merge or count it.
MAINTAIN = ("expire-banks", "expire", "consolidate", "decay", "cleanup", "quota")
# Passes that change nothing while the store's decay_enabled setting is false.
DECAY_DISABLED = ("decay", "cleanup")
# `decay` runs these.
DECAY = ("decay", "cleanup")


@dataclass(frozen=True)
class PassSpec:
    """How the planner runs a pass.

    order: its place when several run in one plan (lower first, whatever order they were
    asked in). scope: the rows it needs loaded: "decaying" (active, unprotected, standard or
    aggressive, not semantic), "maintainable" (active, unprotected, decay_policy not none) or
    "active" (all active rows, e.g. to count quotas); a callable picks one from the params.
    columns: extra frame columns ("importance", "owner"). param_sets: the parameter sets it
    reads ("policy" for the chosen decay policy). params_class: its own parameter set, if
    any, registered under its `name` class attribute. narrow: optionally, a SQL condition
    that every row the pass may change or count satisfies (a superset is fine); a plan loads
    only those rows when all its passes narrow (parameter names must be unique per pass).
    closes: a pass whose rows a later pass can make (protect-facts: promote makes facts) runs
    once more after the plan's last pass, over what the others proposed, so that one run
    reaches what a second run at the same `now` would.
    """

    name: str
    plan: PlanFunction
    summary: str
    order: int
    scope: str | Callable[[MaintenanceParams], str] = "maintainable"
    columns: tuple[str, ...] = ()
    param_sets: tuple[str, ...] = ()
    params_class: type[PolicyParams] | None = None
    narrow: Narrowing | None = None
    closes: bool = False

    def scope_for(self, params: MaintenanceParams) -> str:
        return self.scope(params) if callable(self.scope) else self.scope


@cache
def registered_passes() -> dict[str, PassSpec]:
    """Every registered pass by name, in canonical order."""
    package = importlib.import_module("memory_console.maintenance.passes")
    found: list[PassSpec] = []
    for module in pkgutil.iter_modules(package.__path__):
        spec = getattr(importlib.import_module(f"{package.__name__}.{module.name}"), "PASS", None)
        if isinstance(spec, PassSpec):
            found.append(spec)
    return {spec.name: spec for spec in sorted(found, key=lambda s: (s.order, s.name))}


def get(name: str) -> PassSpec:
    known = registered_passes()
    if name not in known:
        raise ValueError(f"unknown pass {name!r}; known: {', '.join(known)}")
    return known[name]


def resolve(names: Iterable[str]) -> tuple[str, ...]:
    """Pass names checked and put in canonical order, duplicates dropped."""
    wanted = {get(name.strip()).name for name in names if name.strip()}
    if not wanted:
        raise ValueError("no passes given")
    return tuple(name for name in registered_passes() if name in wanted)


def maintain_passes() -> tuple[str, ...]:
    known = registered_passes()
    return tuple(name for name in MAINTAIN if name in known)


def parameter_classes() -> dict[str, type[PolicyParams]]:
    """The policies' parameter sets plus those the registered passes bring."""
    classes: dict[str, type[PolicyParams]] = dict(PARAMETER_SETS)
    for spec in registered_passes().values():
        if spec.params_class is not None:
            classes[spec.params_class.name] = spec.params_class
    return classes


def used_sets(names: Sequence[str]) -> tuple[str, ...]:
    """The parameter sets the passes read ("policy" standing for the chosen decay policy)."""
    used: list[str] = []
    for name in names:
        spec = get(name)
        used.extend(spec.param_sets)
        if spec.params_class is not None:
            used.append(spec.params_class.name)
    return tuple(dict.fromkeys(used or [POLICY]))


def build_params(
    names: Sequence[str],
    policy: str | None = None,
    overrides: dict[str, object] | None = None,
    settings: StoreSettings | None = None,
) -> MaintenanceParams:
    """Parameters for running `names`: one run's `policy` and `overrides` (flags) over the
    store's `settings` over the built-in defaults, each override routed to the sets the
    passes use."""
    classes = parameter_classes()
    chosen = policy or (settings.decay_policy if settings is not None else "relevance")
    stored = {name: settings.overrides(name) for name in classes} if settings else None
    return MaintenanceParams.build(
        chosen, overrides, used=used_sets(names), classes=classes, stored=stored
    )


def rows_of(
    names: Sequence[str], params: MaintenanceParams, now: float, *, due: bool = False
) -> Rows:
    """The rows a plan of `names` loads: the widest scope the passes need, narrowed when
    every pass says which rows it can touch, and with `due` to the memories due by `now`
    (maintenance/due.py decides when the due index serves a plan)."""
    specs = [get(name) for name in names]
    scope = max((s.scope_for(params) for s in specs), key=SCOPE_ORDER.index, default="decaying")
    narrowings = [s.narrow(params, now) if s.narrow else None for s in specs]
    parts: list[str] = []
    values: dict[str, Any] = {}
    if narrowings and all(n is not None for n in narrowings):
        conditions = [c for c, _ in narrowings if c]  # type: ignore[misc]
        values = {k: v for _, bound in narrowings for k, v in bound.items()}  # type: ignore[misc]
        if conditions:
            parts.append(" OR ".join(f"({c})" for c in conditions))
    if due:
        parts.append(DUE_ROWS)
        values["due_now"] = now
    if not parts:
        return Rows(scope)
    return Rows(scope, " AND ".join(f"({part})" for part in parts), values)


def columns_of(names: Sequence[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(column for name in names for column in get(name).columns))
