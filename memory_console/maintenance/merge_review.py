"""Merge groups for review: members, pairwise similarities and the memory they would become."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from memory_console.maintenance.changes import ChangeSet, NewMemory, Plan
from memory_console.maintenance.edits import EditedPlan, PlanEdits, merge_groups
from memory_console.maintenance.params import MaintenanceParams
from memory_console.maintenance.passes.consolidate import extractive_merge
from memory_console.maintenance.reasons import Reason, ReasonItem
from memory_console.store import MemoryRecord, Store
from memory_console.store.consolidation import group_vectors


@dataclass(frozen=True)
class Part:
    """One merge a reviewed group ends as: its key, members and merged memory fields."""

    key: int
    members: list[int]
    merged: Mapping[str, Any]


@dataclass(frozen=True)
class MergeGroup:
    """One group the plan proposed, as the review shows it."""

    key: int
    number: int  # 1-based, in the plan's order
    members: list[MemoryRecord]
    similarity: np.ndarray  # [n, n], the measure between members (1 on the diagonal)
    measure: str
    reason: ReasonItem  # why the plan proposed it (worded by reason_text)
    parts: list[Part]  # the merges it ends as after the edits (none: rejected)

    def state(self, ident: int, edits: PlanEdits) -> str:
        """How the review left a member: merged (into part A, B ...), apart or excluded."""
        if ident in edits.excluded:
            return "excluded"
        for position, part in enumerate(self.parts):
            if ident in part.members:
                return f"merge {chr(65 + position)}" if len(self.parts) > 1 else "merge"
        return "apart"

    @property
    def summary(self) -> str:
        return outcome(self.parts, len(self.members))


def outcome(parts: Sequence[Part], size: int) -> str:
    """`merge`, `merge 3 of 4`, `split in 2` or `rejected`."""
    if not parts:
        return "rejected"
    if len(parts) > 1:
        return f"split in {len(parts)}"
    if len(parts[0].members) < size:
        return f"merge {len(parts[0].members)} of {size}"
    return "merge"


def merge_members(store: Store, ids: Sequence[int]) -> dict[str, Any]:
    """The memory these members become, merged as the consolidate pass merges them (the
    merge command, if any, words it when the plan is applied)."""
    records = store.get_many(list(ids))
    group = [records[i] for i in ids if i in records]
    if len(group) < 2:
        raise ValueError("a merge needs two memories that still exist")
    return extractive_merge(group)


def keyword_similarity(records: Sequence[MemoryRecord]) -> np.ndarray:
    sets = [frozenset(k.lower() for k in r.keywords) for r in records]
    size = len(sets)
    matrix = np.eye(size)
    for i in range(size):
        for j in range(i + 1, size):
            union = len(sets[i] | sets[j])
            matrix[i, j] = matrix[j, i] = len(sets[i] & sets[j]) / union if union else 0.0
    return matrix


def similarities(
    store: Store, records: Sequence[MemoryRecord], reason: ReasonItem
) -> tuple[np.ndarray, str]:
    """Pairwise cosine of the stored embeddings when the plan grouped by them; for a group of
    exact duplicates, ones; else (vectors gone since) keyword Jaccard."""
    if isinstance(reason, Reason) and reason.get("measure") == "same text":
        return np.ones((len(records), len(records))), "same text"
    if isinstance(reason, Reason) and reason.get("measure") == "cosine":
        found = group_vectors(store, [r.id for r in records])
        if found is not None and len(found[0]) == len(records):
            ids, matrix = found
            order = {int(i): n for n, i in enumerate(ids.tolist())}
            vectors = matrix[[order[r.id] for r in records]].astype(np.float64)
            norms = np.linalg.norm(vectors, axis=1, keepdims=True)
            vectors = vectors / np.where(norms == 0, 1.0, norms)
            return vectors @ vectors.T, "cosine"
    return keyword_similarity(records), "keyword Jaccard"


def parts_by_group(
    plan: Plan, edited: EditedPlan, proposed: Mapping[int, list[int]] | None = None
) -> dict[int, list[Part]]:
    """Per group `plan` proposes (its merge_groups(), when the caller has them), the merges
    the edited plan makes of its members."""
    proposed = merge_groups(plan) if proposed is None else proposed
    origin = {ident: key for key, members in proposed.items() for ident in members}
    merged = {memory.key: memory.fields for memory in edited.plan.new_memories}
    parts: dict[int, list[Part]] = {key: [] for key in proposed}
    for key, members in sorted(edited.groups.items(), reverse=True):
        if key in merged and members and members[0] in origin:
            parts[origin[members[0]]].append(Part(key, members, merged[key]))
    return parts


def load_group(store: Store, plan: Plan, edited: EditedPlan, key: int) -> MergeGroup:
    """One group `plan` proposes, its members read from the store, and what the edited
    plan merges of it."""
    proposed = merge_groups(plan)
    number = sum(1 for other in proposed if other > key) + 1
    reason: ReasonItem = next((m.reason for m in plan.new_memories if m.key == key), "")
    records = store.get_many(proposed[key])
    members = [records[i] for i in proposed[key] if i in records]
    matrix, measure = similarities(store, members, reason)
    return MergeGroup(
        key, number, members, matrix, measure, reason, parts_by_group(plan, edited)[key]
    )


def partial_plan(
    params: MaintenanceParams,
    now: float,
    store_path: str,
    new_memories: Sequence[NewMemory],
    change_sets: Sequence[ChangeSet],
) -> Plan:
    """The merges found so far while a plan is being made, as a plan to review (never to
    apply: its revisions are not read); the plan made in the end replaces it."""
    ids = [change_set.ids for change_set in change_sets]
    touched = np.unique(np.concatenate(ids)) if ids else np.empty(0, np.int64)
    return Plan(
        passes=("consolidate",),
        params=params,
        now=now,
        store_path=store_path,
        change_sets=list(change_sets),
        new_memories=list(new_memories),
        figures={},
        touched_ids=touched.astype(np.int64),
        touched_revisions=np.zeros(len(touched), np.int64),
        planned_at=0.0,
    )
