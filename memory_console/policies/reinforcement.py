"""Reinforcement on access: a capped boost from the as-of-now confidence, never lowering it."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from memory_console.policies.common import FloatArray, as_float, as_str, is_aggressive
from memory_console.policies.forecast_arrays import AnyParams, confidence_at, decays_mask
from memory_console.policies.periodic import DEFAULT_PERIODIC, PeriodicParams
from memory_console.policies.relevance import DEFAULT_RELEVANCE

# memory_type -> (boost, cap) (docs/ARCHITECTURE.md, "Reinforcement on access"); used by the
# relevance and exponential policies.
REINFORCEMENT: dict[str, tuple[float, float]] = {
    "semantic": (0.05, 0.99),
    "procedural": (0.04, 0.97),
    "episodic": (0.03, 0.95),
}


def reinforcement_terms(memory_type: ArrayLike) -> tuple[FloatArray, FloatArray]:
    """(boost, cap) arrays for each memory_type; unknown types raise ValueError."""
    types = as_str(memory_type)
    unknown = np.setdiff1d(types, list(REINFORCEMENT))
    if unknown.size:
        raise ValueError(
            f"unknown memory_type(s): {', '.join(unknown.tolist())}; "
            f"known: {', '.join(REINFORCEMENT)}"
        )
    conditions = [types == name for name in REINFORCEMENT]
    boost = np.select(conditions, [b for b, _ in REINFORCEMENT.values()], default=0.0)
    cap = np.select(conditions, [c for _, c in REINFORCEMENT.values()], default=0.0)
    return boost.astype(np.float64), cap.astype(np.float64)


def boosted(confidence: ArrayLike, boost: ArrayLike, cap: ArrayLike) -> FloatArray:
    """max(c, min(cap, c + boost)): a boost up to the cap that never lowers confidence."""
    c = as_float(confidence)
    return np.maximum(c, np.minimum(as_float(cap), c + as_float(boost)))


def reinforce(
    confidence: ArrayLike,
    memory_type: ArrayLike,
    *,
    policy: str = "relevance",
    periodic: PeriodicParams = DEFAULT_PERIODIC,
) -> FloatArray:
    """Confidence after one access; the new value is also the new base_confidence.

    Under the periodic policy every type gets `periodic.boost` up to `periodic.cap`
    (+0.2, cap 1.0); otherwise the REINFORCEMENT table applies.
    """
    if policy == "periodic":
        return boosted(confidence, periodic.boost, periodic.cap)
    if policy not in ("relevance", "exponential"):
        raise ValueError(f"unknown policy {policy!r}; known: relevance, periodic, exponential")
    boost, cap = reinforcement_terms(memory_type)
    return boosted(confidence, boost, cap)


def reinforce_one(
    confidence: float,
    memory_type: str,
    *,
    policy: str = "relevance",
    periodic: PeriodicParams = DEFAULT_PERIODIC,
) -> float:
    """`reinforce` for a single memory, as a Python float."""
    return float(reinforce([confidence], [memory_type], policy=policy, periodic=periodic)[0])


def reinforce_from_now(
    *,
    confidence: ArrayLike,
    base_confidence: ArrayLike,
    retrieval_count: ArrayLike,
    last_accessed_at: ArrayLike,
    created_at: ArrayLike,
    memory_type: ArrayLike,
    decay_policy: ArrayLike,
    is_protected: ArrayLike,
    status: ArrayLike,
    now: float,
    params: AnyParams = DEFAULT_RELEVANCE,
) -> tuple[FloatArray, FloatArray]:
    """(as of now, after the access) for each memory accessed at `now` under the policy of
    `params` (docs/ARCHITECTURE.md, "Reinforcement on access").

    The boost starts from the confidence the memory has decayed to by `now`, computed from
    base_confidence as the forecast computes it (whether or not a decay run wrote it), so an
    access never undoes the fading since the last one; the result never lies below that value.
    """
    decays = decays_mask(status, decay_policy, is_protected, memory_type, params)
    current = confidence_at(
        now,
        confidence,
        base_confidence,
        retrieval_count,
        last_accessed_at,
        created_at,
        is_aggressive(decay_policy),
        decays,
        params,
    )
    periodic = params if isinstance(params, PeriodicParams) else DEFAULT_PERIODIC
    return current, reinforce(current, memory_type, policy=params.name, periodic=periodic)
