"""Plain, immutable read models the Store hands out (no ORM objects cross its door), the
columns they are read from and written in, and ids taken in chunks for `IN (...)` lists."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from memory_console.store.schema import column_names, columns

# Columns the store keeps for itself: the due index (maintenance reads and writes it through
# store/bulk.py); no record, import, export or copy carries them.
INTERNAL_COLUMNS = ("due_at",)
# What every write of a memory sets beside its fields: its revision grows (a plan made before
# is stale) and it is due (the due index computes its next change again).
WRITE_MARKS = "revision = revision + 1, due_at = NULL"
# Column order of the memory table as the Store selects it (and MemoryRecord holds it).
MEMORY_COLUMNS = tuple(
    name for name in column_names("memory", key_first=True) if name not in INTERNAL_COLUMNS
)
MEMORY_SELECT = ", ".join(MEMORY_COLUMNS)
# Columns holding JSON text, which records and events carry parsed.
JSON_COLUMNS = ("keywords", "metadata")
# Columns holding a flag, kept as 0 or 1 and carried as a bool.
FLAG_COLUMNS = tuple(column.name for column in columns("memory") if column.type == "bool")
KEYWORDS_AT, PROTECTED_AT, METADATA_AT = (
    MEMORY_COLUMNS.index(name) for name in ("keywords", "is_protected", "metadata")
)
EVENT_COLUMNS = column_names("memory_event")
EVENT_SELECT = ", ".join(EVENT_COLUMNS)
# Every column a caller may give when adding a memory (the Store assigns id and revision).
INSERT_COLUMNS = tuple(c for c in MEMORY_COLUMNS if c not in ("id", "revision"))
# An event row as written: every column but the id, in table order.
EVENT_FIELDS = tuple(name for name in EVENT_COLUMNS if name != "id")
EVENT_INSERT = (
    f"INSERT INTO memory_event ({', '.join(EVENT_FIELDS)}) "
    f"VALUES ({', '.join('?' * len(EVENT_FIELDS))})"
)
EVENT_WIDTH = len(EVENT_FIELDS)
CHUNK = 900  # ids per IN (...): under SQLite's 999 bound variables of old builds
T = TypeVar("T")


def with_evaluated_at(rows: Iterable[tuple[Any, ...]]) -> Iterator[tuple[Any, ...]]:
    """Event rows completed with a NULL evaluated_at where they lack one."""
    for row in rows:
        yield row if len(row) == EVENT_WIDTH else (*row, None)


def chunks(items: Sequence[T]) -> Iterator[tuple[list[T], str]]:
    """(chunk of items, its '?,?,...' marks) in CHUNK-sized pieces."""
    for start in range(0, len(items), CHUNK):
        part = list(items[start : start + CHUNK])
        yield part, ",".join("?" * len(part))


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
    superseded_by: int | None = None  # the newer memory that restates this fact
    namespace: str | None = None  # where in its agent's hierarchy it lives (LangGraph's)

    @classmethod
    def from_row(cls, row: tuple[Any, ...]) -> MemoryRecord:
        values = list(row)
        values[KEYWORDS_AT] = json.loads(values[KEYWORDS_AT] or "[]")
        values[PROTECTED_AT] = bool(values[PROTECTED_AT])
        values[METADATA_AT] = json.loads(values[METADATA_AT] or "{}")
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
    # The (possibly simulated) time a maintenance run evaluated this change at; `at` is the
    # clock time it was written. None: the same as `at`.
    evaluated_at: float | None = None

    @property
    def evaluated(self) -> float:
        """The time this change was evaluated at (its run's `now`, else when it was made)."""
        return self.at if self.evaluated_at is None else self.evaluated_at

    def as_json(self) -> dict[str, Any]:
        """The event as exports and `show --json` carry it (times in ISO 8601); a change
        evaluated at another time than it was written also carries `evaluated_at`."""
        from memory_console.timeutil import to_iso

        out: dict[str, Any] = {
            "at": to_iso(self.at),
            "actor": self.actor,
            "kind": self.kind,
            "before": self.before,
            "after": self.after,
            "run_id": self.run_id,
            "query": self.query,
            "scores": self.scores,
        }
        if self.evaluated_at is not None:
            out["evaluated_at"] = to_iso(self.evaluated_at)
        return out

    @classmethod
    def from_row(cls, row: tuple[Any, ...]) -> EventRecord:
        ident, memory_id, at, actor, kind, before, after, run_id, query, scores, evaluated = row
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
            evaluated,
        )


@dataclass(frozen=True, slots=True)
class MemoryFilter:
    """What the console's filter bar and `list` narrow the memories to; None means any."""

    owner: str | None = None
    # Only memories in this namespace (exactly; "" for memories in none).
    namespace: str | None = None
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
    tiers: tuple[str, ...] | None = None  # any of these tiers
    # Working and short-term memories of this session only (metadata.session_id); the other
    # tiers are not tied to a session and pass (docs/ARCHITECTURE.md, "Memory banks").
    session_id: str | None = None
    # Memories with at least one event by this actor (an MCP client's mcp:CLIENT@OWNER, api,
    # tui, cli, a pass): what one agent or person stored, recalled or changed.
    actor: str | None = None


@dataclass(frozen=True, slots=True)
class PlaceCount:
    """How many memories one owner holds in one namespace (None: in none) and topic."""

    owner: str
    namespace: str | None
    topic: str
    count: int


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
    undone: list[int] = field(default_factory=list)  # an undo's memories already undone before
