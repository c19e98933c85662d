"""Shared array helpers: time arithmetic, eligibility masks and the decay result type."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
BoolArray = NDArray[np.bool_]

SECONDS_PER_DAY = 86400.0
MONTH_DAYS = 30.0
DECAYING_POLICIES = ("standard", "aggressive")


@dataclass(frozen=True)
class DecayResult:
    """Per-row outcome of a decay computation: new confidence, elapsed periods, rate used."""

    confidence: FloatArray
    periods: IntArray
    rate: FloatArray


def as_float(values: ArrayLike) -> FloatArray:
    """A float64 array view or copy of `values` (NaN stays NaN)."""
    return np.asarray(values, dtype=np.float64)


def as_bool(values: ArrayLike) -> BoolArray:
    """A bool array of `values`."""
    return np.asarray(values, dtype=np.bool_)


def as_str(values: ArrayLike) -> NDArray[np.str_]:
    """A unicode array of `values` (lists and object arrays accepted)."""
    return np.asarray(values).astype(np.str_)


def elapsed_days(since: ArrayLike, now: float) -> FloatArray:
    """Days from `since` to `now`, never negative; NaN where `since` is NaN."""
    return np.maximum(float(now) - as_float(since), 0.0) / SECONDS_PER_DAY


def access_anchor(last_accessed_at: ArrayLike, created_at: ArrayLike) -> FloatArray:
    """Last access time, or creation time for memories never accessed."""
    last = as_float(last_accessed_at)
    created = as_float(created_at)
    return np.where(np.isnan(last), created, last)


def elapsed_periods(anchor: ArrayLike, now: float, period_days: float) -> IntArray:
    """Whole periods of `period_days` from `anchor` to `now`; 0 for NaN or future anchors."""
    periods = np.floor(elapsed_days(anchor, now) / period_days)
    return np.nan_to_num(periods, nan=0.0).astype(np.int64)


def period_boundaries(
    anchor: ArrayLike, now: float, period_days: float, periods_ahead: int
) -> FloatArray:
    """Times [n, periods_ahead + 1]: `now`, then each next period boundary after it."""
    anchor_arr = as_float(anchor)
    current = elapsed_periods(anchor_arr, now, period_days)
    steps = np.arange(1, periods_ahead + 1)
    future = anchor_arr[:, None] + (current[:, None] + steps[None, :]) * (
        period_days * SECONDS_PER_DAY
    )
    head = np.full((anchor_arr.shape[0], 1), float(now))
    return np.concatenate([head, future], axis=1)


def maintainable(status: ArrayLike, decay_policy: ArrayLike, is_protected: ArrayLike) -> BoolArray:
    """Rows any pass may change: active, not protected, decay_policy not none."""
    return (as_str(status) == "active") & ~as_bool(is_protected) & (as_str(decay_policy) != "none")


def decaying(status: ArrayLike, decay_policy: ArrayLike, is_protected: ArrayLike) -> BoolArray:
    """Rows a decay pass may change: maintainable with decay_policy standard or aggressive."""
    return maintainable(status, decay_policy, is_protected) & np.isin(
        as_str(decay_policy), DECAYING_POLICIES
    )


def is_aggressive(decay_policy: ArrayLike) -> BoolArray:
    """True where decay_policy is aggressive (faster relevance rates)."""
    return as_str(decay_policy) == "aggressive"


def first_period_at_or_below(
    base: ArrayLike, rate: ArrayLike, threshold: ArrayLike, *, inclusive: bool
) -> FloatArray:
    """Smallest k >= 0 with base * rate**k at or below (or strictly below) `threshold` (one
    number, or one per row).

    NaN where that never happens (rate 1, or a threshold a positive base cannot reach).
    A log gives the estimate; one step each way absorbs its rounding error.
    """
    base_arr, rate_arr, threshold = np.broadcast_arrays(
        as_float(base), as_float(rate), as_float(threshold)
    )

    def reached(values: FloatArray) -> BoolArray:
        return values <= threshold if inclusive else values < threshold

    already = reached(base_arr)
    never = ~already & ((rate_arr >= 1.0) | (threshold <= 0.0))
    with np.errstate(divide="ignore", invalid="ignore"):
        guess = np.ceil(np.log(threshold / base_arr) / np.log(rate_arr))
    guess = np.where(np.isfinite(guess) & ~never & ~already, np.maximum(guess, 0.0), 0.0)
    guess = np.where((guess > 0) & reached(base_arr * rate_arr ** (guess - 1)), guess - 1, guess)
    guess = np.where(~already & ~never & ~reached(base_arr * rate_arr**guess), guess + 1, guess)
    return np.where(never, np.nan, guess)
