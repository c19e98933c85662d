"""Bulk SQL behind the Store for maintenance: columns into numpy arrays, plan writes, run rows.

Where the backends differ (NOT INDEXED scans, temporary tables, dropping and rebuilding
indexes inside a write transaction, PRAGMA cache_size; COPY and UPDATE ... FROM on
PostgreSQL), this module asks the connection's Dialect (store/dialect.py, SQLite's;
store/postgres/dialect.py), so nothing in maintenance/ knows which backend it writes to.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from memory_console.store import dialect
from memory_console.store.connection import Connection
from memory_console.store.records import INSERT_COLUMNS, INTERNAL_COLUMNS
from memory_console.store.schema import column_names, columns
from memory_console.store.vocab import DECAY_POLICIES, MEMORY_TYPES, SESSION_TIERS, STATUSES

# Which rows a plan loads. Each scope contains the ones before it.
SCOPES: dict[str, str] = {
    "decaying": "status = 'active' AND is_protected = 0 "
    "AND decay_policy IN ('standard', 'aggressive') AND memory_type != 'semantic'",
    "maintainable": "status = 'active' AND is_protected = 0 AND decay_policy != 'none'",
    "active": "status = 'active'",
}


@dataclass(frozen=True)
class Rows:
    """Which memories a plan loads: a scope, optionally narrowed by a condition that the
    passes guarantee covers every row they may change or count (named SQL parameters)."""

    scope: str
    narrow: str | None = None
    params: Mapping[str, Any] = field(default_factory=dict)

    def where(self) -> str:
        base = SCOPES[self.scope]
        return f"{base} AND ({self.narrow})" if self.narrow else base


# Categorical columns travel as one small integer per row (cheap for Python to create):
# code = status + 4 * decay_policy + 32 * memory_type + 128 * is_protected, where each part
# is the value's position in its vocabulary and the last position stands for anything else.
CATEGORIES: dict[str, tuple[str, ...]] = {
    "status": STATUSES,
    "decay_policy": DECAY_POLICIES,
    "memory_type": MEMORY_TYPES,
}
CATEGORY_SHIFTS: dict[str, tuple[int, int]] = {
    "status": (1, 4),
    "decay_policy": (4, 8),
    "memory_type": (32, 4),
}
PROTECTED_BIT = 128
NEVER = -np.inf  # last_accessed_at of a memory never accessed, as loaded (NaN in the frame)

# numpy types of the table's column types (store/tables.py), as a plan loads them.
NUMPY_TYPES = {"int": "i8", "float": "f8", "bool": "i8", "str": "O"}
COLUMN_TYPES = {column.name: column.type for column in columns("memory")}
CODE_TYPE = "i4"  # the packed categorical code (not a column)
# What every plan loads, in this order; the extra columns only when a pass asks.
LOADED = (
    "id",
    "revision",
    "code",
    "confidence",
    "base_confidence",
    "retrieval_count",
    "created_at",
    "last_accessed_at",
)
BASE_COLUMNS: tuple[tuple[str, str], ...] = tuple(
    (name, CODE_TYPE if name == "code" else NUMPY_TYPES[COLUMN_TYPES[name]]) for name in LOADED
)
EXTRA_COLUMNS: dict[str, str] = {
    name: NUMPY_TYPES[COLUMN_TYPES[name]] for name in ("importance", "owner", "tier")
}
# SQLite's page cache while a plan is applied or undone, and while memories are inserted.
# An apply walks the table in id order and updates (or rebuilds) the indexes of the columns
# it changes: a 512 MiB cache made it no faster than 16 MiB (1,000,000 memories, 201,223
# changes: 6.6 s either way; 73,946 changes 2.0 s against 2.5), and held 380 MB more. An
# import inserts into twenty indexes at random places: with the default cache, a
# million-line import spent most of its time reading their pages back.
APPLY_CACHE_KIB = 16_384
INSERT_CACHE_KIB = 524_288


# The values each scope's WHERE leaves possible, so the code needs fewer comparisons.
SCOPE_VALUES: dict[str, dict[str, tuple[Any, ...]]] = {
    "decaying": {
        "status": ("active",),
        "decay_policy": ("standard", "aggressive"),
        "memory_type": ("episodic", "procedural"),
        "is_protected": (0,),
    },
    "maintainable": {"status": ("active",), "is_protected": (0,)},
    "active": {"status": ("active",)},
}


def category_sql(name: str, possible: tuple[Any, ...] | None = None) -> str:
    """SQL giving the vocabulary position of a categorical column's value (the last
    position for anything else); `possible` narrows the values the rows can hold."""
    values = CATEGORIES[name]
    if possible is None:
        cases, other = list(enumerate(values)), len(values)
    else:
        positions = [values.index(value) for value in possible]
        cases, other = [(p, values[p]) for p in positions[:-1]], positions[-1]
    if not cases:
        return str(other)
    whens = " ".join(f"WHEN '{value}' THEN {position}" for position, value in cases)
    return f"(CASE {name} {whens} ELSE {other} END)"


def code_sql(scope: str = "active") -> str:
    """The packed categorical code of a row of `scope`, as a SQL expression."""
    known = SCOPE_VALUES.get(scope, {})
    parts = [
        f"{CATEGORY_SHIFTS[name][0]} * {category_sql(name, known.get(name))}" for name in CATEGORIES
    ]
    protected = known.get("is_protected")
    flag = str(protected[0]) if protected and len(protected) == 1 else "is_protected"
    return " + ".join(parts) + f" + {PROTECTED_BIT} * {flag}"


def decode(codes: np.ndarray, name: str) -> np.ndarray:
    """Vocabulary positions of one categorical column from the packed codes."""
    if name == "is_protected":
        return (codes & PROTECTED_BIT) != 0
    shift, size = CATEGORY_SHIFTS[name]
    return (codes // shift) % size


def load_memory_arrays(
    conn: Connection, rows: Rows, extra: Sequence[str] = ()
) -> dict[str, np.ndarray]:
    """The selected rows in id order as numpy columns: id, revision, code, confidence,
    base_confidence, retrieval_count, created_at, last_accessed_at (NaN if never) and the
    `extra` ones (importance, owner, tier). One table scan; the planner's read transaction makes
    it a consistent snapshot."""
    names = [name for name, _ in BASE_COLUMNS] + list(extra)
    dtype = np.dtype(list(BASE_COLUMNS) + [(name, EXTRA_COLUMNS[name]) for name in extra])
    sql_dialect = dialect.of(conn)
    expressions = {"code": code_sql(rows.scope), "last_accessed_at": sql_dialect.never_accessed}
    select = [expressions.get(name, name) for name in names]
    # A full scan in rowid order beats walking the status index when most rows are active.
    table = None
    if all(dtype[name].kind in "if" for name in names):
        table = sql_dialect.number_columns(
            conn, rows.where(), dict(rows.params), names, select, dtype
        )
    if table is None:
        sql = (
            f"SELECT {', '.join(select)} FROM memory {sql_dialect.not_indexed} "
            f"WHERE {rows.where()} ORDER BY id"
        )
        # Row by row into the array: a list of a million tuples first held 300 MB more.
        table = np.fromiter(conn.execute(sql, dict(rows.params)), dtype=dtype)
    columns = {name: np.ascontiguousarray(table[name]) for name in names}
    last = columns["last_accessed_at"]
    last[np.isneginf(last)] = np.nan
    return columns


def load_column(conn: Connection, rows: Rows, name: str) -> np.ndarray:
    """One more column (importance, owner, tier) of the selected rows, in id order; inside the
    same snapshot it lines up with load_memory_arrays."""
    sql = (
        f"SELECT {name} FROM memory {dialect.of(conn).not_indexed} WHERE {rows.where()} ORDER BY id"
    )
    values = [row[0] for row in conn.execute(sql, dict(rows.params))]
    return np.array(values, dtype=EXTRA_COLUMNS[name])


def iter_texts(conn: Connection, rows: Rows) -> Iterator[tuple[int, str, str, str]]:
    """(id, title, content, metadata JSON) of the selected rows, in id order, read as they
    are iterated: iterate inside Store.snapshot(), which holds the lock."""
    yield from conn.execute(
        f"SELECT id, title, content, metadata FROM memory WHERE {rows.where()} ORDER BY id",
        dict(rows.params),
    )


@contextmanager
def large_cache(conn: Connection, kib: int = APPLY_CACHE_KIB) -> Iterator[None]:
    """The page cache a bulk write needs (`kib`), while it runs (SQLite only)."""
    cache = dialect.of(conn).apply_cache
    if cache is None:
        yield
        return
    read, write = cache
    previous = conn.execute(read).fetchone()[0]
    conn.execute(write.format(-kib))
    try:
        yield
    finally:
        conn.execute(write.format(int(previous)))


def rebuilt_indexes(
    conn: Connection, columns: Iterable[str], rows_changed: int
) -> AbstractContextManager[None]:
    """Inside a write transaction that rewrites `rows_changed` memories' `columns`: the indexes
    kept as the connection's backend keeps them best (Dialect.rebuilt_indexes)."""
    return dialect.of(conn).rebuilt_indexes(conn, columns, rows_changed)


