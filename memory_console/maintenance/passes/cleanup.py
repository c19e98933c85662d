"""The cleanup pass: flag old memories at the confidence floor (decay_policy pending_deletion).

Nothing is deleted: purge does that, after an export, when an operator asks.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from memory_console.maintenance.changes import ChangeSet, PassResult
from memory_console.maintenance.frame import Frame
from memory_console.maintenance.params import MaintenanceParams
from memory_console.maintenance.reasons import grouped_reasons
from memory_console.maintenance.registry import PassSpec
from memory_console.policies import (
    SECONDS_PER_DAY,
    RelevanceParams,
    cleanup_flags,
    cleanup_reasons,
    relevance_eligible,
)


def plan_cleanup(frame: Frame, params: MaintenanceParams, now: float) -> PassResult:
    """Memories that decay, sit at the relevance floor (after this plan's decay) and were
    created more than cleanup_age_days ago get decay_policy pending_deletion."""
    p = params.of(RelevanceParams)
    eligible = relevance_eligible(
        frame.column("status"),
        frame.column("decay_policy"),
        frame.column("is_protected"),
        frame.column("memory_type"),
    )
    created = frame.column("created_at")
    rows = np.flatnonzero(cleanup_flags(frame.column("confidence"), created, now, eligible, p))
    before = frame.column("decay_policy")[rows]
    age_days = np.floor((now - created[rows]) / SECONDS_PER_DAY)
    reasons = grouped_reasons([age_days], lambda first: cleanup_reasons(created[rows][first], now))
    change = ChangeSet.build(
        "cleanup",
        "flagged",
        frame.ids[rows],
        {"decay_policy": (before, np.full(rows.shape, "pending_deletion"))},
        reasons,
    )
    frame.record(change)
    return PassResult([change], figures={"flagged": len(rows)})


def cleanup_rows(params: MaintenanceParams, now: float) -> tuple[str, dict[str, Any]]:
    """Rows at the floor already; rows that reach it in this plan come from decay's rows."""
    floor = params.of(RelevanceParams).floor
    return "confidence <= :cleanup_floor", {"cleanup_floor": floor + 1e-6}


PASS = PassSpec(
    name="cleanup",
    plan=plan_cleanup,
    summary="flag old memories at the confidence floor for deletion (pending_deletion)",
    order=50,
    scope="decaying",
    param_sets=("relevance",),
    narrow=cleanup_rows,
)
