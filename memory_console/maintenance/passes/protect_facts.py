"""The protect-facts pass: high-confidence semantic memories protected from every pass.

The relevance design protects a semantic memory at confidence 0.9 or more (a fact stated
explicitly, an allergy say) so that no policy, the exponential one's pruning included, ever
removes it. Not in the default `maintain`: an operator adopts it with a preview and can undo.
"""

from __future__ import annotations

import numpy as np

from memory_console.maintenance.changes import ChangeSet, PassResult
from memory_console.maintenance.frame import Frame
from memory_console.maintenance.params import MaintenanceParams
from memory_console.maintenance.registry import PassSpec

MIN_CONFIDENCE = 0.9  # "stated explicitly" in the confidence language


def plan_protect_facts(frame: Frame, params: MaintenanceParams, now: float) -> PassResult:
    """Active, unprotected semantic memories with confidence >= 0.9 become protected."""
    confidence = frame.column("confidence")
    chosen = np.flatnonzero(
        (frame.column("status") == "active")
        & ~frame.column("is_protected").astype(np.bool_)
        & (frame.column("memory_type") == "semantic")
        & (confidence >= MIN_CONFIDENCE)
    )
    n = chosen.shape
    values = {"is_protected": (np.zeros(n, dtype=np.int64), np.ones(n, dtype=np.int64))}
    reasons = [
        f"semantic at confidence {c:.2f} >= {MIN_CONFIDENCE}: a fact kept from every pass"
        for c in confidence[chosen].tolist()
    ]
    change = ChangeSet.build("protect-facts", "protected", frame.ids[chosen], values, reasons)
    frame.record(change)
    return PassResult([change], figures={"protected": len(chosen)})


PASS = PassSpec(
    name="protect-facts",
    plan=plan_protect_facts,
    summary="protect semantic memories at confidence 0.9 or more (facts no pass may remove)",
    order=6,
    scope="active",
    closes=True,  # promote (order 60) raises episodic memories to semantic at up to 0.95
    narrow=lambda params, now: (
        "memory_type = 'semantic' AND is_protected = 0 AND confidence >= :protect_facts_min",
        {"protect_facts_min": MIN_CONFIDENCE},
    ),
)
