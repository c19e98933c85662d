"""The operator's edits of a plan: memories left out, merges rejected or split, as a Plan copy.

Edits only ever remove changes (or regroup a merge), so an edited plan still carries the
revisions apply checks: it is applied, refused as stale or undone like the plan it came from.
The console's review and `memory-console plan-edit` both edit through PlanEdits and edit_plan.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from memory_console.maintenance.changes import ChangeSet, NewMemory, Plan
from memory_console.maintenance.reasons import Reason, ReasonItem, Reasons

INTO = "consolidated_into"
SUPERSEDED_BY = "superseded_by"
Merge = Callable[[Sequence[int]], Mapping[str, Any]]


@dataclass(frozen=True)
class PlanEdits:
    """What the operator changed: by memory id, so the edits outlive a new plan.

    excluded: memories no pass changes in this run. apart: memories not merged (members of
    rejected groups or taken out of one) or not superseded (a rejected supersession).
    splits: sets of members moved into a group of their own.
    """

    excluded: frozenset[int] = frozenset()
    apart: frozenset[int] = frozenset()
    splits: tuple[frozenset[int], ...] = ()

    @property
    def is_empty(self) -> bool:
        return not (self.excluded or self.apart or self.splits)

    def exclude(self, ids: Iterable[int]) -> PlanEdits:
        """Leave these memories out."""
        return replace(self, excluded=self.excluded | frozenset(ids))

    def toggle_excluded(self, ids: Iterable[int]) -> PlanEdits:
        """Leave these memories out, or (when all already are) take them back in."""
        chosen = frozenset(ids)
        if chosen <= self.excluded:
            return replace(self, excluded=self.excluded - chosen)
        return self.exclude(chosen)

    def include_all(self) -> PlanEdits:
        return replace(self, excluded=frozenset())

    def reject(self, members: Iterable[int]) -> PlanEdits:
        return replace(self, apart=self.apart | frozenset(members))

    def accept(self, members: Iterable[int]) -> PlanEdits:
        """Merge (or supersede) these members again, as the plan proposed (undoes reject and
        split)."""
        chosen = frozenset(members)
        splits = tuple(s - chosen for s in self.splits if s - chosen)
        return replace(self, apart=self.apart - chosen, splits=splits)

    def split(self, members: Iterable[int]) -> PlanEdits:
        chosen = frozenset(members)
        splits = tuple(s - chosen for s in self.splits if s - chosen)
        return replace(self, splits=(*splits, chosen))


@dataclass(frozen=True)
class EditedPlan:
    """A plan after the edits, and which of the original plan's rows it still holds."""

    plan: Plan
    kept: list[np.ndarray]  # per change set of the original plan: rows still proposed
    groups: dict[int, list[int]]  # merge key -> member ids, after the edits
    kept_new: frozenset[int] = field(default_factory=frozenset)  # original merge keys kept


def merge_groups(plan: Plan) -> dict[int, list[int]]:
    """Merge key (a NewMemory key) -> its member ids, as the plan proposes."""
    return merge_groups_of(plan.new_memories, plan.change_sets)


def merge_groups_of(
    new_memories: Sequence[NewMemory], change_sets: Sequence[ChangeSet]
) -> dict[int, list[int]]:
    """merge_groups() of some of a plan's new memories and changes (a review adds those found
    since it last looked without reading the rest again)."""
    groups: dict[int, list[int]] = {key.key: [] for key in new_memories}
    for change_set in change_sets:
        if INTO not in change_set.values:
            continue
        for ident, key in zip(
            change_set.ids.tolist(), change_set.values[INTO][1].tolist(), strict=True
        ):
            if isinstance(key, int) and key in groups:
                groups[key].append(int(ident))
    return groups


def unedited(plan: Plan, groups: Mapping[int, list[int]]) -> EditedPlan:
    """What edit_plan() makes of `plan` under no edits, given its merge_groups(), without
    copying it: a review growing while planning goes on needs it after every few scopes."""
    kept = [np.ones(len(change_set), dtype=np.bool_) for change_set in plan.change_sets]
    merged = {key: list(members) for key, members in groups.items() if len(members) >= 2}
    return EditedPlan(plan, kept, merged, frozenset(merged))


def regroup(plan: Plan, edits: PlanEdits) -> dict[int, list[int]]:
    """The merge groups after the edits: members left out or apart dropped, splits made
    into groups of their own (new keys below the plan's), groups under two members gone."""
    original = merge_groups(plan)
    next_key = min(original, default=0) - 1
    groups: dict[int, list[int]] = {}
    for key, members in original.items():
        remaining = [m for m in members if m not in edits.excluded and m not in edits.apart]
        for part in edits.splits:
            moved = [m for m in remaining if m in part]
            if moved and len(moved) < len(remaining):
                remaining = [m for m in remaining if m not in part]
                groups[next_key] = moved
                next_key -= 1
        groups[key] = remaining
    return {key: members for key, members in groups.items() if len(members) >= 2}


