"""The SQL that differs between SQLite and PostgreSQL, one class per backend: SQLite's here,
PostgreSQL's in store/postgres/dialect.py.

The Store writes one statement for both where the two databases agree (most of them), and
asks its Dialect for the pieces where they do not: index hints, NULL order, JSON, text search,
string aggregation, how a write transaction begins, and the bulk writes each does its own way
(rows inserted, a plan's updates, its indexes while it rewrites many rows).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING, Any

from memory_console.store.records import (
    EVENT_INSERT,
    INSERT_COLUMNS,
    WRITE_MARKS,
    with_evaluated_at,
)
from memory_console.store.search_text import fts_query

if TYPE_CHECKING:
    import numpy as np

    from memory_console.store.connection import Connection

# console_meta's count of a PostgreSQL store's committed write transactions.
COMMIT_COUNT_KEY = "commit_count"
# How long one attempt at a write transaction waits for the writers' lock, on both backends
# (SQLite's busy_timeout, PostgreSQL's lock_timeout on the advisory lock); the Store makes
# LOCK_RETRIES attempts, then says the store is busy.
WRITE_WAIT_MS = 5000
REBUILD_FRACTION = 0.25  # rebuild an index rather than update it row by row above this share

EMBEDDING_UPSERT = (
    "INSERT INTO embedding (memory_id, model_id, content_hash, vector) VALUES (?, ?, ?, ?) "
    "ON CONFLICT(memory_id) DO UPDATE SET model_id = excluded.model_id, "
    "content_hash = excluded.content_hash, vector = excluded.vector"
)


class Dialect:
    """SQLite's SQL (the embedded default)."""

    name = "sqlite"
    # One writer at a time: BEGIN IMMEDIATE takes SQLite's write lock at once.
    begin_write: tuple[str, ...] = ("BEGIN IMMEDIATE",)
    begin_read = "BEGIN"
    # What changes when another connection commits: SQLite counts it per connection (and
    # not this connection's own commits); PostgreSQL has no such count (see below).
    data_version = "PRAGMA data_version"
    # The statement a write transaction ends with to count its commit (SQLite: none needed).
    count_commit: str | None = None
    not_indexed = "NOT INDEXED"
    # last_accessed_at of a memory never accessed, as a plan loads it (-inf, then NaN).
    never_accessed = "ifnull(last_accessed_at, -1e999)"

    def unindexed(self, column: str, sort: str | None) -> str:
        """ "+" (no index) for a column filtered by equality while sorting by another column,
        except status under confidence, which has its own (status, confidence) index."""
        if sort in (None, "id") or column == sort:
            return ""
        if column == "status" and sort == "confidence":
            return ""
        return "+"

    def session_id(self, col: str) -> str:
        """The session id in a memory's metadata (NULL when the metadata is not JSON)."""
        return (
            f"(CASE WHEN json_valid({col}metadata) "
            f"THEN json_extract({col}metadata, '$.session_id') END)"
        )

    def whole(self, expression: str) -> str:
        """The whole part of a non-negative number (SQLite's CAST truncates)."""
        return f"CAST({expression} AS INTEGER)"

    def id_list(self, where_sql: str) -> str:
        """One row, one column: the matching ids joined by commas (numpy parses them)."""
        return f"SELECT group_concat(id) FROM memory {where_sql}"

    def starts_with(self, column: str, prefix: str) -> tuple[str, list[Any]]:
        """A condition keeping rows whose `column` begins with `prefix`, case and all: a
        range of the binary collation, which the column's index serves."""
        return f"({column} >= ? AND {column} < ?)", [prefix, prefix + "\U0010ffff"]

    def text_filter(self, col: str, text: str) -> tuple[str, list[Any]] | None:
        """A condition keeping memories that hold every word of `text` (None: no word)."""
        match = fts_query(text, require_all=True)
        if not match:
            return None
        return f"{col}id IN (SELECT rowid FROM memory_fts WHERE memory_fts MATCH ?)", [match]

    def keyword_query(self, text: str, require_all: bool) -> tuple[str, bool] | None:
        """(the query parameter, whether every match holds every word) for keyword_sql, or
        None when no word is left."""
        match = fts_query(text, require_all=require_all)
        if not match:
            return None
        return match, require_all or " OR " not in match

    def keyword_sql(self, extra: str) -> str:
        """Ids and ranks (lower is better) of the newest matches, best first; parameters: the
        query, the filter's, how many newest to rank, how many to return."""
        return (
            "SELECT id, rank FROM ("
            "SELECT memory_fts.rowid AS id, bm25(memory_fts, 4.0, 1.0, 2.0) AS rank "
            "FROM memory_fts JOIN memory m ON m.id = memory_fts.rowid "
            f"WHERE memory_fts MATCH ?{extra} ORDER BY memory_fts.rowid DESC LIMIT ?"
            ") ORDER BY rank LIMIT ?"
        )

    # Vectors live in the embedding table's float32 bytes, searched by the index beside the
    # store (embed/), not by SQL.
    vectors_in_database = False
    embedding_upsert = EMBEDDING_UPSERT

    def vector_params(self, vector: bytes) -> tuple[Any, ...]:
        """The parameters embedding_upsert takes after the float32 bytes."""
        return ()

    def vectors_by_hash(self, marks: str) -> str:
        """One (content hash, vector) per hash asked for; parameters: the model, the hashes.

        `+model_id` keeps SQLite off the model_id index, which every row shares (one model):
        through it, each remember scanned the whole table (85 ms at 100,000 memories), while
        the content_hash index finds the few rows asked for (0.04 ms)."""
        return (
            "SELECT content_hash, vector FROM embedding WHERE +model_id = ? "
            f"AND content_hash IN ({marks}) GROUP BY content_hash"
        )

    # Maintenance's apply: a larger page cache while a plan is written (undone after).
    apply_cache: tuple[str, str] | None = ("PRAGMA cache_size", "PRAGMA cache_size = {}")
    # Each memory's vector copied to a merged memory of the same text, unless it has one.
    copy_vector = (
        "INSERT OR IGNORE INTO embedding (memory_id, model_id, content_hash, vector) "
        "SELECT n.id, e.model_id, e.content_hash, e.vector FROM embedding e "
        "JOIN memory s ON s.id = e.memory_id JOIN memory n ON n.id = ? "
        "WHERE e.memory_id = ? AND s.title = n.title AND s.content = n.content "
        "AND s.keywords = n.keywords"
    )
    # "Differs, NULL included" (SQLite's IS NOT; PostgreSQL's IS DISTINCT FROM).
    is_not = "IS NOT"
    # A join SQLite runs in the order written (its CROSS JOIN); PostgreSQL's planner orders.
    join_in_order = "CROSS JOIN"

    def id_table(self) -> str:
        """A table expression of one column, `value`, holding the integers of one parameter
        (id_values' form of them)."""
        return "json_each(?) AS j"

    def id_values(self, ids: list[int]) -> Any:
        return json.dumps(ids)

    def nearest_sql(self, extra: str, exact: bool) -> str:
        raise NotImplementedError("an SQLite store's vectors are searched by embed/'s index")

    # A topic without an owner: the status's owners named first (one index seek each), so
    # that SQLite seeks its (status, owner, topic) index per owner (Store.ids_matching).
    seeks_owners = True
    # A `consolidated` event's after.consolidated_into (NULL when it is not JSON).
    consolidated_into = "CAST(json_extract(after, '$.consolidated_into') AS INTEGER)"
    # The text index's rows of some memories: FTS5 keeps one per document beside the content
    # it reads.
    text_index_rows = "SELECT count(*) FROM memory_fts_docsize WHERE id IN ({marks})"

    def erasure_xid(self, conn: Connection) -> str:
        """The erasure's own transaction id, which VACUUM waits on (SQLite has none)."""
        return ""

    def insert_memories(self, conn: Connection, rows: Sequence[dict[str, Any]]) -> list[int]:
        """Insert checked memory rows (INSERT_COLUMNS, an `id` where given) at revision 0, in
        the transaction that is open; returns their ids in order."""
        columns = ("id", *INSERT_COLUMNS)
        marks = ", ".join("?" * len(columns))
        sql = (
            f"INSERT INTO memory ({', '.join(columns)}, revision) VALUES ({marks}, 0) RETURNING id"
        )
        given = [column for column in columns if column != "id"]
        sql_without_id = (
            f"INSERT INTO memory ({', '.join(given)}, revision) "
            f"VALUES ({', '.join('?' * len(given))}, 0) RETURNING id"
        )
        ids: list[int] = []
        for row in rows:
            if row.get("id") is None:
                cursor = conn.execute(sql_without_id, [row[c] for c in INSERT_COLUMNS])
            else:
                cursor = conn.execute(sql, [row["id"]] + [row[c] for c in INSERT_COLUMNS])
            ids.append(int(cursor.fetchone()[0]))
        return ids

    def insert_events(self, conn: Connection, rows: Iterable[tuple[Any, ...]]) -> None:
        """Event rows (Store.write_events' form) in the transaction that is open: executemany
        on SQLite, whose statements run in-process."""
        conn.executemany(EVENT_INSERT, with_evaluated_at(rows))

    def number_columns(
        self,
        conn: Connection,
        where: str,
        params: dict[str, Any],
        names: Sequence[str],
        select: Sequence[str],
        dtype: np.dtype,
    ) -> np.ndarray | None:
        """The memories `where` keeps as numpy columns `names` (each SELECTed as `select`
        says), in id order, when the backend has a faster way than rows of tuples; None: read
        them as tuples (SQLite's rows cost no round trip)."""
        return None

    def rebuilt_indexes(
        self, conn: Connection, columns: Iterable[str], rows_changed: int
    ) -> AbstractContextManager[None]:
        """Inside a write transaction: when a plan rewrites a large share of the table, drop the
        indexes over the changed columns and rebuild them from their stored definitions
        afterwards.

        Updating an index row by row costs a B-tree seek per entry (measured: 590,000
        confidence updates took 14 s CPU with the two confidence indexes, 3 s without them,
        and rebuilding both took 4 s). The drop and the rebuild belong to the caller's
        transaction: a crash or an error rolls them back with everything else. PostgreSQL's
        own way is store/postgres/bulk.py's text_index_merged_once.
        """
        return rebuilt_sqlite_indexes(conn, columns, rows_changed)

    def update_memories(
        self,
        conn: Connection,
        fields: Sequence[str],
        rows: Iterable[Sequence[Any]],
        *,
        check_revision: bool,
        bump: bool = True,
    ) -> int:
        """store/bulk.py's update_memories once its fields are checked: a statement per row,
        in-process on SQLite. `bump`: the write changes the memory (its revision grows and it
        is due: records.WRITE_MARKS); without, only the store's own columns change."""
        assignments = ", ".join(f"{name} = ?" for name in fields)
        if bump:
            assignments += f", {WRITE_MARKS}"
        where = "id = ? AND revision = ?" if check_revision else "id = ?"
        cursor = conn.executemany(f"UPDATE memory SET {assignments} WHERE {where}", rows)
        return int(cursor.rowcount)

    def current_values(
        self, conn: Connection, ids: Sequence[int], fields: Sequence[str]
    ) -> dict[int, tuple[Any, ...]]:
        """The present values of `fields` for the memories `ids` that still exist."""
        select = ", ".join(f"m.{name}" for name in fields)
        conn.execute("CREATE TEMP TABLE IF NOT EXISTS maintenance_ids (id INTEGER PRIMARY KEY)")
        conn.execute("DELETE FROM maintenance_ids")
        conn.executemany(
            "INSERT OR IGNORE INTO maintenance_ids (id) VALUES (?)", ((int(i),) for i in ids)
        )
        rows = conn.execute(
            f"SELECT m.id, {select} FROM maintenance_ids t JOIN memory m ON m.id = t.id"
        ).fetchall()
        conn.execute("DELETE FROM maintenance_ids")
        return {row[0]: tuple(row[1:]) for row in rows}


