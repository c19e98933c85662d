"""SQLModel tables: the schema of a memory-console store (the single source of its DDL).

Times are stored as REAL unix seconds (UTC): decay and sorting work on them as plain numbers,
and numpy loads a million of them without parsing. The Store converts them at its edges.
Importing this module imports SQLModel (about a second), so only schema creation and
migration import it; everyday reads and writes go through the Store's sqlite3 connection.
"""

from __future__ import annotations

from sqlmodel import Field, SQLModel


class MemoryBase(SQLModel):
    """Fields a caller provides when it adds a memory."""

    owner: str = Field(default="default", index=True)
    topic: str = Field(default="general", index=True)
    tier: str = Field(default="long_term", index=True)
    memory_type: str = Field(default="episodic", index=True)
    title: str = Field(default="", index=True)
    content: str
    keywords: str = Field(default="[]", description="JSON list of keywords")
    source: str = Field(default="manual")
    importance: float = Field(default=0.5, ge=0, le=1, index=True)
    confidence: float = Field(default=1.0, ge=0, le=1, index=True)
    base_confidence: float = Field(default=1.0, ge=0, le=1)
    retrieval_count: int = Field(default=0, ge=0, index=True)
    created_at: float = Field(index=True)
    updated_at: float = Field(index=True)
    last_accessed_at: float | None = Field(default=None, index=True)
    decay_policy: str = Field(default="standard", index=True)
    is_protected: bool = Field(default=False, index=True)
    status: str = Field(default="active", index=True)
    consolidated_into: int | None = Field(default=None)  # indexed: EXTRA_INDEXES
    meta: str = Field(default="{}", sa_column_kwargs={"name": "metadata"})
    external_id: str | None = Field(default=None)  # indexed: EXTRA_INDEXES


class Memory(MemoryBase, table=True):
    """One remembered fact, event or habit. `revision` grows with every change (stale plans)."""

    __tablename__ = "memory"
    # Ids live once (schema 9): a deleted row's id is never handed out again (store/ids.py).
    __table_args__ = {"sqlite_autoincrement": True}
    id: int | None = Field(default=None, primary_key=True)
    revision: int = Field(default=0)
    # The memory that states this fact's newer value (schema 5; docs/ARCHITECTURE.md, "Data
    # model"): set with status archived by Store.supersede, cleared by its undo or a restore.
    superseded_by: int | None = Field(default=None)  # indexed: EXTRA_INDEXES
    # Where in its agent's own hierarchy the memory lives (schema 10): a LangGraph item's
    # namespace without the owner's label, its labels joined by "." (which no label holds).
    # NULL: the memory is in no namespace, as every memory not written through LangGraph.
    namespace: str | None = Field(default=None)  # indexed: EXTRA_INDEXES
    # The due index (schema 11; docs/ARCHITECTURE.md, "The due index"): the earliest time a
    # time-driven maintenance pass could change this memory as it stands, under the store's
    # settings. NULL: not known, so due now; every write of the memory sets it NULL, and each
    # applied run computes it again for the memories it read. Infinity: no such pass ever
    # will, until the memory is written. Internal: no record, export or plan carries it.
    due_at: float | None = Field(default=None)  # indexed: EXTRA_INDEXES


class MemoryEvent(SQLModel, table=True):
    """One change to a memory, by a person or a pass, with the values before and after."""

    __tablename__ = "memory_event"
    # Ids live once (schema 9): a deleted row's id is never handed out again (store/ids.py).
    __table_args__ = {"sqlite_autoincrement": True}
    id: int | None = Field(default=None, primary_key=True)
    memory_id: int
    at: float = Field(index=True)
    actor: str
    kind: str = Field(index=True)
    before: str | None = Field(default=None, description="JSON object of fields before")
    after: str | None = Field(default=None, description="JSON object of fields after")
    run_id: int | None = Field(default=None, index=True)
    query: str | None = Field(default=None, description="the query that retrieved the memory")
    scores: str | None = Field(default=None, description="JSON score breakdown of an access")
    # Schema 6: `at` is the clock time the change was written; a maintenance change also keeps
    # the (possibly simulated) time its run was evaluated at. NULL: the same as `at`.
    evaluated_at: float | None = Field(default=None)


class MaintenanceRun(SQLModel, table=True):
    """One applied maintenance plan: what ran, with which parameters, and what it changed."""

    __tablename__ = "maintenance_run"
    # Ids live once (schema 9): a deleted row's id is never handed out again (store/ids.py).
    __table_args__ = {"sqlite_autoincrement": True}
    id: int | None = Field(default=None, primary_key=True)
    started_at: float
    now: float = Field(description="the real or simulated time the plan was evaluated at")
    passes: str = Field(description="JSON list of pass names")
    policy: str
    params: str = Field(description="JSON object of every parameter")
    counts: str = Field(description="JSON object of counts per kind of change")
    changed: int = 0
    duration_ms: int = 0
    actor: str = "cli"
    undone_at: float | None = None
    undo_report: str | None = Field(default=None, description="JSON: what undo could not restore")