def edit_plan(plan: Plan, edits: PlanEdits, merge: Merge | None = None) -> EditedPlan:
    """A copy of `plan` without the changes the edits take out; a merge group whose members
    changed gets its merged memory from `merge(member ids)` (the store's extractive merge)."""
    original = merge_groups(plan)
    groups = regroup(plan, edits)
    changed = {key for key, members in groups.items() if original.get(key) != members}
    if changed and merge is None:
        raise ValueError("regrouped merges need a merge function")
    member_key = {ident: key for key, members in groups.items() for ident in members}
    excluded = np.fromiter(edits.excluded, dtype=np.int64, count=len(edits.excluded))
    apart = np.fromiter(edits.apart, dtype=np.int64, count=len(edits.apart))
    kept: list[np.ndarray] = []
    change_sets: list[ChangeSet] = []
    for change_set in plan.change_sets:
        keep = ~np.isin(change_set.ids, excluded)
        if INTO in change_set.values:
            keep &= np.array([int(i) in member_key for i in change_set.ids.tolist()], dtype=bool)
        if SUPERSEDED_BY in change_set.values:
            keep &= ~np.isin(change_set.ids, apart)
        kept.append(keep)
        if keep.any():
            change_sets.append(narrowed(change_set, keep, member_key, groups, changed))
    new_memories = merged_memories(plan, groups, changed, merge)
    touched = (
        np.unique(np.concatenate([s.ids for s in change_sets]))
        if change_sets
        else np.empty(0, np.int64)
    )
    revisions = plan.touched_revisions[np.searchsorted(plan.touched_ids, touched)]
    edited = replace(
        plan,
        change_sets=change_sets,
        new_memories=new_memories,
        touched_ids=touched.astype(np.int64),
        touched_revisions=revisions,
    )
    kept_new = frozenset(key for key in original if key in groups)
    return EditedPlan(edited, kept, groups, kept_new)


def narrowed(
    change_set: ChangeSet,
    keep: np.ndarray,
    member_key: dict[int, int],
    groups: dict[int, list[int]],
    changed: set[int],
) -> ChangeSet:
    """The change set's rows under `keep`; merge targets and reasons follow the regrouping."""
    rows = np.flatnonzero(keep)
    values = {
        name: (before[rows], after[rows]) for name, (before, after) in change_set.values.items()
    }
    reasons = change_set.reasons.take(rows)
    if INTO in values and changed:
        ids = change_set.ids[rows].tolist()
        keys = [member_key[i] for i in ids]
        before, _ = values[INTO]
        values[INTO] = (before, np.array(keys, dtype=object))
        items = [
            regrouped_member(len(groups[key]), reasons.item(row))
            if key in changed
            else reasons.item(row)
            for row, key in enumerate(keys)
        ]
        reasons = Reasons.each(items)
    return ChangeSet(change_set.pass_name, change_set.kind, change_set.ids[rows], values, reasons)


def regrouped_member(size: int, previous: ReasonItem) -> ReasonItem:
    """A member's reason once review regrouped its merge: the same measure, the new size."""
    if not isinstance(previous, Reason):
        return previous
    return previous.with_values(others=size - 1, regrouped=True)


def merged_memories(
    plan: Plan, groups: dict[int, list[int]], changed: set[int], merge: Merge | None
) -> list[NewMemory]:
    """The plan's new memories still merged, with fresh merges for regrouped groups."""
    by_key = {memory.key: memory for memory in plan.new_memories}
    template = next(iter(by_key.values()), None)
    kept: list[NewMemory] = []
    for key in sorted(groups, reverse=True):
        memory = by_key.get(key)
        if key not in changed and memory is not None:
            kept.append(memory)
            continue
        assert merge is not None and template is not None
        fields = dict(merge(groups[key]))
        base = (memory or template).reason
        reason: ReasonItem = (
            Reason.of(
                base.code,
                size=len(groups[key]),
                measure=base.get("measure"),
                threshold=base.get("threshold"),
                owner=fields.get("owner"),
                topic=fields.get("topic"),
                regrouped=True,
            )
            if isinstance(base, Reason)
            else base
        )
        kept.append(NewMemory(key, template.pass_name, fields, reason, kind=template.kind))
    return kept
