"""Supersessions for review: each proposed pair, and the merge command's proposed decision.

The supersede pass proposes pairs (an older memory archived in favour of a newer one); the
merge review lists them beside the merge groups, and the operator accepts or rejects each
(PlanEdits.reject / accept on the older memory's id). Where the operator configured the
merge command, it is asked for a decision on each pair; its answer and reason go into the
pair's reason, so the applied event records them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from memory_console.maintenance.changes import ChangeSet, Plan
from memory_console.maintenance.command import Budget, ask, sensitive_problem, text_problem
from memory_console.maintenance.edits import SUPERSEDED_BY, PlanEdits
from memory_console.maintenance.reasons import Reason, ReasonItem, Reasons
from memory_console.store import MemoryRecord, Store
from memory_console.store.consolidation import group_vectors

DECISIONS = ("supersede", "keep")
REASON_LENGTH = 300  # characters of the command's reason kept in the pair's reason


@dataclass(frozen=True)
class SupersedePair:
    """One proposed supersession as the review shows it."""

    old: MemoryRecord
    new: MemoryRecord
    number: int  # 1-based, in the plan's order
    cosine: float | None  # of the stored embeddings, when there are
    reason: ReasonItem

    def state(self, edits: PlanEdits) -> str:
        """supersede (as proposed), rejected or excluded."""
        if self.old.id in edits.excluded:
            return "excluded"
        return "rejected" if self.old.id in edits.apart else "supersede"


def supersessions(plan: Plan) -> dict[int, tuple[int, ReasonItem]]:
    """Older memory id -> (the newer memory's id, the reason), as the plan proposes."""
    found: dict[int, tuple[int, ReasonItem]] = {}
    for change_set in plan.change_sets:
        if SUPERSEDED_BY not in change_set.values:
            continue
        afters = change_set.values[SUPERSEDED_BY][1].tolist()
        for row, (ident, new) in enumerate(zip(change_set.ids.tolist(), afters, strict=True)):
            if new is not None:
                found[int(ident)] = (int(new), change_set.reasons.item(row))
    return found


def pair_cosine(store: Store, old: int, new: int) -> float | None:
    found = group_vectors(store, [old, new])
    if found is None or len(found[0]) != 2:
        return None
    vectors = found[1].astype(np.float64)
    norms = np.linalg.norm(vectors, axis=1)
    if not norms.all():
        return None
    return float(vectors[0] @ vectors[1] / (norms[0] * norms[1]))


def load_pair(store: Store, plan: Plan, old: int) -> SupersedePair:
    """One pair `plan` proposes, both memories read from the store."""
    proposed = supersessions(plan)
    new, reason = proposed[old]
    records = store.get_many([old, new])
    if old not in records or new not in records:
        raise ValueError(f"#{old} or #{new} is no longer in the store")
    number = sorted(proposed).index(old) + 1
    return SupersedePair(records[old], records[new], number, pair_cosine(store, old, new), reason)


def ask_command(
    command: str,
    old: MemoryRecord,
    new: MemoryRecord,
    reason: ReasonItem,
    budget: Budget | None = None,
) -> dict[str, Any]:
    """The command's decision on one pair as reason values: proposed (supersede or keep) and
    proposal_reason, or merge_command_failure (and its detail) when it gave none or its
    reason is refused as an agent's write would be (a credential, a control character)."""
    payload = {
        "task": "supersede",
        "old": memory_payload(old),
        "new": memory_payload(new),
        "differences": reason.get("differences") if isinstance(reason, Reason) else None,
    }
    answer, failure = ask(command, payload, budget or Budget())
    if failure is not None:
        return failure.values()
    if not (isinstance(answer, dict) and answer.get("decision") in DECISIONS):
        return {"merge_command_failure": "incomplete"}
    why = answer.get("reason")
    if why is not None and not isinstance(why, str):
        return {"merge_command_failure": "incomplete"}
    why = (why or "").strip()[:REASON_LENGTH]
    problem = text_problem({"reason": why}) or sensitive_problem([why], [old, new])
    if problem is not None:
        return {"merge_command_failure": "refused", "error": problem}
    return {"proposed": answer["decision"], "proposal_reason": why or None}


def memory_payload(record: MemoryRecord) -> dict[str, Any]:
    return {
        "id": record.id,
        "title": record.title,
        "content": record.content,
        "created_at": record.created_at,
    }


def propose_with_command(
    store: Store, plan: Plan, command: str | None, budget: Budget | None = None
) -> tuple[Plan, int]:
    """`plan` with the command's decision in the reason of each supersession not asked yet
    (every call under `budget`), and how many it gave none for. The decision is recorded,
    never carried out: the operator decides at review."""
    pairs = supersessions(plan)
    if not command or not pairs:
        return plan, 0
    budget = budget or Budget()
    records = store.get_many([i for old, (new, _) in pairs.items() for i in (old, new)])
    failures = 0
    change_sets: list[ChangeSet] = []
    for change_set in plan.change_sets:
        if SUPERSEDED_BY not in change_set.values:
            change_sets.append(change_set)
            continue
        items: list[ReasonItem] = []
        for row, ident in enumerate(change_set.ids.tolist()):
            item = change_set.reasons.item(row)
            new = pairs.get(int(ident), (None, None))[0]
            asked = isinstance(item, Reason) and (
                item.get("proposed") or item.get("merge_command_failure")
            )
            if isinstance(item, Reason) and not asked and ident in records and new in records:
                values = ask_command(command, records[ident], records[new], item, budget)
                failures += "merge_command_failure" in values
                item = item.with_values(**values)
            items.append(item)
        change_sets.append(replace(change_set, reasons=Reasons.each(items)))
    return replace(plan, change_sets=change_sets), failures


def proposal_of(reason: ReasonItem) -> str | None:
    """`the merge command proposes keep (two different dogs)`, or None."""
    if not isinstance(reason, Reason) or not reason.get("proposed"):
        return None
    why = reason.get("proposal_reason")
    return f"the merge command proposes {reason.get('proposed')}" + (f" ({why})" if why else "")