def table_rows(conn: Connection) -> int:
    return int(conn.execute("SELECT count(*) FROM memory").fetchone()[0])


def indexes_on(conn: Connection, columns: Iterable[str]) -> list[tuple[str, str]]:
    """(name, CREATE statement) of the memory table's own indexes that cover any of `columns`."""
    wanted = set(columns)
    found = []
    for name, sql in conn.execute(
        "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'memory' "
        "AND sql IS NOT NULL ORDER BY name"
    ):
        covered = {row[2] for row in conn.execute(f"PRAGMA index_info('{name}')")}
        if covered & wanted:
            found.append((name, sql))
    return found


@contextmanager
def rebuilt_sqlite_indexes(
    conn: Connection, columns: Iterable[str], rows_changed: int
) -> Iterator[None]:
    """Dialect.rebuilt_indexes on SQLite."""
    total = table_rows(conn)
    dropped: list[tuple[str, str]] = []
    if total and rows_changed > REBUILD_FRACTION * total:
        dropped = indexes_on(conn, columns)
        for name, _ in dropped:
            conn.execute(f'DROP INDEX "{name}"')
    yield
    for _, sql in dropped:
        conn.execute(sql)


SQLITE = Dialect()


def of(conn: object) -> Dialect:
    """The dialect of a connection the Store hands its modules: PostgreSQL's connection
    names its own; an sqlite3 connection has none."""
    found = getattr(conn, "dialect", SQLITE)
    return found if isinstance(found, Dialect) else SQLITE
