"""Forecasts for the console: one memory's coming confidences, the store's coming tiers."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from memory_console.maintenance.frame import Frame
from memory_console.policies import (
    TIER_NAMES,
    MemoryForecast,
    PolicyParams,
    confidence_at,
    decays_mask,
    forecast_memory,
    is_aggressive,
    project_tiers,
    tier_counts,
)
from memory_console.store import MemoryRecord, Store, bulk
from memory_console.store.stats import TIER_BUCKETS
from memory_console.timeutil import to_iso

MONTHS = (1, 3, 6, 12)


def memory_forecast(
    record: MemoryRecord,
    now: float,
    *,
    periods_ahead: int = 6,
    policy: str | None = None,
    params: PolicyParams | None = None,
) -> MemoryForecast:
    """One memory's value at now and each of the next periods if it is not accessed, and
    when it reaches the floor (policies.forecast_memory over the record's fields), under
    `params` (pass the store's: `store.settings().params()`), else `policy`'s defaults."""
    return forecast_memory(
        confidence=record.confidence,
        base_confidence=record.base_confidence,
        retrieval_count=record.retrieval_count,
        last_accessed_at=record.last_accessed_at,
        created_at=record.created_at,
        memory_type=record.memory_type,
        decay_policy=record.decay_policy,
        is_protected=record.is_protected,
        status=record.status,
        importance=record.importance,
        now=now,
        policy=policy or (params.name if params is not None else "relevance"),
        params=params,  # type: ignore[arg-type]
        periods_ahead=periods_ahead,
    )


def confidences_now(
    records: Sequence[MemoryRecord], now: float, params: PolicyParams | None = None
) -> np.ndarray:
    """Each memory's confidence as a decay run at `now` would set it (the stored value is as
    of the last run, which may be months old), under `params` (the store's policy) or
    relevance's defaults; memories that do not decay keep their stored value."""
    if not records:
        return np.zeros(0, dtype=np.float64)
    from memory_console.policies import params_for

    p = params if params is not None else params_for("relevance")
    confidence = np.array([r.confidence for r in records], dtype=np.float64)
    decay_policy = np.array([r.decay_policy for r in records])
    decays = decays_mask(
        np.array([r.status for r in records]),
        decay_policy,
        np.array([r.is_protected for r in records], dtype=np.bool_),
        np.array([r.memory_type for r in records]),
        p,  # type: ignore[arg-type]
    )
    last = [np.nan if r.last_accessed_at is None else r.last_accessed_at for r in records]
    decayed = confidence_at(
        now,
        confidence,
        np.array([r.base_confidence for r in records], dtype=np.float64),
        np.array([r.retrieval_count for r in records], dtype=np.int64),
        np.array(last, dtype=np.float64),
        np.array([r.created_at for r in records], dtype=np.float64),
        is_aggressive(decay_policy),
        decays,
        p,  # type: ignore[arg-type]
    )
    return np.minimum(decayed, confidence)  # decay only ever lowers confidence


def confidence_now(record: MemoryRecord, now: float, params: PolicyParams | None = None) -> float:
    """One memory's confidence as a decay run at `now` would set it (confidences_now)."""
    return float(confidences_now([record], now, params)[0])


def frame_confidence_at(frame: Frame, at: float, p: PolicyParams) -> np.ndarray:
    """The confidence of each of a frame's memories at `at` if none is accessed before (one
    vectorised pass for the whole store)."""
    decay_policy = frame.column("decay_policy")
    decays = decays_mask(
        frame.column("status"),
        decay_policy,
        frame.column("is_protected"),
        frame.column("memory_type"),
        p,  # type: ignore[arg-type]
    )
    return confidence_at(
        at,
        frame.column("confidence"),
        frame.column("base_confidence"),
        frame.column("retrieval_count"),
        frame.column("last_accessed_at"),
        frame.column("created_at"),
        is_aggressive(decay_policy),
        decays,
        p,  # type: ignore[arg-type]
    )


def frame_confidences_now(frame: Frame, now: float, p: PolicyParams) -> np.ndarray:
    """confidences_now over a frame's columns."""
    # Decay only ever lowers confidence.
    return np.minimum(frame_confidence_at(frame, now, p), frame.column("confidence"))


def stats_tiers_now(
    store: Store, now: float, params: PolicyParams | None = None
) -> dict[str, dict[str, Any]]:
    """`stats`' confidence tiers (store.stats.TIER_BUCKETS: count and mean) of the active
    memories, by the confidence a decay run at `now` would set, not the stored one."""
    p = params or store.settings().params()
    with store.snapshot():
        frame = Frame.load(store, bulk.Rows("active"))
    values = frame_confidences_now(frame, now, p)
    tiers: dict[str, dict[str, Any]] = {}
    for name, low, high in TIER_BUCKETS:
        inside = values[(values >= low) & (values < high)]
        mean = round(float(inside.mean()), 4) if inside.size else None
        tiers[name] = {"count": int(inside.size), "mean": mean}
    return tiers


def store_forecast(
    store: Store,
    now: float,
    *,
    months: tuple[int, ...] = MONTHS,
    params: PolicyParams | None = None,
) -> dict[str, Any]:
    """Active memories per confidence tier now (by the confidence as of now: what a decay run
    now would set) and 1, 3, 6 and 12 months ahead if nothing is accessed
    (policies.project_tiers), under the store's policy unless `params` says."""
    p = params or store.settings().params()
    with store.snapshot():
        frame = Frame.load(store, bulk.Rows("active"))
    confidence = frame.column("confidence")
    decay_policy = frame.column("decay_policy")
    decays = decays_mask(
        frame.column("status"),
        decay_policy,
        frame.column("is_protected"),
        frame.column("memory_type"),
        p,  # type: ignore[arg-type]
    )
    projected = project_tiers(
        confidence,
        frame.column("base_confidence"),
        frame.column("retrieval_count"),
        frame.column("last_accessed_at"),
        frame.column("created_at"),
        is_aggressive(decay_policy),
        decays,
        now,
        months,
        p,  # type: ignore[arg-type]
    )
    return {
        "now": to_iso(now),
        "policy": p.name,
        "active": len(frame),
        "decaying": int(np.count_nonzero(decays)),
        "tiers": list(TIER_NAMES),
        "current": tier_dict(tier_counts(frame_confidences_now(frame, now, p))),
        "months": {str(m): tier_dict(counts) for m, counts in projected.items()},
    }


def tier_dict(counts: np.ndarray) -> dict[str, int]:
    return {name: int(count) for name, count in zip(TIER_NAMES, counts.tolist(), strict=True)}
