"""What a plan proposes: changes kept as columns (a million of them stay cheap), new memories.

A pass returns a PassResult: ChangeSets (one kind of event, the same fields, many memories)
and NewMemory rows to insert. A Plan gathers the results of its passes with the revision of
every memory it touches, so apply can refuse it when any of them changed since.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from memory_console.maintenance.params import MaintenanceParams
from memory_console.maintenance.reasons import ReasonItem, Reasons, reason_text


@dataclass(frozen=True)
class Change:
    """One proposed change of one field of one memory, with a human reason."""

    id: int
    field: str
    before: Any
    after: Any
    reason: str
    pass_name: str
    kind: str


@dataclass(frozen=True)
class ChangeSet:
    """Changes of one pass and one event kind to the same fields of many memories.

    `values[field]` is (before, after), arrays aligned with `ids`; each memory gets one
    event with all these fields. An `after` of consolidated_into may be a NewMemory key
    (negative), replaced by the inserted memory's id at apply.
    """

    pass_name: str
    kind: str
    ids: np.ndarray
    values: Mapping[str, tuple[np.ndarray, np.ndarray]]
    reasons: Reasons

    def __post_init__(self) -> None:
        n = self.ids.shape[0]
        if len(self.reasons) != n or any(
            b.shape[0] != n or a.shape[0] != n for b, a in self.values.values()
        ):
            raise ValueError(f"{self.pass_name}: ids, values and reasons differ in length")

    def __len__(self) -> int:
        return int(self.ids.shape[0])

    @property
    def fields(self) -> tuple[str, ...]:
        return tuple(self.values)

    def take(self, keep: np.ndarray) -> ChangeSet:
        """The changes of the rows where the boolean mask `keep` is true."""
        values = {
            name: (before[keep], after[keep]) for name, (before, after) in self.values.items()
        }
        reasons = self.reasons.take(np.flatnonzero(keep))
        return ChangeSet(self.pass_name, self.kind, self.ids[keep], values, reasons)

    def changes(self) -> Iterator[Change]:
        """One Change per memory and field."""
        ids = self.ids.tolist()
        columns = {name: (b.tolist(), a.tolist()) for name, (b, a) in self.values.items()}
        reasons = self.reasons.tolist()
        for row, ident in enumerate(ids):
            for name, (before, after) in columns.items():
                yield Change(
                    ident, name, before[row], after[row], reasons[row], self.pass_name, self.kind
                )

    @classmethod
    def build(
        cls,
        pass_name: str,
        kind: str,
        ids: np.ndarray,
        values: Mapping[str, tuple[Any, Any]],
        reasons: Reasons | Sequence[ReasonItem],
    ) -> ChangeSet:
        """A ChangeSet from array-likes; a reason list is deduplicated."""
        ident = np.asarray(ids, dtype=np.int64).reshape(-1)
        columns = {name: (np.asarray(b), np.asarray(a)) for name, (b, a) in values.items()}
        reason_rows = reasons if isinstance(reasons, Reasons) else Reasons.each(list(reasons))
        return cls(pass_name, kind, ident, columns, reason_rows)

    @classmethod
    def from_changes(cls, pass_name: str, kind: str, changes: Sequence[Change]) -> list[ChangeSet]:
        """ChangeSets from row-wise Changes (one per field), grouped by the fields changed.

        For passes that find their changes one memory at a time (consolidate, say).
        """
        per_memory: dict[int, dict[str, Change]] = {}
        for change in changes:
            per_memory.setdefault(change.id, {})[change.field] = change
        groups: dict[tuple[str, ...], list[dict[str, Change]]] = {}
        for fields_of in per_memory.values():
            groups.setdefault(tuple(sorted(fields_of)), []).append(fields_of)
        sets = []
        for names, members in groups.items():
            ids = [next(iter(m.values())).id for m in members]
            values = {
                name: (
                    np.array([m[name].before for m in members], dtype=object),
                    np.array([m[name].after for m in members], dtype=object),
                )
                for name in names
            }
            reasons = [next(iter(m.values())).reason for m in members]
            sets.append(cls.build(pass_name, kind, np.array(ids), values, reasons))
        return sets


@dataclass(frozen=True)
class NewMemory:
    """A memory a pass creates (consolidate): fields as Store.add takes them.

    `key` is a negative placeholder id that ChangeSets may use as consolidated_into.
    `reason` is data (a Reason) or the text its pass gave; `reason_text` is what people read.
    """

    key: int
    pass_name: str
    fields: Mapping[str, Any]
    reason: ReasonItem
    kind: str = "created"

    @property
    def reason_text(self) -> str:
        return reason_text(self.reason)


@dataclass
class PassResult:
    """What one pass proposes, with its figures (eligible, decayed, flagged ...)."""

    change_sets: list[ChangeSet] = field(default_factory=list)
    new_memories: list[NewMemory] = field(default_factory=list)
    figures: dict[str, int] = field(default_factory=dict)


@dataclass
class Plan:
    """Every change the passes propose at `now`, in pass order; nothing written yet."""

    passes: tuple[str, ...]
    params: MaintenanceParams
    now: float
    store_path: str
    change_sets: list[ChangeSet]
    new_memories: list[NewMemory]
    figures: dict[str, dict[str, int]]
    touched_ids: np.ndarray
    touched_revisions: np.ndarray
    planned_at: float
    duration_ms: int = 0
    # Which memories the plan read: "due" (those the due index says are due by `now`;
    # maintenance/due.py) or "all" (the passes' whole scope), with why not the due ones,
    # and how many it read (None when no pass read any).
    read: str = "all"
    read_why: str | None = None
    rows_read: int | None = None

    @property
    def policy(self) -> str:
        return self.params.policy

    @property
    def changed(self) -> int:
        """How many distinct memories would change."""
        return int(self.touched_ids.shape[0])

    @property
    def is_empty(self) -> bool:
        return not self.new_memories and all(len(s) == 0 for s in self.change_sets)

    def changes(self) -> Iterator[Change]:
        for change_set in self.change_sets:
            yield from change_set.changes()

    def counts(self) -> dict[str, int]:
        """Memories changed per event kind (decayed, flagged, archived, promoted ...)."""
        counts: dict[str, int] = {}
        for change_set in self.change_sets:
            if len(change_set):
                counts[change_set.kind] = counts.get(change_set.kind, 0) + len(change_set)
        for memory in self.new_memories:
            counts[memory.kind] = counts.get(memory.kind, 0) + 1
        return counts

    def summary(self) -> dict[str, Any]:
        """The headline figures: eligible, decayed, flagged, archived, promoted, candidates."""
        by_kind = self.counts()
        decay = self.figures.get("decay", {})
        promote = self.figures.get("promote", {})
        return {
            "eligible": decay.get("eligible", 0),
            "decayed": decay.get("decayed", 0),
            "flagged": by_kind.get("flagged", 0),
            "archived": by_kind.get("archived", 0),
            "promoted": by_kind.get("promoted", 0),
            "consolidated": by_kind.get("consolidated", 0),
            "promotion_candidates": promote.get(
                "promotion_candidates", decay.get("promotion_candidates", 0)
            ),
            "changed": self.changed,
        }
