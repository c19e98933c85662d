"""Forecasts: one memory's future under its policy, plus the array forecasts re-exported."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TypeVar

import numpy as np
from numpy.typing import NDArray

from memory_console.policies.common import (
    SECONDS_PER_DAY,
    BoolArray,
    FloatArray,
    IntArray,
    is_aggressive,
    maintainable,
)
from memory_console.policies.exponential import ExponentialParams, prune_time, weak_time
from memory_console.policies.forecast_arrays import (
    AnyParams,
    confidence_at,
    decays_mask,
    forecast_periodic,
    forecast_relevance,
    forecast_times,
    project_tiers,
)
from memory_console.policies.periodic import (
    PeriodicParams,
    periodic_archive_time,
    periodic_eligible,
)
from memory_console.policies.relevance import (
    RelevanceParams,
    relevance_eligible,
    relevance_floor_time,
)

__all__ = [
    "AnyParams",
    "MemoryForecast",
    "confidence_at",
    "decays_mask",
    "forecast_memory",
    "forecast_periodic",
    "forecast_relevance",
    "forecast_times",
    "project_tiers",
]

P = TypeVar("P", RelevanceParams, PeriodicParams, ExponentialParams)


@dataclass(frozen=True)
class MemoryForecast:
    """One memory's future under its policy, if it is not accessed again.

    points: (unix time, value) at now and each next period boundary; value is confidence,
    or the effective score under the exponential policy (`measure` says which).
    floor_date: when the value first reaches the policy's threshold (relevance floor, periodic
    archive level, exponential min_effective); None when the memory never decays there.
    action_date/action: when and what the policy's pass would do (flag, archive); None if never.
    """

    policy: str
    measure: str
    threshold: float
    points: list[tuple[float, float]]
    floor_date: float | None
    action_date: float | None
    action: str | None

    def text(self, digits: int = 2) -> str:
        """The values joined by arrows, e.g. `0.78 -> 0.74 -> 0.70`."""
        return " -> ".join(f"{value:.{digits}f}" for _, value in self.points)


@dataclass(frozen=True)
class _One:
    """One memory's fields as length-1 arrays, so the vectorised functions serve it too."""

    confidence: FloatArray
    base: FloatArray
    retrievals: IntArray
    last: FloatArray
    created: FloatArray
    memory_type: NDArray[np.str_]
    decay_policy: NDArray[np.str_]
    protected: BoolArray
    status: NDArray[np.str_]


def forecast_memory(
    *,
    confidence: float,
    base_confidence: float,
    retrieval_count: int,
    last_accessed_at: float | None,
    created_at: float,
    memory_type: str,
    decay_policy: str,
    is_protected: bool,
    now: float,
    status: str = "active",
    importance: float | None = None,
    policy: str = "relevance",
    params: AnyParams | None = None,
    periods_ahead: int = 6,
) -> MemoryForecast:
    """Forecast for one memory from its fields (times in unix seconds, None = never accessed).

    `params` defaults to the policy's defaults; `importance` is needed by exponential only.
    """
    one = _One(
        confidence=np.array([confidence], dtype=np.float64),
        base=np.array([base_confidence], dtype=np.float64),
        retrievals=np.array([retrieval_count], dtype=np.int64),
        last=np.array([np.nan if last_accessed_at is None else last_accessed_at], dtype=float),
        created=np.array([created_at], dtype=np.float64),
        memory_type=np.array([memory_type]),
        decay_policy=np.array([decay_policy]),
        protected=np.array([is_protected], dtype=np.bool_),
        status=np.array([status]),
    )
    if policy == "relevance":
        return _forecast_relevance_one(one, now, periods_ahead, _params(params, RelevanceParams))
    if policy == "periodic":
        return _forecast_periodic_one(one, now, periods_ahead, _params(params, PeriodicParams))
    if policy == "exponential":
        if importance is None:
            raise ValueError("the exponential forecast needs the memory's importance")
        ep = _params(params, ExponentialParams)
        return _forecast_exponential_one(one, importance, now, periods_ahead, ep)
    raise ValueError(f"unknown policy {policy!r}; known: relevance, periodic, exponential")


def _forecast_relevance_one(
    one: _One, now: float, periods_ahead: int, p: RelevanceParams
) -> MemoryForecast:
    decays = relevance_eligible(one.status, one.decay_policy, one.protected, one.memory_type)
    aggressive = is_aggressive(one.decay_policy)
    values = forecast_relevance(
        one.base,
        one.retrievals,
        one.last,
        one.created,
        aggressive,
        now,
        periods_ahead,
        p,
        decays=decays,
        confidence=one.confidence,
    )
    floor_date = action_date = None
    if decays[0]:
        floor = relevance_floor_time(one.base, one.retrievals, one.last, one.created, aggressive, p)
        floor_date = _optional_time(floor[0])
    if floor_date is not None:
        action_date = max(floor_date, float(one.created[0]) + p.cleanup_age_days * SECONDS_PER_DAY)
    return MemoryForecast(
        policy="relevance",
        measure="confidence",
        threshold=p.floor,
        points=_points(forecast_times(one.last, one.created, now, periods_ahead, p), values),
        floor_date=floor_date,
        action_date=action_date,
        action=None if action_date is None else "flagged for deletion",
    )


def _forecast_periodic_one(
    one: _One, now: float, periods_ahead: int, p: PeriodicParams
) -> MemoryForecast:
    decays = periodic_eligible(one.status, one.decay_policy, one.protected)
    values = forecast_periodic(
        one.base,
        one.last,
        one.created,
        now,
        periods_ahead,
        p,
        decays=decays,
        confidence=one.confidence,
    )
    floor_date = None
    if decays[0]:
        floor_date = _optional_time(periodic_archive_time(one.base, one.last, one.created, p)[0])
    return MemoryForecast(
        policy="periodic",
        measure="confidence",
        threshold=p.archive_below,
        points=_points(forecast_times(one.last, one.created, now, periods_ahead, p), values),
        floor_date=floor_date,
        action_date=floor_date,
        action=None if floor_date is None else "archived",
    )


def _forecast_exponential_one(
    one: _One, importance: float, now: float, periods_ahead: int, p: ExponentialParams
) -> MemoryForecast:
    times = forecast_times(one.last, one.created, now, periods_ahead, p)
    ages = np.maximum(times - one.created[:, None], 0.0) / SECONDS_PER_DAY
    values = importance * np.exp(-p.decay_lambda * ages)
    floor_date = action_date = None
    if maintainable(one.status, one.decay_policy, one.protected)[0]:
        floor_date = _optional_time(weak_time([importance], one.created, p)[0])
        action_date = _optional_time(prune_time([importance], one.created, p)[0])
    return MemoryForecast(
        policy="exponential",
        measure="effective score",
        threshold=p.min_effective,
        points=_points(times, values),
        floor_date=floor_date,
        action_date=action_date,
        action=None if action_date is None else "archived",
    )


def _optional_time(value: float) -> float | None:
    return None if math.isnan(value) else float(value)


def _params(params: AnyParams | None, kind: type[P]) -> P:
    """`params`, or the defaults of `kind`; a parameter set of another policy is an error."""
    if params is None:
        return kind()
    if not isinstance(params, kind):
        raise ValueError(f"{kind.name} forecast needs {kind.__name__}, got {type(params).__name__}")
    return params


def _points(times: FloatArray, values: FloatArray) -> list[tuple[float, float]]:
    return [(float(t), float(v)) for t, v in zip(times[0], values[0], strict=True)]
