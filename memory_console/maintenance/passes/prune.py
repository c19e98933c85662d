"""The prune pass (exponential policy): archive old or weak memories, then all but the top N
per owner by effective score."""

from __future__ import annotations

import numpy as np

from memory_console.maintenance.changes import PassResult
from memory_console.maintenance.frame import Frame
from memory_console.maintenance.params import MaintenanceParams
from memory_console.maintenance.passes.archive import archived_set
from memory_console.maintenance.registry import PassSpec
from memory_console.policies import ExponentialParams, prune_breakdown, prune_reasons


def plan_prune(
    frame: Frame, params: MaintenanceParams, now: float, *, pass_name: str = "prune"
) -> PassResult:
    """Archive what the exponential policy prunes. Every active memory fills a top-N place,
    but only maintainable ones (unprotected, decay_policy not none) are archived."""
    p = params.of(ExponentialParams)
    active = np.flatnonzero(frame.equals("status", "active"))
    owner = frame.column("owner")[active]
    created = frame.column("created_at")[active]
    breakdown = prune_breakdown(
        owner,
        frame.column("importance")[active],
        created,
        now,
        p,
        evictable=frame.maintainable()[active],
    )
    chosen = np.flatnonzero(breakdown.archive)
    reasons = prune_reasons(
        owner[chosen],
        breakdown.effective[chosen],
        created[chosen],
        breakdown.too_old[chosen],
        breakdown.too_weak[chosen],
        now,
        p,
    )
    change = archived_set(frame, pass_name, active[chosen], reasons)
    figures = {
        "active": len(active),
        "too_old": int(breakdown.too_old.sum()),
        "too_weak": int(breakdown.too_weak.sum()),
        "beyond_top_n": int(breakdown.beyond_top_n.sum()),
        "archived": len(chosen),
    }
    return PassResult([change], figures=figures)


PASS = PassSpec(
    name="prune",
    plan=plan_prune,
    summary="exponential policy: archive by age, effective score and top N per owner",
    order=80,
    scope="active",
    columns=("importance", "owner"),
    param_sets=("exponential",),
)
