"""The due index: when each memory next changes, so that a plan reads only what is due.

The time-driven passes (expire-banks, expire, decay under the relevance or periodic policy,
cleanup) each change a memory only once its clock passes a point that its own fields fix: a
period boundary, its bank's TTL, its expiry age, the time its importance score falls below the
minimum. Each is monotone (what a pass would change at t it would change at any later time), so
a memory's next change is one number, `due_times`, a function of its fields and the store's
settings alone. The store keeps it in memory.due_at: every write of a memory sets it unknown
(due), and every applied run computes it again, inside its transaction, for the memories it
read (`refresh`). A plan at `now` then reads only the memories due by `now`, and proposes
exactly what a plan over every memory would (tests/test_due_index.py holds the two equal).

What the index cannot serve, a plan reads in full (`full_read_reason` says why): passes that
compare memories with each other (consolidate, quota, supersede, exponential decay's pruning,
...), a run's own parameters, or settings changed since the times were computed (the next
apply computes them all again under the new ones).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence

import numpy as np

from memory_console.confidence_words import FLOOR_TOLERANCE
from memory_console.maintenance import registry
from memory_console.maintenance.frame import Frame
from memory_console.maintenance.params import MaintenanceParams
from memory_console.maintenance.passes.expire_banks import HOUR, ExpireBanksParams, last_activity
from memory_console.policies import (
    SECONDS_PER_DAY,
    ImportanceParams,
    PeriodicParams,
    RelevanceParams,
    is_aggressive,
    relevance_eligible,
)
from memory_console.policies.common import (
    access_anchor,
    decaying,
    first_period_at_or_below,
)
from memory_console.policies.periodic import periodic_anchor
from memory_console.policies.relevance import decayed_confidence, relevance_rate
from memory_console.store import Store, bulk
from memory_console.store.connection import Connection
from memory_console.store.settings import StoreSettings
from memory_console.store.vocab import SESSION_TIERS

# The passes whose changes to a memory depend only on its own fields and the clock.
TIMED = ("expire-banks", "expire", "decay", "cleanup")
# The rows they may change: a memory outside it is never due until it is written.
TIMED_SCOPE = "maintainable"
# A due time is this much early: a pass's own test of elapsed time rounds as it computes
# it, and a memory read a minute early costs a row, never a change.
SLACK_SECONDS = 60.0
# The policies whose decay is time-driven (exponential prunes each owner's lowest scores).
TIMED_POLICIES = ("relevance", "periodic")
# Rows computed at a time when the whole index is computed afresh.
REFRESH_CHUNK = 32_768


def stamp_params(settings: StoreSettings) -> MaintenanceParams:
    """The parameters the due times are computed under: the store's settings."""
    return registry.build_params(TIMED, settings=settings)


def digest(params: MaintenanceParams) -> str:
    """What the due times depend on: the policy and the time-driven passes' parameters."""
    sets = (RelevanceParams, PeriodicParams, ImportanceParams, ExpireBanksParams)
    text = json.dumps(
        {"policy": params.policy, **{kind.name: params.of(kind).to_dict() for kind in sets}},
        sort_keys=True,
    )
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def timed_passes(policy: str) -> tuple[str, ...]:
    return TIMED if policy in TIMED_POLICIES else tuple(n for n in TIMED if n != "decay")


def full_read_reason(
    store: Store, names: Sequence[str], params: MaintenanceParams, settings: StoreSettings
) -> str | None:
    """Why a plan of `names` under `params` must read every memory (None: the due index
    serves it)."""
    stamped = stamp_params(settings)
    others = [name for name in names if name not in TIMED]
    if others:
        listed = " and ".join([", ".join(others[:-1]), others[-1]] if len(others) > 1 else others)
        verb = "compares" if len(others) == 1 else "compare"
        return f"{listed} {verb} memories with each other"
    if digest(params) != digest(stamped):
        return "this run's parameters are not the store's settings"
    if any(name not in timed_passes(stamped.policy) for name in names):
        return f"the {stamped.policy} policy ranks each owner's memories against each other"
    if not is_current(store, stamped):
        return "no due times under the present settings yet (an apply computes them)"
    return None


