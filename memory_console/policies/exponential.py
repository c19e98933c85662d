"""Exponential policy: importance fades as exp(-lambda * age); prune by age, score and top N."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from numpy.typing import ArrayLike

from memory_console.policies.common import (
    SECONDS_PER_DAY,
    BoolArray,
    FloatArray,
    as_bool,
    as_float,
    elapsed_days,
)
from memory_console.policies.groups import group_codes, lowest_per_group
from memory_console.policies.params import PolicyParams


@dataclass(frozen=True)
class ExponentialParams(PolicyParams):
    """Exponential policy: decay constant and prune thresholds (docs/ARCHITECTURE.md,
    "Exponential decay and pruning")."""

    name: ClassVar[str] = "exponential"

    decay_lambda: float = 0.01
    max_age_days: float = 30.0
    min_effective: float = 0.3
    prune_to_top_n: int = 100

    def _validate(self) -> None:
        self._check("decay_lambda", 0.0, low_open=True)
        self._check("max_age_days", 0.0, low_open=True)
        self._check("min_effective", 0.0, 1.0)
        self._check("prune_to_top_n", 1)


DEFAULT_EXPONENTIAL = ExponentialParams()


@dataclass(frozen=True)
class PruneBreakdown:
    """Why each row is archived by prune; the three masks are disjoint, checked in this order."""

    effective: FloatArray
    too_old: BoolArray
    too_weak: BoolArray
    beyond_top_n: BoolArray

    @property
    def archive(self) -> BoolArray:
        """All rows prune archives."""
        return self.too_old | self.too_weak | self.beyond_top_n


def decay_factor(
    created_at: ArrayLike, now: float, p: ExponentialParams = DEFAULT_EXPONENTIAL
) -> FloatArray:
    """exp(-lambda * days since creation): 0.368 at 100 days with lambda 0.01."""
    return np.exp(-p.decay_lambda * elapsed_days(created_at, now))


def effective_score(
    importance: ArrayLike,
    created_at: ArrayLike,
    now: float,
    p: ExponentialParams = DEFAULT_EXPONENTIAL,
    similarity: ArrayLike | None = None,
) -> FloatArray:
    """importance * factor, times `similarity` when ranking search results."""
    score = as_float(importance) * decay_factor(created_at, now, p)
    if similarity is not None:
        score = score * as_float(similarity)
    return score


def prune_breakdown(
    owner: ArrayLike,
    importance: ArrayLike,
    created_at: ArrayLike,
    now: float,
    p: ExponentialParams = DEFAULT_EXPONENTIAL,
    evictable: ArrayLike | None = None,
) -> PruneBreakdown:
    """Archive rows older than max_age_days or below min_effective, then all but top N per owner.

    Pass the active rows. Rows not `evictable` (protected, decay_policy none) are never
    archived but still fill top-N places, so an owner keeps at most N where it can.
    """
    effective = effective_score(importance, created_at, now, p)
    movable = np.ones(effective.shape, dtype=np.bool_) if evictable is None else as_bool(evictable)
    too_old = movable & (elapsed_days(created_at, now) > p.max_age_days)
    too_weak = movable & ~too_old & (effective < p.min_effective)
    survivors = ~(too_old | too_weak)
    names, codes = group_codes(owner)
    kept = np.bincount(codes[survivors], minlength=names.shape[0])
    excess = np.maximum(kept - p.prune_to_top_n, 0)
    beyond = lowest_per_group(codes, effective, excess, survivors & movable)
    return PruneBreakdown(
        effective=effective, too_old=too_old, too_weak=too_weak, beyond_top_n=beyond
    )


def prune(
    owner: ArrayLike,
    importance: ArrayLike,
    created_at: ArrayLike,
    now: float,
    p: ExponentialParams = DEFAULT_EXPONENTIAL,
    evictable: ArrayLike | None = None,
) -> BoolArray:
    """Archive mask of the prune pass; see `prune_breakdown` for the reasons."""
    return prune_breakdown(owner, importance, created_at, now, p, evictable).archive


def weak_time(
    importance: ArrayLike, created_at: ArrayLike, p: ExponentialParams = DEFAULT_EXPONENTIAL
) -> FloatArray:
    """Unix time the effective score falls below min_effective; NaN if it never does."""
    imp = as_float(importance)
    with np.errstate(divide="ignore", invalid="ignore"):
        days = np.log(imp / p.min_effective) / p.decay_lambda
    days = np.where(imp < p.min_effective, 0.0, days)
    days = np.where(np.isfinite(days), days, np.nan)
    return as_float(created_at) + days * SECONDS_PER_DAY


def prune_time(
    importance: ArrayLike, created_at: ArrayLike, p: ExponentialParams = DEFAULT_EXPONENTIAL
) -> FloatArray:
    """Unix time prune would archive each row by age or score, ignoring the top-N rule."""
    aged_out = as_float(created_at) + p.max_age_days * SECONDS_PER_DAY
    return np.fmin(weak_time(importance, created_at, p), aged_out)
