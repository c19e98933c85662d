"""Human reasons for proposed changes, one string per changed row (shown in plans and events)."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from memory_console.policies.common import as_float, as_str, elapsed_days
from memory_console.policies.exponential import DEFAULT_EXPONENTIAL, ExponentialParams
from memory_console.policies.importance import DEFAULT_IMPORTANCE, ImportanceParams
from memory_console.policies.periodic import DEFAULT_PERIODIC, PeriodicParams


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def decay_reasons(periods: ArrayLike, rate: ArrayLike, last_accessed_at: ArrayLike) -> list[str]:
    """e.g. "3 periods since last access at rate 0.958" ("since creation" if never accessed)."""
    since = np.where(np.isnan(as_float(last_accessed_at)), "creation", "last access")
    rows = zip(np.asarray(periods).tolist(), as_float(rate).tolist(), since.tolist(), strict=True)
    return [f"{_plural(int(k), 'period')} since {s} at rate {r:.3f}" for k, r, s in rows]


def cleanup_reasons(created_at: ArrayLike, now: float) -> list[str]:
    """e.g. "at the floor and 120 days old"."""
    return [f"at the floor and {int(d)} days old" for d in elapsed_days(created_at, now).tolist()]


def promotion_reasons(retrieval_count: ArrayLike, confidence: ArrayLike) -> list[str]:
    """e.g. "retrieved 12 times at confidence 0.82"."""
    rows = zip(np.asarray(retrieval_count).tolist(), as_float(confidence).tolist(), strict=True)
    return [f"retrieved {_plural(int(n), 'time')} at confidence {c:.2f}" for n, c in rows]


def archive_reasons(confidence: ArrayLike, p: PeriodicParams = DEFAULT_PERIODIC) -> list[str]:
    """Periodic archive, e.g. "confidence 0.08 below 0.1"."""
    return [f"confidence {c:.2f} below {p.archive_below:g}" for c in as_float(confidence).tolist()]


def expire_reasons(
    score: ArrayLike, created_at: ArrayLike, now: float, p: ImportanceParams = DEFAULT_IMPORTANCE
) -> list[str]:
    """e.g. "score 0.06 below 0.1 and 140 days old"."""
    rows = zip(as_float(score).tolist(), elapsed_days(created_at, now).tolist(), strict=True)
    return [f"score {s:.2f} below {p.min_importance:g} and {int(d)} days old" for s, d in rows]


def quota_reasons(
    owner: ArrayLike, score: ArrayLike, p: ImportanceParams = DEFAULT_IMPORTANCE
) -> list[str]:
    """e.g. "owner alice over quota 1000 (score 0.21)"."""
    return [
        f"owner {o} over quota {p.max_memories} (score {s:.2f})"
        for o, s in zip(as_str(owner).tolist(), as_float(score).tolist(), strict=True)
    ]


def prune_reasons(
    owner: ArrayLike,
    effective: ArrayLike,
    created_at: ArrayLike,
    too_old: ArrayLike,
    too_weak: ArrayLike,
    now: float,
    p: ExponentialParams = DEFAULT_EXPONENTIAL,
) -> list[str]:
    """Age first, then score, else rank: "45 days old, over 30", "effective 0.21 below 0.3",
    "owner bob beyond top 100 (effective 0.41)". Pass the rows of a PruneBreakdown.
    """
    rows = zip(
        as_str(owner).tolist(),
        as_float(effective).tolist(),
        elapsed_days(created_at, now).tolist(),
        np.asarray(too_old, dtype=bool).tolist(),
        np.asarray(too_weak, dtype=bool).tolist(),
        strict=True,
    )
    return [
        f"{int(d)} days old, over {p.max_age_days:g}"
        if old
        else f"effective {e:.2f} below {p.min_effective:g}"
        if weak
        else f"owner {o} beyond top {p.prune_to_top_n} (effective {e:.2f})"
        for o, e, d, old, weak in rows
    ]
