"""The quota pass: per owner at most max_memories active; the lowest scores are archived."""

from __future__ import annotations

import numpy as np

from memory_console.maintenance.changes import PassResult
from memory_console.maintenance.frame import Frame
from memory_console.maintenance.params import MaintenanceParams
from memory_console.maintenance.passes.archive import archived_set
from memory_console.maintenance.passes.expire import frame_scores
from memory_console.maintenance.registry import PassSpec
from memory_console.policies import ImportanceParams, quota_evict, quota_reasons


def plan_quota(frame: Frame, params: MaintenanceParams, now: float) -> PassResult:
    """Count every memory still active after the earlier passes; evict only maintainable ones
    (protected and decay_policy none count towards the quota but stay)."""
    p = params.of(ImportanceParams)
    active = np.flatnonzero(frame.equals("status", "active"))
    owner = frame.column("owner")[active]
    score = frame_scores(frame, p, now)[active]
    evict = quota_evict(owner, score, p, evictable=frame.maintainable()[active])
    chosen = np.flatnonzero(evict)
    change = archived_set(
        frame, "quota", active[chosen], quota_reasons(owner[chosen], score[chosen], p)
    )
    return PassResult([change], figures={"over_quota": len(chosen)})


PASS = PassSpec(
    name="quota",
    plan=plan_quota,
    summary="archive the lowest-score memories of owners above max_memories",
    order=70,
    scope="active",
    columns=("importance", "owner"),
    param_sets=("importance",),
)
