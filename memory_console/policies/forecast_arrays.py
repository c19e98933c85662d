"""Array forecasts: confidence at coming period boundaries if unaccessed; tier projections."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
from numpy.typing import ArrayLike

from memory_console.policies.common import (
    MONTH_DAYS,
    SECONDS_PER_DAY,
    BoolArray,
    FloatArray,
    IntArray,
    access_anchor,
    as_bool,
    as_float,
    period_boundaries,
)
from memory_console.policies.confidence import tier_counts
from memory_console.policies.exponential import ExponentialParams
from memory_console.policies.periodic import (
    DEFAULT_PERIODIC,
    PeriodicParams,
    periodic_anchor,
    periodic_decay,
    periodic_eligible,
)
from memory_console.policies.relevance import (
    DEFAULT_RELEVANCE,
    RelevanceParams,
    decayed_confidence,
    relevance_decay,
    relevance_eligible,
)

AnyParams = RelevanceParams | PeriodicParams | ExponentialParams


def _held_constant(
    forecast: FloatArray, decays: ArrayLike | None, confidence: ArrayLike | None
) -> FloatArray:
    """Rows that never decay keep their current confidence in every column; the others
    never rise above it (decay only lowers: a run evaluated ahead of now stored a value
    below the one decay from the base gives now, and the forecast starts where the stored
    value and confidences_now are, one "now" everywhere)."""
    if confidence is not None:
        forecast = np.minimum(forecast, as_float(confidence)[:, None])
    if decays is None:
        return forecast
    still = ~as_bool(decays)
    keep = forecast[:, 0] if confidence is None else as_float(confidence)
    return np.where(still[:, None], keep[:, None], forecast)


def forecast_relevance(
    base_confidence: ArrayLike,
    retrieval_count: ArrayLike,
    last_accessed_at: ArrayLike,
    created_at: ArrayLike,
    aggressive: ArrayLike,
    now: float,
    periods_ahead: int = 6,
    p: RelevanceParams = DEFAULT_RELEVANCE,
    *,
    decays: ArrayLike | None = None,
    confidence: ArrayLike | None = None,
) -> FloatArray:
    """Confidence [n, periods_ahead + 1] at `now` and each next 30-day boundary, unaccessed.

    Rows where `decays` is False (protected, none, semantic, inactive) keep `confidence`
    (or their confidence at `now` when it is not given). Times: `forecast_times`.
    """
    current = relevance_decay(
        base_confidence, retrieval_count, last_accessed_at, created_at, aggressive, now, p
    )
    periods = current.periods[:, None] + np.arange(periods_ahead + 1)[None, :]
    base = as_float(base_confidence)[:, None]
    forecast = decayed_confidence(base, current.rate[:, None], periods, p.floor)
    return _held_constant(forecast, decays, confidence)


def forecast_periodic(
    base_confidence: ArrayLike,
    last_accessed_at: ArrayLike,
    created_at: ArrayLike,
    now: float,
    periods_ahead: int = 6,
    p: PeriodicParams = DEFAULT_PERIODIC,
    *,
    decays: ArrayLike | None = None,
    confidence: ArrayLike | None = None,
) -> FloatArray:
    """Confidence [n, periods_ahead + 1] at `now` and each next 7-day boundary, unaccessed."""
    current = periodic_decay(base_confidence, last_accessed_at, created_at, now, p)
    periods = current.periods[:, None] + np.arange(periods_ahead + 1)[None, :]
    forecast = as_float(base_confidence)[:, None] * p.rate**periods
    return _held_constant(forecast, decays, confidence)


def forecast_times(
    last_accessed_at: ArrayLike,
    created_at: ArrayLike,
    now: float,
    periods_ahead: int = 6,
    p: AnyParams = DEFAULT_RELEVANCE,
) -> FloatArray:
    """Unix times [n, periods_ahead + 1] matching the forecast columns of the policy `p`.

    Exponential has no periods: its columns are 30-day months from `now`.
    """
    if isinstance(p, RelevanceParams):
        anchor = access_anchor(last_accessed_at, created_at)
        return period_boundaries(anchor, now, p.period_days, periods_ahead)
    if isinstance(p, PeriodicParams):
        anchor = periodic_anchor(last_accessed_at, created_at)
        return period_boundaries(anchor, now, p.period_days, periods_ahead)
    months = float(now) + np.arange(periods_ahead + 1) * MONTH_DAYS * SECONDS_PER_DAY
    return np.broadcast_to(months, (as_float(created_at).shape[0], periods_ahead + 1)).copy()


def confidence_at(
    at: float,
    confidence: ArrayLike,
    base_confidence: ArrayLike,
    retrieval_count: ArrayLike,
    last_accessed_at: ArrayLike,
    created_at: ArrayLike,
    aggressive: ArrayLike,
    decays: ArrayLike,
    p: AnyParams = DEFAULT_RELEVANCE,
) -> FloatArray:
    """Every row's confidence at time `at` if unaccessed; non-decaying rows keep `confidence`."""
    if isinstance(p, RelevanceParams):
        future = relevance_decay(
            base_confidence, retrieval_count, last_accessed_at, created_at, aggressive, at, p
        ).confidence
    elif isinstance(p, PeriodicParams):
        future = periodic_decay(base_confidence, last_accessed_at, created_at, at, p).confidence
    else:
        return as_float(confidence).copy()
    return np.where(as_bool(decays), future, as_float(confidence))


def project_tiers(
    confidence: ArrayLike,
    base_confidence: ArrayLike,
    retrieval_count: ArrayLike,
    last_accessed_at: ArrayLike,
    created_at: ArrayLike,
    aggressive: ArrayLike,
    decays: ArrayLike,
    now: float,
    months: Iterable[int] = (1, 3, 6, 12),
    p: AnyParams = DEFAULT_RELEVANCE,
) -> dict[int, IntArray]:
    """Tier counts (TIER_NAMES order) m months (30 days) from now if nothing is accessed.

    Rows a pass would archive or flag are still counted, by their confidence.
    """
    return {
        int(m): tier_counts(
            confidence_at(
                float(now) + m * MONTH_DAYS * SECONDS_PER_DAY,
                confidence,
                base_confidence,
                retrieval_count,
                last_accessed_at,
                created_at,
                aggressive,
                decays,
                p,
            )
        )
        for m in months
    }


def decays_mask(
    status: ArrayLike,
    decay_policy: ArrayLike,
    is_protected: ArrayLike,
    memory_type: ArrayLike,
    p: AnyParams = DEFAULT_RELEVANCE,
) -> BoolArray:
    """Rows whose confidence changes over time under the policy of `p` (for forecasts)."""
    if isinstance(p, RelevanceParams):
        return relevance_eligible(status, decay_policy, is_protected, memory_type)
    if isinstance(p, PeriodicParams):
        return periodic_eligible(status, decay_policy, is_protected)
    return np.zeros(np.shape(is_protected), dtype=np.bool_)
