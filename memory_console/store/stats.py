"""Store-wide figures for `stats` and the health screen, computed by SQL aggregates."""

from __future__ import annotations

from typing import Any

from memory_console.store.store import Store
from memory_console.timeutil import DAY

TIER_BUCKETS = (
    ("0.9-1.0", 0.9, 1.01),
    ("0.7-0.9", 0.7, 0.9),
    ("0.5-0.7", 0.5, 0.7),
    ("0.3-0.5", 0.3, 0.5),
    ("<0.3", -1.0, 0.3),
)
AGE_BUCKETS = (
    ("< 7 days", 0, 7),
    ("7-30 days", 7, 30),
    ("30-90 days", 30, 90),
    ("90-180 days", 90, 180),
    ("180-365 days", 180, 365),
    ("> 365 days", 365, 1e9),
)
STALE_DAYS = 60
RECENT_DAYS = 7


def bucket_case(column: str, buckets: tuple[tuple[str, float, float], ...]) -> str:
    """A CASE expression naming the bucket [low, high) that column falls in."""
    parts = " ".join(
        f"WHEN {column} >= {low} AND {column} < {high} THEN '{name}'" for name, low, high in buckets
    )
    return f"CASE {parts} END"


def store_stats(store: Store, now: float) -> dict[str, Any]:
    """Confidence tiers, staleness, recent activity, age distribution and counts."""
    active = "status = 'active'"
    tiers = {name: {"count": 0, "mean": None} for name, _, _ in TIER_BUCKETS}
    for name, count, mean in store._query(
        f"SELECT {bucket_case('confidence', TIER_BUCKETS)} AS b, count(*), avg(confidence) "
        f"FROM memory WHERE {active} GROUP BY b"
    ):
        tiers[name] = {"count": count, "mean": round(mean, 4)}
    recent_count, recent_mean = store._query(
        "SELECT count(*), avg(retrieval_count) FROM memory WHERE last_accessed_at >= ?",
        (now - RECENT_DAYS * DAY,),
    )[0]
    # Staleness and ages need every active row: one pass over the table computes them all, by
    # comparing created_at with fixed times (age >= low days <=> created_at <= now - low days).
    # Counted with FILTER and capped with CASE, which SQLite and PostgreSQL both read.
    bucket_counts = ", ".join(
        f"count(*) FILTER (WHERE created_at <= {now - low * DAY!r} "
        f"AND created_at > {now - high * DAY!r})"
        for _, low, high in AGE_BUCKETS
    )
    row = store._query(
        "SELECT count(*) FILTER (WHERE decay_policy = 'standard' "
        "AND coalesce(last_accessed_at, created_at) < ?), max(created_at), "
        "avg(CASE WHEN created_at < ? THEN created_at ELSE ? END), min(created_at), "
        f"{bucket_counts} FROM memory WHERE {active}",
        (now - STALE_DAYS * DAY, now, now),
    )[0]
    stale = row[0] or 0
    # A memory created after `now` (an earlier --now) is of age 0, never a negative age.
    low, mean_age, high = (max(0.0, now - at) / DAY if at is not None else None for at in row[1:4])
    histogram = {name: count or 0 for (name, _, _), count in zip(AGE_BUCKETS, row[4:], strict=True)}
    counts = {
        field: {str(value): count for value, count in store.counts_by(field)}
        for field in ("topic", "owner", "memory_type", "tier", "status")
    }
    return {
        "now": now,
        "total": sum(counts["status"].values()),
        "confidence_tiers": tiers,
        "stale": {"days": STALE_DAYS, "count": stale},
        "recently_accessed": {
            "days": RECENT_DAYS,
            "count": recent_count,
            "mean_retrievals": round(recent_mean, 2) if recent_mean is not None else None,
        },
        "age_days": {
            "min": round(low, 1) if low is not None else None,
            "mean": round(mean_age, 1) if mean_age is not None else None,
            "max": round(high, 1) if high is not None else None,
            "histogram": histogram,
        },
        "counts": counts,
    }