class Embedding(SQLModel, table=True):
    """A memory's embedding, kept out of the memory row so decay updates stay narrow."""

    __tablename__ = "embedding"
    memory_id: int = Field(primary_key=True)
    model_id: str = Field(index=True)
    content_hash: str = Field(index=True)
    vector: bytes


class ConsoleMeta(SQLModel, table=True):
    """Key/value facts about the store itself (which application wrote it, the embedder...)."""

    __tablename__ = "console_meta"
    key: str = Field(primary_key=True)
    value: str


class VectorLog(SQLModel, table=True):
    """One change that can alter the vector index's set (schema 7): written by triggers in the
    transaction that makes it, so the index file beside the store knows what it misses."""

    __tablename__ = "vector_log"
    seq: int | None = Field(default=None, primary_key=True)
    memory_id: int


class StoreSetting(SQLModel, table=True):
    """One setting of the store that differs from its built-in default (store/settings.py)."""

    __tablename__ = "store_setting"
    key: str = Field(primary_key=True)
    value: str = Field(description="JSON value")
    changed_at: float
    changed_by: str


class StoreSettingChange(SQLModel, table=True):
    """One change of a setting, kept for `config history`: who, when, before and after."""

    __tablename__ = "store_setting_change"
    id: int | None = Field(default=None, primary_key=True)
    key: str = Field(index=True)
    before: str | None = Field(default=None, description="JSON value before; NULL: the default")
    after: str | None = Field(default=None, description="JSON value after; NULL: the default")
    at: float = Field(index=True)
    actor: str


class Erasure(SQLModel, table=True):
    """That an erasure happened (when, by whom, how many memories, the purge file's name and
    the names of the filters that chose them): never any text of what was erased."""

    __tablename__ = "erasure"
    id: int | None = Field(default=None, primary_key=True)
    at: float = Field(index=True)
    actor: str
    memories: int
    purge_file: str = Field(description="the purge file's name (beside the store, or as given)")
    selection: str = Field(description="how the memories were chosen: filter names, no values")


# Indexes beyond the columns' own (index=True above), with the SQL both databases read.
# - Sort orders used by the console and `list`; each needs an index so that keyset paging
#   reads only one page.
# - Partial indexes (schema 8) on columns that are NULL in almost every row and only ever
#   looked up by value (`= ?`, `IN (...)`, `IS NOT NULL`, which both planners match to the
#   index's WHERE): a memory without the value has no entry, so an import or a maintenance
#   run does not write an entry per memory into each (on PostgreSQL every changed row writes
#   one into every index it is in).
EXTRA_INDEXES: tuple[tuple[str, str, tuple[str, ...], str | None], ...] = (
    ("ix_memory_status_confidence", "memory", ("status", "confidence"), None),
    ("ix_memory_owner_topic", "memory", ("owner", "topic"), None),
    # the topics tree counts
    ("ix_memory_status_owner_topic", "memory", ("status", "owner", "topic"), None),
    ("ix_memory_event_memory_at", "memory_event", ("memory_id", "at"), None),
    ("ix_memory_consolidated_into", "memory", ("consolidated_into",), "IS NOT NULL"),
    ("ix_memory_external_id", "memory", ("external_id",), "IS NOT NULL"),
    ("ix_memory_superseded_by", "memory", ("superseded_by",), "IS NOT NULL"),
    # Schema 10: the namespaced memories, which the topics tree counts by owner, namespace
    # and topic (covered) and a namespace filter finds; the others have no entry.
    ("ix_memory_namespace", "memory", ("namespace", "owner", "topic", "status"), "IS NOT NULL"),
    # Schema 11: the due index; a plan reads the memories due by its time through it (NULLs,
    # then times up to `now`), and the health screen counts what falls due by a date.
    ("ix_memory_due", "memory", ("due_at",), None),
)
# The partial ones, by name (schema 8 made them partial; the migration makes them again).
PARTIAL_INDEXES = tuple(name for name, _, _, where in EXTRA_INDEXES if where)


def extra_index_statements(names: tuple[str, ...] | None = None) -> list[str]:
    """CREATE INDEX of EXTRA_INDEXES (those named, or all), as both databases read it."""
    return [
        f"CREATE INDEX {name} ON {table} ({', '.join(columns)})"
        + (f" WHERE {columns[0]} {where}" if where else "")
        for name, table, columns, where in EXTRA_INDEXES
        if names is None or name in names
    ]
