"""Policy registry: names to parameter classes, and parameters built from overrides."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from memory_console.policies.exponential import ExponentialParams
from memory_console.policies.importance import ImportanceParams
from memory_console.policies.params import PolicyParams
from memory_console.policies.periodic import PeriodicParams
from memory_console.policies.relevance import RelevanceParams

# The decay policies an operator chooses between (`--policy`).
POLICIES: dict[str, type[PolicyParams]] = {
    "relevance": RelevanceParams,
    "periodic": PeriodicParams,
    "exponential": ExponentialParams,
}

# Every parameter set a run may record: the policies plus the expire/quota scoring.
PARAMETER_SETS: dict[str, type[PolicyParams]] = {**POLICIES, "importance": ImportanceParams}


def params_for(name: str, overrides: Mapping[str, Any] | None = None) -> PolicyParams:
    """Defaults of the named parameter set with `overrides` applied and validated."""
    try:
        kind = PARAMETER_SETS[name]
    except KeyError:
        raise ValueError(f"unknown policy {name!r}; known: {', '.join(PARAMETER_SETS)}") from None
    return kind.from_dict(overrides or {})
