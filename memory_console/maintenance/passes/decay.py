"""The decay pass: confidence decays under the chosen policy (exponential prunes instead)."""

from __future__ import annotations

from typing import Any

import numpy as np

from memory_console.maintenance.changes import ChangeSet, PassResult, Reasons
from memory_console.maintenance.frame import Frame
from memory_console.maintenance.params import POLICY, MaintenanceParams
from memory_console.maintenance.passes.prune import plan_prune
from memory_console.maintenance.reasons import grouped_reasons
from memory_console.maintenance.registry import PassSpec
from memory_console.policies import (
    SECONDS_PER_DAY,
    DecayResult,
    PeriodicParams,
    RelevanceParams,
    archive_reasons,
    decay_reasons,
    is_aggressive,
    periodic_archive,
    periodic_decay,
    periodic_eligible,
    promotion_candidates,
    relevance_decay,
    relevance_eligible,
)


def plan_decay(frame: Frame, params: MaintenanceParams, now: float) -> PassResult:
    """Lower each eligible memory's confidence to its value at `now`, computed from its
    base_confidence (so the same `now` twice changes nothing the second time).

    Decay only ever lowers confidence. Semantic memories never decay, under any policy.
    """
    if params.policy == "exponential":
        return plan_prune(frame, params, now, pass_name="decay")
    if params.policy == "periodic":
        result = plan_periodic(frame, params.of(PeriodicParams), now)
    else:
        result = plan_relevance(frame, params.of(RelevanceParams), now)
    result.figures["promotion_candidates"] = count_candidates(frame, params)
    return result


def plan_relevance(frame: Frame, p: RelevanceParams, now: float) -> PassResult:
    decay_policy = frame.column("decay_policy")
    decayed = relevance_decay(
        frame.column("base_confidence"),
        frame.column("retrieval_count"),
        frame.column("last_accessed_at"),
        frame.column("created_at"),
        is_aggressive(decay_policy),
        now,
        p,
    )
    eligible = relevance_eligible(
        frame.column("status"),
        decay_policy,
        frame.column("is_protected"),
        frame.column("memory_type"),
        decayed.periods,
    )
    current = frame.column("confidence")
    rows = np.flatnonzero(eligible & (decayed.confidence < current))
    change = decayed_set(frame, rows, current, decayed.confidence, decayed)
    frame.record(change)
    return PassResult([change], figures={"eligible": int(eligible.sum()), "decayed": len(rows)})


def plan_periodic(frame: Frame, p: PeriodicParams, now: float) -> PassResult:
    """Weekly decay; a memory falling below archive_below is archived (at its new value)."""
    decayed = periodic_decay(
        frame.column("base_confidence"),
        frame.column("last_accessed_at"),
        frame.column("created_at"),
        now,
        p,
    )
    eligible = periodic_eligible(
        frame.column("status"),
        frame.column("decay_policy"),
        frame.column("is_protected"),
        decayed.periods,
    ) & (frame.column("memory_type") != "semantic")
    current = frame.column("confidence").copy()
    new = np.minimum(decayed.confidence, current)
    lowered = eligible & (new < current)
    archive = eligible & periodic_archive(new, p)
    sets = [decayed_set(frame, np.flatnonzero(lowered & ~archive), current, new, decayed)]
    for rows, with_confidence in (
        (np.flatnonzero(archive & lowered), True),
        (np.flatnonzero(archive & ~lowered), False),
    ):
        values = {"status": (np.full(rows.shape, "active"), np.full(rows.shape, "archived"))}
        if with_confidence:
            values = {"confidence": (current[rows], new[rows]), **values}
        reasons = Reasons.each(archive_reasons(new[rows], p))
        sets.append(ChangeSet.build("decay", "archived", frame.ids[rows], values, reasons))
    for change in sets:
        frame.record(change)
    figures = {
        "eligible": int(eligible.sum()),
        "decayed": int(lowered.sum()),
        "archived": int(archive.sum()),
    }
    return PassResult(sets, figures=figures)


def decayed_set(
    frame: Frame, rows: np.ndarray, current: np.ndarray, new: np.ndarray, decayed: DecayResult
) -> ChangeSet:
    """Confidence changes of `rows`, with reasons such as "3 periods since last access at
    rate 0.958" built once per distinct (periods, rate, never accessed)."""
    last = frame.column("last_accessed_at")[rows]
    periods, rate = decayed.periods[rows], decayed.rate[rows]
    reasons = grouped_reasons(
        [periods, rate, np.isnan(last)],
        lambda first: decay_reasons(periods[first], rate[first], last[first]),
    )
    return ChangeSet.build(
        "decay", "decayed", frame.ids[rows], {"confidence": (current[rows], new[rows])}, reasons
    )


def count_candidates(frame: Frame, params: MaintenanceParams) -> int:
    """Promotion candidates among the loaded rows, at their confidence after this decay."""
    return int(
        promotion_candidates(
            frame.column("memory_type"),
            frame.column("retrieval_count"),
            frame.column("confidence"),
            frame.column("decay_policy"),
            frame.column("is_protected"),
            params.of(RelevanceParams),
            status=frame.column("status"),
        ).sum()
    )


def decay_scope(params: MaintenanceParams) -> str:
    return "active" if params.policy == "exponential" else "decaying"


def decay_rows(params: MaintenanceParams, now: float) -> tuple[str, dict[str, Any]] | None:
    """Rows this pass can change or count: a full period since the anchor (one second of
    slack for rounding) or a possible promotion candidate. Exponential prunes: every row."""
    if params.policy == "exponential":
        return None
    if params.policy == "periodic":
        period_days = params.of(PeriodicParams).period_days
    else:
        period_days = params.of(RelevanceParams).period_days
    condition = (
        "coalesce(last_accessed_at, created_at) <= :decay_cutoff "
        "OR (memory_type = 'episodic' AND retrieval_count >= :decay_retrievals)"
    )
    return condition, {
        "decay_cutoff": now - period_days * SECONDS_PER_DAY + 1.0,
        "decay_retrievals": params.of(RelevanceParams).promote_min_retrievals,
    }


PASS = PassSpec(
    name="decay",
    plan=plan_decay,
    summary="lower confidence under the chosen policy (exponential: prune)",
    order=40,
    scope=decay_scope,
    param_sets=(POLICY, "relevance"),
    narrow=decay_rows,
)
