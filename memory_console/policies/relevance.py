"""Relevance policy: confidence decays per 30-day period, slower for often-retrieved memories."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from numpy.typing import ArrayLike

from memory_console.confidence_words import FLOOR_TOLERANCE
from memory_console.policies.common import (
    SECONDS_PER_DAY,
    BoolArray,
    DecayResult,
    FloatArray,
    IntArray,
    access_anchor,
    as_float,
    as_str,
    decaying,
    elapsed_days,
    elapsed_periods,
    first_period_at_or_below,
    maintainable,
)
from memory_console.policies.params import PolicyParams


@dataclass(frozen=True)
class RelevanceParams(PolicyParams):
    """Relevance policy: decay, cleanup and promotion settings (docs/ARCHITECTURE.md,
    "Relevance decay", "Cleanup", "Promotion")."""

    name: ClassVar[str] = "relevance"

    floor: float = 0.10
    base_rate: float = 0.95
    rate_span: float = 0.04
    aggressive_base_rate: float = 0.90
    aggressive_rate_span: float = 0.08
    period_days: float = 30.0
    resistance_retrievals: int = 10
    cleanup_age_days: float = 90.0
    promote_min_retrievals: int = 5
    promote_min_confidence: float = 0.6
    promote_auto_retrievals: int = 10
    promote_boost: float = 0.1
    promote_cap: float = 0.95

    def _validate(self) -> None:
        self._check("floor", 0.0, 1.0, high_open=True)
        for rate in ("base_rate", "aggressive_base_rate"):
            self._check(rate, 0.0, 1.0, low_open=True)
        spans = (("rate_span", "base_rate"), ("aggressive_rate_span", "aggressive_base_rate"))
        for span, rate in spans:
            self._check(span, 0.0, 1.0 - getattr(self, rate) + 1e-12)
        self._check("period_days", 0.0, low_open=True)
        self._check("resistance_retrievals", 1)
        self._check("cleanup_age_days", 0.0)
        self._check("promote_min_retrievals", 0)
        self._check("promote_auto_retrievals", self.promote_min_retrievals)
        self._check("promote_min_confidence", 0.0, 1.0)
        self._check("promote_boost", 0.0, 1.0)
        self._check("promote_cap", 0.0, 1.0, low_open=True)


DEFAULT_RELEVANCE = RelevanceParams()


def relevance_rate(
    retrieval_count: ArrayLike, aggressive: ArrayLike, p: RelevanceParams = DEFAULT_RELEVANCE
) -> FloatArray:
    """Per-period rate: base + span * min(1, retrievals / 10); 0.95..0.99, aggressive 0.90..0.98."""
    resistance = np.clip(as_float(retrieval_count) / p.resistance_retrievals, 0.0, 1.0)
    standard = p.base_rate + p.rate_span * resistance
    fast = p.aggressive_base_rate + p.aggressive_rate_span * resistance
    return np.where(np.asarray(aggressive, dtype=np.bool_), fast, standard)


def relevance_periods(
    last_accessed_at: ArrayLike,
    created_at: ArrayLike,
    now: float,
    p: RelevanceParams = DEFAULT_RELEVANCE,
) -> IntArray:
    """Whole periods since last access (creation when never accessed), never negative."""
    return elapsed_periods(access_anchor(last_accessed_at, created_at), now, p.period_days)


def decayed_confidence(
    base_confidence: ArrayLike, rate: ArrayLike, periods: ArrayLike, floor: float
) -> FloatArray:
    """base * rate**periods held at the floor; a base already below the floor is not raised."""
    base = as_float(base_confidence)
    decayed = np.maximum(floor, base * as_float(rate) ** np.asarray(periods))
    return np.minimum(base, decayed)


def relevance_decay(
    base_confidence: ArrayLike,
    retrieval_count: ArrayLike,
    last_accessed_at: ArrayLike,
    created_at: ArrayLike,
    aggressive: ArrayLike,
    now: float,
    p: RelevanceParams = DEFAULT_RELEVANCE,
) -> DecayResult:
    """Confidence at `now` computed from base_confidence, so repeated runs are idempotent.

    Applies to every row given; restrict to `relevance_eligible(...)` rows before writing.
    """
    rate = relevance_rate(retrieval_count, aggressive, p)
    periods = relevance_periods(last_accessed_at, created_at, now, p)
    confidence = decayed_confidence(base_confidence, rate, periods, p.floor)
    return DecayResult(confidence=confidence, periods=periods, rate=rate)


def relevance_eligible(
    status: ArrayLike,
    decay_policy: ArrayLike,
    is_protected: ArrayLike,
    memory_type: ArrayLike,
    periods: ArrayLike | None = None,
) -> BoolArray:
    """Rows relevance decay may change: active, standard/aggressive, unprotected, not semantic.

    Eligibility also needs periods >= 1: pass `periods` (e.g. DecayResult.periods) to apply it
    here; leave it out for masks that must not depend on `now` (forecasts, cleanup).
    """
    mask = decaying(status, decay_policy, is_protected) & (as_str(memory_type) != "semantic")
    if periods is not None:
        mask &= np.asarray(periods) >= 1
    return mask


def cleanup_flags(
    confidence: ArrayLike,
    created_at: ArrayLike,
    now: float,
    eligible: ArrayLike,
    p: RelevanceParams = DEFAULT_RELEVANCE,
) -> BoolArray:
    """Eligible rows at the floor and created more than cleanup_age_days ago -> pending_deletion.

    Pass the confidence after this run's decay so a memory reaching the floor today is caught.
    """
    at_floor = as_float(confidence) <= p.floor + FLOOR_TOLERANCE
    old = elapsed_days(created_at, now) > p.cleanup_age_days
    return np.asarray(eligible, dtype=np.bool_) & at_floor & old


def promotion_candidates(
    memory_type: ArrayLike,
    retrieval_count: ArrayLike,
    confidence: ArrayLike,
    decay_policy: ArrayLike,
    is_protected: ArrayLike,
    p: RelevanceParams = DEFAULT_RELEVANCE,
    status: ArrayLike | None = None,
) -> BoolArray:
    """Episodic memories retrieved often (>= 5) and believed (> 0.6), not protected, policy set.

    `status`, when given, also requires active rows.
    """
    policies = as_str(decay_policy)
    mask = (
        (as_str(memory_type) == "episodic")
        & (np.asarray(retrieval_count) >= p.promote_min_retrievals)
        & (as_float(confidence) > p.promote_min_confidence)
        & (policies != "none")
        & ~np.asarray(is_protected, dtype=np.bool_)
    )
    if status is not None:
        mask &= maintainable(status, policies, is_protected)
    return mask


def promotion_auto(
    memory_type: ArrayLike,
    retrieval_count: ArrayLike,
    confidence: ArrayLike,
    decay_policy: ArrayLike,
    is_protected: ArrayLike,
    p: RelevanceParams = DEFAULT_RELEVANCE,
    status: ArrayLike | None = None,
) -> BoolArray:
    """Candidates the promote pass applies on its own: retrieval_count >= 10."""
    candidates = promotion_candidates(
        memory_type, retrieval_count, confidence, decay_policy, is_protected, p, status
    )
    return candidates & (np.asarray(retrieval_count) >= p.promote_auto_retrievals)


def promoted_confidence(
    confidence: ArrayLike, p: RelevanceParams = DEFAULT_RELEVANCE
) -> FloatArray:
    """Confidence after promotion: +0.1 capped at 0.95, never lowered."""
    c = as_float(confidence)
    return np.maximum(c, np.minimum(p.promote_cap, c + p.promote_boost))


def relevance_floor_time(
    base_confidence: ArrayLike,
    retrieval_count: ArrayLike,
    last_accessed_at: ArrayLike,
    created_at: ArrayLike,
    aggressive: ArrayLike,
    p: RelevanceParams = DEFAULT_RELEVANCE,
) -> FloatArray:
    """Unix time of the period boundary where confidence first reaches the floor, unaccessed.

    NaN where it never does (rate 1). A base already at the floor gives the anchor time.
    """
    rate = relevance_rate(retrieval_count, aggressive, p)
    k = first_period_at_or_below(base_confidence, rate, p.floor + FLOOR_TOLERANCE, inclusive=True)
    anchor = access_anchor(last_accessed_at, created_at)
    return anchor + k * p.period_days * SECONDS_PER_DAY