# The memory columns an update may set: the schema's own names, never a name from data.
# The due index is the store's own: a plan cannot set it (write_due does).
WRITABLE_COLUMNS = frozenset(column_names("memory")) - {"id", "revision", *INTERNAL_COLUMNS}


def writable(fields: Sequence[str]) -> list[str]:
    """The fields, each checked to be one of the memory table's writable columns (a name that
    reaches SQL comes from the code's own list, whatever a plan or a caller says)."""
    names = list(fields)
    for name in names:
        if name not in WRITABLE_COLUMNS:
            raise ValueError(f"not a writable memory field: {name!r}")
    return names


def update_memories(
    conn: Connection,
    fields: Sequence[str],
    rows: Iterable[Sequence[Any]],
    *,
    check_revision: bool,
) -> int:
    """Set `fields` and bump revision for each row (values..., id[, expected revision]).

    With check_revision a row only changes if its revision is still the expected one; the
    number of rows changed tells the caller whether the plan was stale.
    """
    fields = writable(fields)
    return dialect.of(conn).update_memories(conn, fields, rows, check_revision=check_revision)


def insert_events(conn: Connection, rows: Iterable[tuple[Any, ...]]) -> None:
    """Event rows (Store.write_events' form) in the transaction that is open: one COPY on
    PostgreSQL (an INSERT per event spent 10.6 s on 224,613 of them there), executemany on
    SQLite, whose statements run in-process."""
    dialect.of(conn).insert_events(conn, rows)


