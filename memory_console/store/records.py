"""Plain, immutable read models the Store hands out (no ORM objects cross its door)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

# Column order of the memory table as the Store selects it.
MEMORY_COLUMNS = (
    "id",
    "owner",
    "topic",
    "tier",
    "memory_type",
    "title",
    "content",
    "keywords",
    "source",
    "importance",
    "confidence",
    "base_confidence",
    "retrieval_count",
    "created_at",
    "updated_at",
    "last_accessed_at",
    "decay_policy",
    "is_protected",
    "status",
    "consolidated_into",
    "metadata",
    "external_id",
    "revision",
)
MEMORY_SELECT = ", ".join(MEMORY_COLUMNS)


@dataclass(frozen=True, slots=True)
class MemoryRecord:
    """One memory as read from the store; times are unix seconds (UTC)."""

    id: int
    owner: str
    topic: str
    tier: str
    memory_type: str
    title: str
    content: str
    keywords: list[str]
    source: str
    importance: float
    confidence: float
    base_confidence: float
    retrieval_count: int
    created_at: float
    updated_at: float
    last_accessed_at: float | None
    decay_policy: str
    is_protected: bool
    status: str
    consolidated_into: int | None
    metadata: dict[str, Any]
    external_id: str | None
    revision: int

    @classmethod
    def from_row(cls, row: tuple[Any, ...]) -> MemoryRecord:
        values = list(row)
        values[7] = json.loads(values[7] or "[]")
        values[17] = bool(values[17])
        values[20] = json.loads(values[20] or "{}")
        return cls(*values)

    def as_dict(self) -> dict[str, Any]:
        """All fields by name (times still unix seconds)."""
        return {name: getattr(self, name) for name in MEMORY_COLUMNS}


@dataclass(frozen=True, slots=True)
class EventRecord:
    """One row of a memory's history."""

    id: int
    memory_id: int
    at: float
    actor: str
    kind: str
    before: dict[str, Any]
    after: dict[str, Any]
    run_id: int | None
    query: str | None
    scores: dict[str, Any] | None

    def as_json(self) -> dict[str, Any]:
        """The event as exports and `show --json` carry it (times in ISO 8601)."""
        from memory_console.timeutil import to_iso

        return {
            "at": to_iso(self.at),
            "actor": self.actor,
            "kind": self.kind,
            "before": self.before,
            "after": self.after,
            "run_id": self.run_id,
            "query": self.query,
            "scores": self.scores,
        }

    @classmethod
    def from_row(cls, row: tuple[Any, ...]) -> EventRecord:
        ident, memory_id, at, actor, kind, before, after, run_id, query, scores = row
        return cls(
            ident,
            memory_id,
            at,
            actor,
            kind,
            json.loads(before) if before else {},
            json.loads(after) if after else {},
            run_id,
            query,
            json.loads(scores) if scores else None,
        )


EVENT_SELECT = "id, memory_id, at, actor, kind, before, after, run_id, query, scores"


@dataclass(frozen=True, slots=True)
class MemoryFilter:
    """What the console's filter bar and `list` narrow the memories to; None means any."""

    owner: str | None = None
    topic: str | None = None
    tier: str | None = None
    memory_type: str | None = None
    status: str | None = None
    decay_policy: str | None = None
    is_protected: bool | None = None
    min_confidence: float | None = None
    max_confidence: float | None = None
    text: str | None = None
    ids: tuple[int, ...] | None = None


@dataclass(frozen=True, slots=True)
class Cursor:
    """Where a keyset page ended: the sort value and id of its last row."""

    value: Any
    id: int


@dataclass(frozen=True, slots=True)
class Page:
    """One page of memories and the cursor of the next one (None on the last page)."""

    rows: list[MemoryRecord]
    next_cursor: Cursor | None


@dataclass(frozen=True, slots=True)
class ChangeResult:
    """What a person's action did: which ids changed and which were already so or missing."""

    changed: list[int] = field(default_factory=list)
    unchanged: list[int] = field(default_factory=list)
    missing: list[int] = field(default_factory=list)
