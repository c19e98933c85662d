"""The expire pass: archive old memories whose importance score fell below the minimum."""

from __future__ import annotations

import numpy as np

from memory_console.maintenance.changes import PassResult
from memory_console.maintenance.frame import Frame
from memory_console.maintenance.params import MaintenanceParams
from memory_console.maintenance.passes.archive import archived_set
from memory_console.maintenance.registry import PassSpec
from memory_console.policies import ImportanceParams, expire_mask, expire_reasons, importance_score


def frame_scores(frame: Frame, p: ImportanceParams, now: float) -> np.ndarray:
    """Every row's importance score at `now`."""
    return importance_score(
        frame.column("importance"),
        frame.column("retrieval_count"),
        frame.column("last_accessed_at"),
        frame.column("created_at"),
        now,
        p,
    )


def plan_expire(frame: Frame, params: MaintenanceParams, now: float) -> PassResult:
    p = params.of(ImportanceParams)
    score = frame_scores(frame, p, now)
    created = frame.column("created_at")
    rows = np.flatnonzero(frame.maintainable() & expire_mask(score, created, now, p))
    change = archived_set(frame, "expire", rows, expire_reasons(score[rows], created[rows], now, p))
    return PassResult([change], figures={"expired": len(rows)})


PASS = PassSpec(
    name="expire",
    plan=plan_expire,
    summary="archive memories older than expiration_days whose score is below min_importance",
    order=20,
    scope="maintainable",
    columns=("importance",),
    param_sets=("importance",),
)
