"""The store's health figures, each with a way to the memories behind it (the health screen).

The figures' reads of the store (statistics, stale and recent memories, accesses per day)
are offered here too, so the console reaches the store only through the Store API and
the core.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from memory_console.maintenance import due
from memory_console.maintenance.edits import merge_groups
from memory_console.maintenance.forecast import (
    MONTHS,
    frame_confidence_at,
    frame_confidences_now,
    stats_tiers_now,
)
from memory_console.maintenance.frame import Frame
from memory_console.maintenance.planner import plan
from memory_console.policies import (
    TIER_NAMES,
    ImportanceParams,
    decays_mask,
    promotion_candidates,
    tier_index,
)
from memory_console.policies.forecast_arrays import AnyParams
from memory_console.store import MemoryFilter, Store, bulk
from memory_console.store.readers import (
    created_between_ids,
    daily_accesses,
    recently_accessed_ids,
    stale_ids,
)
from memory_console.store.stats import AGE_BUCKETS, store_stats
from memory_console.timeutil import add_months

__all__ = [
    "AGE_BUCKETS",
    "AUTO_SCAN",
    "MAX_IDS",
    "Candidates",
    "DUE_SOON_DAYS",
    "DueOutlook",
    "NEVER_DECAY",
    "Finder",
    "Target",
    "TierProjection",
    "created_between_ids",
    "daily_accesses",
    "due_outlook",
    "find_candidates",
    "ids_target",
    "never_decaying",
    "owner_quota",
    "project_tiers",
    "recently_accessed_ids",
    "stale_ids",
    "stats_as_of_now",
    "store_stats",
]

MAX_IDS = 2000  # memories a figure that is no plain filter opens at most
AUTO_SCAN = 50_000  # active memories up to which the candidates are found on opening
Finder = Callable[[Store], list[int]]


@dataclass(frozen=True)
class Target:
    """Where a figure leads: a filter of the main table, or memories found by id."""

    label: str
    memory_filter: MemoryFilter | None = None
    finder: Finder | None = None
    total: int = 0  # how many memories the figure counts (a finder returns the newest)
    scan: bool = False  # the figure is not computed yet: choosing it computes it


def ids_target(label: str, ids: np.ndarray | list[int]) -> Target:
    """A figure whose memories are already known (the first MAX_IDS of them)."""
    chosen = [int(i) for i in np.asarray(ids, dtype=np.int64)[:MAX_IDS].tolist()]
    return Target(label, finder=lambda store: chosen, total=len(ids))


def stats_as_of_now(store: Store, now: float) -> dict[str, Any]:
    """store_stats with, after its stored-value tiers, `confidence_tiers_now`: the same tiers
    by the confidence a decay run at `now` would set (what `stats` shows)."""
    figures: dict[str, Any] = {}
    for key, value in store_stats(store, now).items():
        figures[key] = value
        if key == "confidence_tiers":
            figures["confidence_tiers_now"] = stats_tiers_now(store, now)
    return figures


@dataclass(frozen=True)
class TierProjection:
    """Active memories' confidence tiers now (month 0: by the confidence as of now, what a
    decay run now would set) and months ahead if unaccessed."""

    ids: np.ndarray
    tiers: dict[int, np.ndarray]
    decaying: int
    candidates: np.ndarray  # promotion candidates' ids
    never_decay: dict[str, np.ndarray] = field(default_factory=dict)  # ids by NEVER_DECAY

    def count(self, months: int, tier: int) -> int:
        return int(np.count_nonzero(self.tiers[months] == tier))

    def target(self, months: int, tier: int) -> Target:
        name = TIER_NAMES[tier]
        ids = self.ids[self.tiers[months] == tier][::-1]
        if months == 0:
            # By the confidence as of now, which no stored column holds: found by id.
            return ids_target(f"confidence {name} as of now", ids)
        return ids_target(f"confidence {name} in {months} months if unaccessed", ids)


# Why an active memory can never decay, each memory counted under the first that holds: no
# decay policy touches a protected memory or one with decay_policy none, and none decays a
# semantic memory (docs/ARCHITECTURE.md, "Policies").
NEVER_DECAY = ("protected", "decay_policy none", "semantic")


def never_decaying(frame: Frame) -> dict[str, np.ndarray]:
    """Ids of the frame's active memories that can never decay, by NEVER_DECAY reason (the
    newest first, as the figures open them)."""
    active = frame.column("status") == "active"
    protected = active & frame.column("is_protected").astype(np.bool_)
    no_policy = active & ~protected & (frame.column("decay_policy") == "none")
    semantic = active & ~protected & ~no_policy & (frame.column("memory_type") == "semantic")
    masks = dict(zip(NEVER_DECAY, (protected, no_policy, semantic), strict=True))
    return {reason: frame.ids[mask][::-1] for reason, mask in masks.items()}


def project_tiers(store: Store, now: float) -> TierProjection:
    """The numbers of maintenance.store_forecast, keeping which memory is in which tier."""
    settings = store.settings()
    p: AnyParams = settings.params()  # type: ignore[assignment]  # the store's policy
    promotion = settings.params("relevance")  # promotion is relevance's, whatever the policy
    with store.snapshot():
        frame = Frame.load(store, bulk.Rows("active"))
    # Candidates at their confidence as of now, as the decay pass counts them (the stored
    # value is as of the last run, which may be months old).
    confidence = frame_confidences_now(frame, now, p)
    decay_policy = frame.column("decay_policy")
    columns = (frame.column("status"), decay_policy, frame.column("is_protected"))
    decays = decays_mask(*columns, frame.column("memory_type"), p)
    tiers = {0: tier_index(frame_confidences_now(frame, now, p)).astype(np.int8)}
    for months in MONTHS:
        # Calendar months, as the column's "+12 mo" reads (not 30-day decay periods).
        later = frame_confidence_at(frame, add_months(now, months), p)
        tiers[months] = tier_index(later).astype(np.int8)
    candidates = promotion_candidates(
        frame.column("memory_type"),
        frame.column("retrieval_count"),
        confidence,
        decay_policy,
        frame.column("is_protected"),
        promotion,  # type: ignore[arg-type]
        status=frame.column("status"),
    )
    return TierProjection(
        frame.ids,
        tiers,
        int(np.count_nonzero(decays)),
        frame.ids[candidates][::-1],
        never_decaying(frame),
    )


@dataclass(frozen=True)
class Candidates:
    """What the maintenance passes would find now: merge groups and sensitive memories."""

    groups: int
    merge_members: np.ndarray
    sensitive: np.ndarray


def find_candidates(store: Store, now: float) -> Candidates:
    """Plans of consolidate and sensitive (nothing written), read for their memories."""
    found = plan(store, ("consolidate", "sensitive"), now=now)
    groups = merge_groups(found)
    members = np.array(sorted({i for m in groups.values() for i in m}, reverse=True), np.int64)
    sensitive = [s.ids for s in found.change_sets if s.pass_name == "sensitive"]
    flagged = np.sort(np.concatenate(sensitive))[::-1] if sensitive else np.empty(0, np.int64)
    return Candidates(len(groups), members, flagged)


DUE_SOON_DAYS = 7  # the health screen's second due figure: what falls due within a week


@dataclass(frozen=True)
class DueOutlook:
    """What the due index says maintenance will read: the memories due now (a plan now reads
    them) and within DUE_SOON_DAYS. `current`: the index holds for the store's settings (else
    the next plan reads every memory, and its apply computes the times again)."""

    current: bool
    now: float
    due_now: int
    due_soon: int

    def target(self, soon: bool) -> Target:
        until = self.now + (DUE_SOON_DAYS * 86400.0 if soon else 0.0)
        label = f"due within {DUE_SOON_DAYS} days" if soon else "due for maintenance now"
        return Target(
            label,
            finder=lambda store: store.read(bulk.due_ids, due.TIMED_SCOPE, until, MAX_IDS),
            total=self.due_soon if soon else self.due_now,
        )


def due_outlook(store: Store, now: float) -> DueOutlook:
    """Two counts through the due index, each reading only the due memories' rows (none
    while the times are not current: every memory is then due, and the screen says so)."""
    if not due.is_current(store):
        return DueOutlook(False, now, 0, 0)
    with store.snapshot():
        counts = [
            store.read(bulk.due_count, due.TIMED_SCOPE, now + days * 86400.0)
            for days in (0, DUE_SOON_DAYS)
        ]
    return DueOutlook(True, now, counts[0], counts[1])


def owner_quota() -> int:
    return ImportanceParams().max_memories