def is_current(store: Store, stamped: MaintenanceParams | None = None) -> bool:
    """Whether the stored due times were computed under the store's settings (`stamped`:
    stamp_params of them, when the caller has it)."""
    wanted = digest(stamped or stamp_params(store.settings()))
    return store.read(bulk.due_digest) == wanted


def due_times(frame: Frame, params: MaintenanceParams) -> np.ndarray:
    """Each row's next change by a time-driven pass, in unix seconds (inf: none until the
    memory is written); rows not yet to change are read `SLACK_SECONDS` early."""
    due = np.full(len(frame), np.inf)
    if not len(frame):
        return due
    rows = frame.maintainable()
    due = np.minimum(due, bank_times(frame, params.of(ExpireBanksParams)))
    due = np.minimum(due, expire_times(frame, params.of(ImportanceParams)))
    if params.policy == "relevance":
        due = np.minimum(due, relevance_times(frame, params.of(RelevanceParams)))
    elif params.policy == "periodic":
        due = np.minimum(due, periodic_times(frame, params.of(PeriodicParams)))
    due = np.minimum(due, cleanup_times(frame, params.of(RelevanceParams)))
    return np.where(rows, due - SLACK_SECONDS, np.inf)


def bank_times(frame: Frame, p: ExpireBanksParams) -> np.ndarray:
    """expire-banks: idle past the bank's TTL (idle > ttl, counted from the last activity)."""
    tier = frame.column("tier")
    activity = last_activity(frame)
    due = np.full(len(frame), np.inf)
    for bank in SESSION_TIERS:
        due = np.where(tier == bank, activity + p.ttl_hours(bank) * HOUR, due)
    return due


def expire_times(frame: Frame, p: ImportanceParams) -> np.ndarray:
    """expire: older than expiration_days and an importance score below min_importance.

    The score is steady + recency_weight * exp(-idle days / recency_days), which only falls;
    it drops below the minimum once exp(...) < (minimum - steady) / recency_weight."""
    steady = (
        frame.column("importance") * p.importance_weight
        + np.clip(frame.column("retrieval_count") / p.saturation_retrievals, 0.0, 1.0)
        * p.retrieval_weight
    )
    anchor = access_anchor(frame.column("last_accessed_at"), frame.column("created_at"))
    gap = p.min_importance - steady
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = gap / p.recency_weight if p.recency_weight > 0 else np.where(gap > 0, np.inf, 0)
        idle_days = np.where(ratio >= 1.0, 0.0, -np.log(ratio))
    low = np.where(gap > 0, anchor + idle_days * p.recency_days * SECONDS_PER_DAY, np.inf)
    old = frame.column("created_at") + p.expiration_days * SECONDS_PER_DAY
    return np.maximum(low, old)


def first_change(
    periods: np.ndarray,
    test: Callable[[np.ndarray], np.ndarray],
    never: np.ndarray,
    limit: int = 3,
) -> np.ndarray:
    """The smallest period count k >= 1 at which `test(k)` (monotone in k, computed as the
    pass computes it) holds, from an estimate `periods`: checked at k and k - 1 and moved
    until both agree with the test, so a rounding in the estimate never makes a time late;
    NaN where `never`."""
    k = np.where(never, 1, np.maximum(np.nan_to_num(periods, nan=1.0), 1.0)).astype(np.int64)
    for _ in range(limit):
        late = (k > 1) & test(k - 1) & ~never
        early = ~test(k) & ~never
        if not late.any() and not early.any():
            break
        k = np.where(late, k - 1, np.where(early, k + 1, k))
    unsure = ((k > 1) & test(k - 1)) | ~test(k)
    k = np.where(unsure & ~never, 1, k)  # not settled: at the first boundary (early, safe)
    return np.where(never, np.nan, k.astype(np.float64))


def relevance_times(frame: Frame, p: RelevanceParams) -> np.ndarray:
    """Relevance decay: at the first period boundary k >= 1 where min(base, max(floor, base *
    rate**k)) falls below the present confidence."""
    eligible = relevance_eligible(
        frame.column("status"),
        frame.column("decay_policy"),
        frame.column("is_protected"),
        frame.column("memory_type"),
    )
    base, current = frame.column("base_confidence"), frame.column("confidence")
    rate = relevance_rate(
        frame.column("retrieval_count"), is_aggressive(frame.column("decay_policy")), p
    )
    limit = np.where(rate < 1.0, np.minimum(base, p.floor), base)
    never = ~eligible | ~(limit < current)
    estimate = np.where(
        base < current, 1.0, first_period_at_or_below(base, rate, current, inclusive=False)
    )
    k = first_change(
        estimate, lambda k: decayed_confidence(base, rate, k, p.floor) < current, never
    )
    anchor = access_anchor(frame.column("last_accessed_at"), frame.column("created_at"))
    return np.where(never, np.inf, anchor + k * p.period_days * SECONDS_PER_DAY)


