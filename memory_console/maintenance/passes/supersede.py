"""The supersede pass: an older memory that a newer one of the same owner contradicts is archived.

Candidates beyond the write-time slots (agent/rules/facts.py): two active memories of one owner
whose stored embeddings are at least `min_cosine` alike and whose numbers, dates, named
entities or slot values differ (facts.differences), plus two memories of one slot with
different values that write time left active (the old one was protected). The newer one
supersedes the older: status archived, superseded_by the newer, as Store.supersede does, so
the run's undo restores both fields. Such a pair may also be two different things said alike
(Rex and Bella), so the pass is for review: the console's merge review shows its pairs, and
`maintain` does not run it unless asked.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from memory_console.agent.rules.facts import differences, same_value, slot_of
from memory_console.agent.rules.relation import NEWER, SAME, relate
from memory_console.maintenance.changes import ChangeSet, PassResult
from memory_console.maintenance.frame import Frame
from memory_console.maintenance.params import MaintenanceParams
from memory_console.maintenance.reasons import Reason
from memory_console.maintenance.registry import PassSpec
from memory_console.policies.params import PolicyParams
from memory_console.store import MemoryRecord
from memory_console.store.consolidation import candidate_rows, stored_models, vectors_of

FIELD = "superseded_by"


@dataclass(frozen=True)
class SupersedeParams(PolicyParams):
    """Supersession beyond slots: how alike two memories must be to be one fact's versions."""

    name: ClassVar[str] = "supersede"

    min_cosine: float = 0.8

    def _validate(self) -> None:
        self._check("min_cosine", 0.0, 1.0, low_open=True)


@dataclass(frozen=True)
class Pair:
    """A proposed supersession: `old` archived in favour of `new`, and why."""

    old: MemoryRecord
    new: MemoryRecord
    found_by: str  # "slot" or "cosine"
    cosine: float | None
    differences: tuple[str, ...]


def newer(a: MemoryRecord, b: MemoryRecord) -> bool:
    return (a.created_at, a.id) > (b.created_at, b.id)


def cosines(frame: Frame, members: Sequence[MemoryRecord]) -> dict[tuple[int, int], float]:
    """Pairwise cosine of the members' stored vectors (one model only), by id pair."""
    assert frame.store is not None
    models = frame.store.read(stored_models)
    if len(models) != 1 or len(members) < 2:
        return {}
    ids, _, matrix = frame.store.read(vectors_of, models[0], [m.id for m in members])
    if len(ids) < 2:
        return {}
    vectors = matrix.astype(np.float64)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    vectors = vectors / np.where(norms == 0, 1.0, norms)
    sims = vectors @ vectors.T
    order = ids.tolist()
    return {
        (order[i], order[j]): float(sims[i, j])
        for i in range(len(order))
        for j in range(i + 1, len(order))
    }


def find_pairs(frame: Frame, members: Sequence[MemoryRecord], p: SupersedeParams) -> list[Pair]:
    """One owner's pairs: for each older memory, the newest memory that supersedes it."""
    slots = {m.id: slot_of(m.content) for m in members}
    similar = cosines(frame, members)
    found_for: dict[int, list[Pair]] = {}

    ordered = sorted(members, key=lambda m: (m.created_at, m.id))
    for i, old in enumerate(ordered):
        for new in ordered[i + 1 :]:
            a, b = slots[old.id], slots[new.id]
            if a is not None and b is not None and a.slot == b.slot:
                if not same_value(a.value, b.value):
                    found: tuple[str, ...] = (f"{a.slot} {a.value} vs {b.value}",)
                    found_for.setdefault(old.id, []).append(Pair(old, new, "slot", None, found))
                continue
            key = (old.id, new.id) if old.id < new.id else (new.id, old.id)
            cosine = similar.get(key)
            if cosine is None or cosine < p.min_cosine:
                continue
            judged = relate(old.content, new.content)
            found = tuple(differences(old.content, new.content))
            if judged.kind == NEWER and not found:
                found = (judged.why,)
            if found and judged.kind != SAME:
                found_for.setdefault(old.id, []).append(Pair(old, new, "cosine", cosine, found))
    # A memory is superseded by its newest version that stays. Newest first, so each memory's
    # versions are settled before it: one whose versions are all superseded stays (a second run
    # would no longer see them), and one run is a fixed point.
    stays: set[int] = set()
    pairs = []
    for old in reversed(ordered):
        standing = [pair for pair in found_for.get(old.id, []) if pair.new.id in stays]
        if standing:
            pairs.append(max(standing, key=lambda pair: (pair.new.created_at, pair.new.id)))
        else:
            stays.add(old.id)
    return sorted(pairs, key=lambda pair: (pair.old.id, pair.new.id))


def pair_reason(pair: Pair, p: SupersedeParams) -> Reason:
    return Reason.of(
        "superseded",
        by=pair.new.id,
        found_by=pair.found_by,
        cosine=None if pair.cosine is None else round(pair.cosine, 4),
        threshold=p.min_cosine if pair.found_by == "cosine" else None,
        differences="; ".join(pair.differences),
        protected=pair.old.is_protected,
    )


def plan_supersede(frame: Frame, params: MaintenanceParams, now: float) -> PassResult:
    if frame.store is None:
        raise ValueError("the supersede pass reads memory texts: the frame needs its store")
    p = params.of(SupersedeParams)
    active = set(frame.ids.tolist())
    by_owner: dict[str, list[MemoryRecord]] = {}
    for record in frame.store.read(candidate_rows, "active"):
        if record.id in active and record.superseded_by is None:
            by_owner.setdefault(record.owner, []).append(record)
    pairs = [pair for members in by_owner.values() for pair in find_pairs(frame, members, p)]
    result = PassResult(
        figures={
            "pairs": len(pairs),
            "by_slot": sum(pair.found_by == "slot" for pair in pairs),
            "by_cosine": sum(pair.found_by == "cosine" for pair in pairs),
            "protected": sum(pair.old.is_protected for pair in pairs),
        }
    )
    if pairs:
        count = len(pairs)
        change = ChangeSet.build(
            "supersede",
            "superseded",
            np.array([pair.old.id for pair in pairs]),
            {
                "status": (np.full(count, "active"), np.full(count, "archived")),
                FIELD: (
                    np.full(count, None, dtype=object),
                    np.array([pair.new.id for pair in pairs], dtype=object),
                ),
            },
            [pair_reason(pair, p) for pair in pairs],
        )
        frame.record(change)
        result.change_sets.append(change)
    return result


PASS = PassSpec(
    name="supersede",
    plan=plan_supersede,
    summary="archive an older memory a newer one of the same owner contradicts (for review)",
    order=24,
    scope="active",
    params_class=SupersedeParams,
)
