"""A plan's changes as flat arrays the preview sorts, filters and shows a window of."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from memory_console.maintenance import ChangeSet, Plan

NEW = -1  # set index of a row that is a new memory (a merge)
SORTS = ("drop", "id", "pass", "reason")
SORT_NAMES = {"drop": "largest drop", "id": "id", "pass": "pass", "reason": "reason"}
MAIN_FIELDS = ("confidence", "status", "decay_policy", "memory_type")


@dataclass(frozen=True)
class RowChange:
    """One row of the preview: a memory's changes by one pass (or a new memory)."""

    id: int  # a NewMemory key (negative) for a new memory
    pass_name: str
    kind: str
    fields: dict[str, tuple[Any, Any]]
    reason: str

    @property
    def is_new(self) -> bool:
        return self.id < 0

    @property
    def main_field(self) -> str:
        return next((f for f in MAIN_FIELDS if f in self.fields), next(iter(self.fields), ""))


def main_field(change_set: ChangeSet) -> str:
    return next((f for f in MAIN_FIELDS if f in change_set.values), change_set.fields[0])


class ChangeRows:
    """One row per memory and change set of `plan`, then one per new memory, as arrays.

    Nothing here is per-row Python: a plan of 220,000 changes sorts and filters in tens of
    milliseconds, and only the window on screen becomes RowChanges.
    """

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        sets = plan.change_sets
        sizes = [len(s) for s in sets]
        self.set_index = np.concatenate(
            [np.full(n, i, np.int32) for i, n in enumerate(sizes)]
            + [np.full(len(plan.new_memories), NEW, np.int32)]
        )
        self.row = np.concatenate(
            [np.arange(n, dtype=np.int64) for n in sizes]
            + [np.arange(len(plan.new_memories), dtype=np.int64)]
        )
        self.ids = np.concatenate(
            [s.ids for s in sets] + [np.array([m.key for m in plan.new_memories], np.int64)]
        )
        self.drop = np.concatenate(
            [drops(s) for s in sets] + [np.full(len(plan.new_memories), np.nan)]
        )
        self.reason_index = np.concatenate(
            [s.reasons.index + offset for s, offset in zip(sets, self._offsets(), strict=True)]
            + [
                np.arange(len(plan.new_memories), dtype=np.int64)
                + sum(len(s.reasons.texts) for s in sets)
            ]
        )
        self.reason_texts = [t for s in sets for t in s.reasons.texts] + [
            m.reason_text for m in plan.new_memories
        ]

    def _offsets(self) -> list[int]:
        offsets, total = [], 0
        for change_set in self.plan.change_sets:
            offsets.append(total)
            total += len(change_set.reasons.texts)
        return offsets

    def __len__(self) -> int:
        return int(self.ids.shape[0])

    def kinds(self) -> list[tuple[str, str]]:
        """(value, label) of each pass and kind present, for the filter."""
        seen = dict.fromkeys(f"{s.pass_name}:{s.kind}" for s in self.plan.change_sets)
        if self.plan.new_memories:
            seen[f"{self.plan.new_memories[0].pass_name}:created"] = None
        return [(value, value.replace(":", ": ")) for value in seen]

    def matching(
        self, kind: str | None, text: str | None, kept: np.ndarray | None, left_out: bool = False
    ) -> np.ndarray:
        """Rows of a pass:kind, whose reason holds `text` (or whose id it is), and with
        left_out only those the edits took out (`kept` False)."""
        mask = np.ones(len(self), dtype=bool)
        if kind:
            pass_name, _, kind_name = kind.partition(":")
            chosen = [
                i
                for i, s in enumerate(self.plan.change_sets)
                if s.pass_name == pass_name and s.kind == kind_name
            ]
            if kind_name == "created":
                chosen.append(NEW)
            mask &= np.isin(self.set_index, chosen)
        words = (text or "").strip().lstrip("#")
        if words.isdigit():
            mask &= self.ids == int(words)
        elif words:
            hits = np.array([words.lower() in t.lower() for t in self.reason_texts], dtype=bool)
            mask &= hits[self.reason_index] if hits.size else False
        if left_out and kept is not None:
            mask &= ~kept
        return mask

    def order(self, sort: str, mask: np.ndarray) -> np.ndarray:
        """Positions of the rows under `mask` in the order `sort` (largest drop first)."""
        rows = np.flatnonzero(mask)
        if sort == "drop":
            drop = np.nan_to_num(self.drop[rows], nan=-np.inf)
            ids = self.ids[rows]
            keys: tuple[np.ndarray, ...] = (np.abs(ids), ids < 0, -drop)
        elif sort == "pass":
            keys = (self.ids[rows], self.set_index[rows] % (len(self.plan.change_sets) + 1))
        elif sort == "reason":
            order = np.argsort(np.array(self.reason_texts, dtype=object), kind="stable")
            rank = np.empty(len(order), np.int64)
            rank[order] = np.arange(len(order))
            keys = (self.ids[rows], rank[self.reason_index[rows]] if len(order) else rows)
        else:
            keys = (np.abs(self.ids[rows]), self.ids[rows] < 0)
        return rows[np.lexsort(keys)]

    def change(self, position: int) -> RowChange:
        index = int(self.set_index[position])
        row = int(self.row[position])
        reason = self.reason_texts[int(self.reason_index[position])]
        if index == NEW:
            memory = self.plan.new_memories[row]
            fields = {
                "confidence": (None, memory.fields.get("confidence")),
                "status": (None, "active"),
            }
            return RowChange(memory.key, memory.pass_name, memory.kind, fields, reason)
        change_set = self.plan.change_sets[index]
        fields = {
            name: (before[row : row + 1].tolist()[0], after[row : row + 1].tolist()[0])
            for name, (before, after) in change_set.values.items()
        }
        return RowChange(
            int(change_set.ids[row]), change_set.pass_name, change_set.kind, fields, reason
        )

    def kept_mask(self, kept: list[np.ndarray], kept_new: frozenset[int]) -> np.ndarray:
        """Per row, whether the edited plan still proposes it."""
        news = np.array([m.key in kept_new for m in self.plan.new_memories], dtype=bool)
        return np.concatenate([*kept, news]) if len(self) else np.zeros(0, dtype=bool)


def drops(change_set: ChangeSet) -> np.ndarray:
    """Confidence before minus after per row (NaN where confidence does not change)."""
    if "confidence" not in change_set.values:
        return np.full(len(change_set), np.nan)
    before, after = change_set.values["confidence"]
    return before.astype(np.float64) - after.astype(np.float64)
