"""The promote pass: episodic memories retrieved often become semantic and stop decaying."""

from __future__ import annotations

import numpy as np

from memory_console.maintenance.changes import ChangeSet, PassResult
from memory_console.maintenance.frame import Frame
from memory_console.maintenance.params import MaintenanceParams
from memory_console.maintenance.registry import PassSpec
from memory_console.policies import (
    RelevanceParams,
    promoted_confidence,
    promotion_auto,
    promotion_candidates,
    promotion_reasons,
)


def plan_promote(frame: Frame, params: MaintenanceParams, now: float) -> PassResult:
    """Candidates retrieved at least promote_auto_retrievals times are promoted: memory_type
    semantic, decay_policy none, confidence (and its base) + 0.1 up to 0.95."""
    p = params.of(RelevanceParams)
    columns = (
        frame.column("memory_type"),
        frame.column("retrieval_count"),
        frame.column("confidence"),
        frame.column("decay_policy"),
        frame.column("is_protected"),
    )
    status = frame.column("status")
    candidates = promotion_candidates(*columns, p, status=status)
    rows = np.flatnonzero(promotion_auto(*columns, p, status=status))
    confidence = frame.column("confidence")[rows]
    raised = promoted_confidence(confidence, p)
    n = rows.shape
    values = {
        "memory_type": (frame.column("memory_type")[rows], np.full(n, "semantic")),
        "decay_policy": (frame.column("decay_policy")[rows], np.full(n, "none")),
        "confidence": (confidence, raised),
        "base_confidence": (frame.column("base_confidence")[rows].copy(), raised),
    }
    reasons = promotion_reasons(frame.column("retrieval_count")[rows], confidence)
    change = ChangeSet.build("promote", "promoted", frame.ids[rows], values, reasons)
    frame.record(change)
    return PassResult(
        [change], figures={"promotion_candidates": int(candidates.sum()), "promoted": len(rows)}
    )


PASS = PassSpec(
    name="promote",
    plan=plan_promote,
    summary="promote episodic memories retrieved 10+ times to semantic (no more decay)",
    order=60,
    scope="maintainable",
    param_sets=("relevance",),
    closes=True,  # a merged memory classify retypes as episodic in its closing run may qualify
)