ID_BITS = 40  # a memory id and its revision packed in one integer: revision << ID_BITS | id


def changed_since(conn: Connection, ids: np.ndarray, revisions: np.ndarray) -> np.ndarray:
    """Those of `ids` whose revision is no longer the matching one of `revisions`, or that no
    longer exist, in the order of `ids`.

    One pass: the ids travel as a single JSON array, each one primary-key lookup, and only
    the changed ones come back to Python (220,000 ids of a 1,000,000-memory store: 0.4 s).
    Each id and its revision travel packed in one integer when they fit.
    """
    sql_dialect = dialect.of(conn)
    wanted = np.asarray(ids, dtype=np.int64)
    expected = np.asarray(revisions, dtype=np.int64)
    if not wanted.shape[0]:
        return wanted[:0]
    mask = (1 << ID_BITS) - 1
    if (
        wanted.min() >= 0
        and wanted.max() <= mask
        and expected.min() >= 0
        and expected.max() < 1 << (63 - ID_BITS)
    ):
        rows = conn.execute(
            f"SELECT j.value & {mask} FROM {sql_dialect.id_table()} LEFT JOIN memory AS m "
            f"ON m.id = j.value & {mask} "
            f"WHERE m.revision {sql_dialect.is_not} j.value >> {ID_BITS}",
            (sql_dialect.id_values(((expected << ID_BITS) | wanted).tolist()),),
        ).fetchall()
        # In the order of `ids`, which PostgreSQL's join does not keep.
        return wanted[np.isin(wanted, np.array([row[0] for row in rows], dtype=np.int64))]
    # Beyond the packed range: every present revision back, compared here.
    rows = conn.execute(
        f"SELECT m.id, m.revision FROM {sql_dialect.id_table()} "
        f"{sql_dialect.join_in_order} memory AS m ON m.id = j.value",
        (sql_dialect.id_values(wanted.tolist()),),
    ).fetchall()
    present = dict(rows)
    return np.array(
        [
            ident
            for ident, revision in zip(wanted.tolist(), expected.tolist(), strict=True)
            if present.get(ident) != revision
        ],
        dtype=np.int64,
    )


def insert_memory(conn: Connection, row: dict[str, Any]) -> int:
    """Insert one complete, checked memory row (validate.complete_memory); returns its id."""
    sql = (
        f"INSERT INTO memory ({', '.join(INSERT_COLUMNS)}, revision) "
        f"VALUES ({', '.join('?' * len(INSERT_COLUMNS))}, 0) RETURNING id"
    )
    return int(conn.execute(sql, [row[name] for name in INSERT_COLUMNS]).fetchone()[0])


def delete_memories(conn: Connection, ids: Sequence[int]) -> None:
    conn.executemany("DELETE FROM memory WHERE id = ?", ((int(i),) for i in ids))
    conn.executemany("DELETE FROM embedding WHERE memory_id = ?", ((int(i),) for i in ids))


def current_values(
    conn: Connection, ids: Sequence[int], fields: Sequence[str]
) -> dict[int, tuple[Any, ...]]:
    """The present values of `fields` for the memories `ids` that still exist."""
    return dialect.of(conn).current_values(conn, ids, fields)


def run_events(conn: Connection, run_id: int) -> list[tuple[Any, ...]]:
    """(event id, memory id, kind, before JSON, after JSON) the run wrote, in order."""
    return conn.execute(
        "SELECT id, memory_id, kind, before, after FROM memory_event "
        "WHERE run_id = ? AND actor != 'undo' ORDER BY id",
        (run_id,),
    ).fetchall()