def periodic_times(frame: Frame, p: PeriodicParams) -> np.ndarray:
    """Periodic decay: at the first boundary k >= 1 where base * rate**k falls below the
    present confidence, or the first one at all when the confidence is below archive_below."""
    eligible = decaying(
        frame.column("status"), frame.column("decay_policy"), frame.column("is_protected")
    ) & (frame.column("memory_type") != "semantic")
    base, current = frame.column("base_confidence"), frame.column("confidence")

    def changes(k: np.ndarray) -> np.ndarray:
        new = np.minimum(base * p.rate**k, current)
        return (new < current) | (new < p.archive_below)

    at_once = (base < current) | (current < p.archive_below)
    never = ~eligible | (~at_once & (p.rate >= 1.0))
    estimate = np.where(
        at_once, 1.0, first_period_at_or_below(base, p.rate, current, inclusive=False)
    )
    never |= np.isnan(estimate) & ~at_once
    k = first_change(estimate, changes, never)
    anchor = periodic_anchor(frame.column("last_accessed_at"), frame.column("created_at"))
    return np.where(never, np.inf, anchor + k * p.period_days * SECONDS_PER_DAY)


def cleanup_times(frame: Frame, p: RelevanceParams) -> np.ndarray:
    """Cleanup of a memory already at the floor: once it is older than cleanup_age_days
    (one that decay brings to the floor is due at that decay)."""
    eligible = relevance_eligible(
        frame.column("status"),
        frame.column("decay_policy"),
        frame.column("is_protected"),
        frame.column("memory_type"),
    )
    at_floor = eligible & (frame.column("confidence") <= p.floor + FLOOR_TOLERANCE)
    old = frame.column("created_at") + p.cleanup_age_days * SECONDS_PER_DAY
    return np.where(at_floor, old, np.inf)


def refresh(conn: Connection, store: Store, now: float) -> int:
    """Inside an apply's write transaction, after its changes: compute the due times of the
    memories a plan at `now` read through the index (or, when the stored times hold for
    other settings, of every memory) from the memories as they now stand. Returns how many
    times were written."""
    params = stamp_params(store.settings())
    wanted = digest(params)
    if bulk.due_digest(conn) == wanted:
        written = bulk.settle_due_outside(conn, TIMED_SCOPE, now=now)
        return written + stamp(
            conn, bulk.Rows(TIMED_SCOPE, bulk.DUE_ROWS, {"due_now": now}), params
        )
    # Every memory's time, a chunk at a time; the index is built once after, as a bulk write
    # builds its indexes (at 1,000,000 memories: 6.5 s, against 7.8 s entry by entry).
    with bulk.rebuilt_indexes(conn, ["due_at"], bulk.table_rows(conn)):
        written = bulk.settle_due_outside(conn, TIMED_SCOPE, now=None)
        low, high = bulk.id_bounds(conn)
        for start in range(low, high + 1, REFRESH_CHUNK):
            rows = bulk.Rows(
                TIMED_SCOPE,
                "id >= :due_low AND id < :due_high",
                {"due_low": start, "due_high": start + REFRESH_CHUNK},
            )
            written += stamp(conn, rows, params)
    bulk.set_due_digest(conn, wanted)
    return written


def stamp(conn: Connection, rows: bulk.Rows, params: MaintenanceParams) -> int:
    """Compute and write the due times of `rows`. The bank of the few working and short-term
    memories is read apart, so the rest is read as numbers only."""
    columns = bulk.load_memory_arrays(conn, rows, ("importance",))
    if not columns["id"].shape[0]:
        return 0
    columns["tier"] = bulk.session_tiers(conn, rows, columns["id"])
    frame = Frame(None, columns, rows)
    return bulk.write_due(conn, frame.ids, due_times(frame, params))
