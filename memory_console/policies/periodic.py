"""Periodic policy: a flat weekly percentage decay, archiving memories that fall below 0.10."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from numpy.typing import ArrayLike

from memory_console.policies.common import (
    SECONDS_PER_DAY,
    BoolArray,
    DecayResult,
    FloatArray,
    IntArray,
    as_float,
    decaying,
    elapsed_periods,
    first_period_at_or_below,
)
from memory_console.policies.params import PolicyParams


@dataclass(frozen=True)
class PeriodicParams(PolicyParams):
    """Periodic policy: rate per period, archive threshold, boost on access
    (docs/ARCHITECTURE.md, "Periodic decay")."""

    name: ClassVar[str] = "periodic"

    rate: float = 0.95
    period_days: float = 7.0
    archive_below: float = 0.10
    boost: float = 0.2
    cap: float = 1.0

    def _validate(self) -> None:
        self._check("rate", 0.0, 1.0, low_open=True)
        self._check("period_days", 0.0, low_open=True)
        self._check("archive_below", 0.0, 1.0, high_open=True)
        self._check("boost", 0.0, 1.0)
        self._check("cap", 0.0, 1.0, low_open=True)


DEFAULT_PERIODIC = PeriodicParams()


def periodic_anchor(last_accessed_at: ArrayLike, created_at: ArrayLike) -> FloatArray:
    """max(last_accessed_at, created_at), ignoring a missing last access."""
    return np.fmax(as_float(last_accessed_at), as_float(created_at))


def periodic_periods(
    last_accessed_at: ArrayLike,
    created_at: ArrayLike,
    now: float,
    p: PeriodicParams = DEFAULT_PERIODIC,
) -> IntArray:
    """Whole periods since the later of last access and creation."""
    return elapsed_periods(periodic_anchor(last_accessed_at, created_at), now, p.period_days)


def periodic_decay(
    base_confidence: ArrayLike,
    last_accessed_at: ArrayLike,
    created_at: ArrayLike,
    now: float,
    p: PeriodicParams = DEFAULT_PERIODIC,
) -> DecayResult:
    """base * rate**periods, from base_confidence so repeated runs are idempotent."""
    base = as_float(base_confidence)
    periods = periodic_periods(last_accessed_at, created_at, now, p)
    confidence = base * p.rate**periods
    return DecayResult(confidence=confidence, periods=periods, rate=np.full(base.shape, p.rate))


def periodic_eligible(
    status: ArrayLike,
    decay_policy: ArrayLike,
    is_protected: ArrayLike,
    periods: ArrayLike | None = None,
) -> BoolArray:
    """Rows periodic decay may change: active, standard/aggressive, unprotected (any type).

    Pass `periods` to also require at least one elapsed period.
    """
    mask = decaying(status, decay_policy, is_protected)
    if periods is not None:
        mask &= np.asarray(periods) >= 1
    return mask


def periodic_archive(confidence: ArrayLike, p: PeriodicParams = DEFAULT_PERIODIC) -> BoolArray:
    """Rows whose (decayed) confidence is below archive_below: status -> archived."""
    return as_float(confidence) < p.archive_below


def periodic_archive_time(
    base_confidence: ArrayLike,
    last_accessed_at: ArrayLike,
    created_at: ArrayLike,
    p: PeriodicParams = DEFAULT_PERIODIC,
) -> FloatArray:
    """Unix time of the period boundary where confidence first drops below archive_below.

    NaN where it never does (rate 1 with a base above the threshold).
    """
    k = first_period_at_or_below(base_confidence, p.rate, p.archive_below, inclusive=False)
    anchor = periodic_anchor(last_accessed_at, created_at)
    return anchor + k * p.period_days * SECONDS_PER_DAY