def events_after(conn: Connection, event_id: int) -> list[tuple[Any, ...]]:
    """(event id, memory id, kind, at, run id) of every event written after `event_id`."""
    return conn.execute(
        "SELECT id, memory_id, kind, at, run_id FROM memory_event WHERE id > ? ORDER BY id",
        (event_id,),
    ).fetchall()


# The due index (memory.due_at; docs/ARCHITECTURE.md, "The due index").
# The memories due by a plan's time (the named parameter due_now): those whose next change is
# unknown (NULL: written since a run last computed it) and those whose time has come. Both are
# ranges of ix_memory_due, and the rows are then read by id, so no plan scans the table to
# find them (SQLite's NOT INDEXED still lets rows be read by rowid).
DUE_ROWS = (
    "id IN (SELECT id FROM memory WHERE due_at IS NULL "
    "UNION ALL SELECT id FROM memory WHERE due_at <= :due_now)"
)
NEVER_DUE = float("inf")  # no time-driven pass changes the memory until it is written
DUE_KEY = "due_index"  # console_meta: the digest of the settings the times were computed under


def due_digest(conn: Connection) -> str | None:
    """The digest of the settings the stored due times hold for (None: never computed)."""
    row = conn.execute("SELECT value FROM console_meta WHERE key = ?", (DUE_KEY,)).fetchone()
    return None if row is None else str(row[0])


def set_due_digest(conn: Connection, digest: str) -> None:
    conn.execute(
        "INSERT INTO console_meta(key, value) VALUES (?, ?) "
        "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        (DUE_KEY, digest),
    )


def write_due(conn: Connection, ids: np.ndarray, due: np.ndarray) -> int:
    """Set the due times of memories (`ids`, `due` aligned), inside the write transaction
    that read them: the memories themselves do not change (no revision, no event)."""
    rows = zip(np.asarray(due, dtype=np.float64).tolist(), np.asarray(ids).tolist(), strict=True)
    return dialect.of(conn).update_memories(
        conn, ["due_at"], rows, check_revision=False, bump=False
    )


def settle_due_outside(conn: Connection, scope: str, *, now: float | None) -> int:
    """Memories outside `scope` (one of SCOPES: what the time-driven passes may change) are
    never due until written. `now`: only those due by then (what a plan read); None: every
    one (the index is computed afresh)."""
    due = "(due_at IS NULL OR due_at <= :due_now)" if now is not None else "TRUE"
    cursor = conn.execute(
        f"UPDATE memory SET due_at = :never WHERE {due} AND NOT ({SCOPES[scope]}) "
        "AND (due_at IS NULL OR due_at != :never)",
        {"never": NEVER_DUE, "due_now": now},
    )
    return int(cursor.rowcount)


def session_tiers(conn: Connection, rows: Rows, ids: np.ndarray) -> np.ndarray:
    """The tier of each of `ids` (the selected rows, in id order) as the frame holds it:
    long_term unless the row is one of the few working or short-term memories, which the
    tier index finds."""
    banks = ", ".join(f"'{tier}'" for tier in SESSION_TIERS)
    tiers = np.full(ids.shape[0], "long_term", dtype=object)
    found = conn.execute(
        f"SELECT id, tier FROM memory WHERE tier IN ({banks}) AND {rows.where()}", dict(rows.params)
    ).fetchall()
    if found:
        positions = np.searchsorted(ids, np.array([row[0] for row in found], dtype=np.int64))
        tiers[positions] = [row[1] for row in found]
    return tiers


def table_rows(conn: Connection) -> int:
    return dialect.table_rows(conn)


def id_bounds(conn: Connection) -> tuple[int, int]:
    """The lowest and highest memory id (0, 0 for an empty store)."""
    low, high = conn.execute("SELECT min(id), max(id) FROM memory").fetchone()
    return int(low or 0), int(high or 0)


def due_count(conn: Connection, scope: str, until: float) -> int:
    """How many memories of `scope` are due by `until`: what a plan then reads, found through
    the index (the rows it names are then checked against the scope by id)."""
    where = Rows(scope, DUE_ROWS).where()
    sql = f"SELECT count(*) FROM memory WHERE {where}"
    return int(conn.execute(sql, {"due_now": until}).fetchone()[0])


def due_ids(conn: Connection, scope: str, until: float, limit: int) -> list[int]:
    """The newest `limit` memories of `scope` due by `until` (as due_count counts them)."""
    where = Rows(scope, DUE_ROWS).where()
    sql = f"SELECT id FROM memory WHERE {where} ORDER BY id DESC LIMIT :n"
    return [int(row[0]) for row in conn.execute(sql, {"due_now": until, "n": limit})]
