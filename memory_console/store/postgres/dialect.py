"""PostgreSQL's Dialect: the SQL where it differs from SQLite's (store/dialect.py), and the
bulk writes and reads it does its own way (store/postgres/bulk.py)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from memory_console.store.dialect import COMMIT_COUNT_KEY, WRITE_WAIT_MS, Dialect
from memory_console.store.postgres import bulk
from memory_console.store.search_text import terms

if TYPE_CHECKING:
    import numpy as np

    from memory_console.store.connection import Connection

# Every write transaction takes this advisory lock first, so writers queue one at a time
# as SQLite's BEGIN IMMEDIATE makes them: each reads the latest committed state after the
# lock, so a read-check-write (a plan's revision check, a reinforcement) loses no write.
WRITE_LOCK_KEY = 0x4D434F4E  # "MCON", as SQLite stores' application_id


class PostgresDialect(Dialect):
    """PostgreSQL's SQL (store/postgres/ holds its connection, DDL and bulk writes)."""

    name = "postgresql"
    # Writers queue on one advisory lock, as SQLite's one writer (WRITE_LOCK_KEY),
    # each waiting WRITE_WAIT_MS at most, as long as SQLite's busy timeout; the statements
    # after it wait as the server's setting says.
    begin_write = (
        "BEGIN",
        f"SET LOCAL lock_timeout = {WRITE_WAIT_MS}",
        "SELECT pg_advisory_xact_lock(1296256846)",
        "SET LOCAL lock_timeout = DEFAULT",
    )
    # A plan reads one state of the store throughout, as a SQLite read transaction does.
    begin_read = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"
    # PostgreSQL has no data_version: every write transaction of the Store counts its commit
    # in one console_meta row, under the writers' advisory lock (Store.data_version reads it).
    data_version = f"SELECT value FROM console_meta WHERE key = '{COMMIT_COUNT_KEY}'"
    count_commit = (
        f"INSERT INTO console_meta (key, value) VALUES ('{COMMIT_COUNT_KEY}', '1') "
        "ON CONFLICT (key) DO UPDATE SET value = (console_meta.value::bigint + 1)::text "
        "RETURNING value"
    )
    not_indexed = ""
    never_accessed = "coalesce(last_accessed_at, '-Infinity'::float8)"

    def unindexed(self, column: str, sort: str | None) -> str:
        return ""  # PostgreSQL's planner chooses between the indexes itself

    def session_id(self, col: str) -> str:
        return (
            f"(CASE WHEN {col}metadata IS JSON OBJECT "
            f"THEN ({col}metadata::jsonb ->> 'session_id') END)"
        )

    def whole(self, expression: str) -> str:
        return f"floor({expression})::bigint"  # PostgreSQL's CAST rounds to the nearest

    def id_list(self, where_sql: str) -> str:
        return f"SELECT string_agg(id::text, ',') FROM memory {where_sql}"

    def starts_with(self, column: str, prefix: str) -> tuple[str, list[Any]]:
        # The database's collation need not order text byte by byte: starts_with is exact.
        return f"starts_with({column}, ?)", [prefix]

    def text_filter(self, col: str, text: str) -> tuple[str, list[Any]] | None:
        words = terms(text)
        if not words:
            return None
        return (
            f"{col}id IN (SELECT memory_id FROM memory_search "
            "WHERE search @@ plainto_tsquery('english', ?))",
            [" ".join(words)],
        )

    def keyword_query(self, text: str, require_all: bool) -> tuple[str, bool] | None:
        words = terms(text)
        if not words:
            return None
        # websearch_to_tsquery reads "or" between words as OR (and no other syntax: the
        # words hold letters, digits and apostrophes only).
        return (" " if require_all else " or ").join(words), require_all or len(words) == 1

    def keyword_sql(self, extra: str) -> str:
        # ts_rank's weights {D, C, B, A}: content 1, keywords 2, title 4, as bm25's above;
        # negated so that lower is better, as SQLite's bm25 reports it.
        return (
            "SELECT id, rank FROM ("
            "SELECT m.id AS id, -ts_rank('{0.1, 0.25, 0.5, 1.0}', s.search, q.q) AS rank "
            "FROM memory_search s JOIN memory m ON m.id = s.memory_id, "
            "(SELECT websearch_to_tsquery('english', ?) AS q) AS q "
            f"WHERE s.search @@ q.q{extra} "
            "ORDER BY m.id DESC LIMIT ?"
            ") AS newest ORDER BY rank LIMIT ?"
        )

    # pgvector's column beside the bytes is what search reads; the bytes stay for what reads
    # vectors back (the consolidation pass, reuse by content hash, export of a store).
    vectors_in_database = True
    embedding_upsert = (
        "INSERT INTO embedding (memory_id, model_id, content_hash, vector, embedding) "
        "VALUES (?, ?, ?, ?, ?::vector) ON CONFLICT(memory_id) DO UPDATE SET "
        "model_id = excluded.model_id, content_hash = excluded.content_hash, "
        "vector = excluded.vector, embedding = excluded.embedding"
    )

    def vector_params(self, vector: bytes) -> tuple[Any, ...]:
        return (vector_literal(vector),)

    # PostgreSQL's shared buffers are the server's: nothing to set per transaction.
    apply_cache = None
    copy_vector = (
        "INSERT INTO embedding (memory_id, model_id, content_hash, vector, embedding) "
        "SELECT n.id, e.model_id, e.content_hash, e.vector, e.embedding FROM embedding e "
        "JOIN memory s ON s.id = e.memory_id JOIN memory n ON n.id = ? "
        "WHERE e.memory_id = ? AND s.title = n.title AND s.content = n.content "
        "AND s.keywords = n.keywords ON CONFLICT DO NOTHING"
    )

    is_not = "IS DISTINCT FROM"
    join_in_order = "JOIN"

    def id_table(self) -> str:
        return "unnest(?::bigint[]) AS j(value)"

    def id_values(self, ids: list[int]) -> Any:
        return ids

    def vectors_by_hash(self, marks: str) -> str:
        return (
            "SELECT DISTINCT ON (content_hash) content_hash, vector FROM embedding "
            f"WHERE model_id = ? AND content_hash IN ({marks})"
        )

    def nearest_sql(self, extra: str, exact: bool) -> str:
        """Ids and cosines of the nearest vectors, nearest first; parameters: the query
        vector's literal, the model, the filter's, the literal again, how many. `exact` orders by an
        expression the HNSW index does not serve, so PostgreSQL scans every row the filter
        keeps and sorts them (cheaper than the index on a small store)."""
        distance = "v.embedding <=> ?::vector"
        order = f"({distance}) + 0" if exact else distance
        # One vector per distinct text (embedding_vector, store/postgres/schema.py), reached by the
        # index in distance order; each then stands for every memory of its text.
        return (
            f"SELECT e.memory_id, 1 - ({distance}) FROM embedding_vector v "
            "JOIN embedding e ON e.model_id = v.model_id AND e.content_hash = v.content_hash "
            "JOIN memory m ON m.id = e.memory_id "
            f"WHERE v.model_id = ?{extra} ORDER BY {order} LIMIT ?"
        )

    # Owners are no shortcut here: PostgreSQL's planner combines the indexes itself.
    seeks_owners = False
    consolidated_into = (
        "(CASE WHEN after IS JSON OBJECT THEN (after::jsonb ->> 'consolidated_into')::bigint END)"
    )
    # PostgreSQL's GIN index indexes each memory's tsvector in memory_search.
    text_index_rows = "SELECT count(*) FROM memory_search WHERE memory_id IN ({marks})"

    def erasure_xid(self, conn: Connection) -> str:
        return str(conn.execute("SELECT pg_current_xact_id()::text").fetchone()[0])

    def insert_memories(self, conn: Connection, rows: Sequence[dict[str, Any]]) -> list[int]:
        # One COPY per table and batch instead of a statement per row (store/postgres/bulk.py).
        ids = bulk.insert_memories(conn, rows)
        if any(row.get("id") is not None for row in rows):
            # Ids given by an import do not advance PostgreSQL's sequence: move it past them
            # (and never back: an id handed out before is not handed out again).
            conn.execute(
                "SELECT setval(pg_get_serial_sequence('memory', 'id'), greatest("
                "(SELECT max(id) FROM memory), nextval(pg_get_serial_sequence('memory', 'id'))))"
            )
        return ids

    def insert_events(self, conn: Connection, rows: Iterable[tuple[Any, ...]]) -> None:
        bulk.write_events(conn, rows)

    def number_columns(
        self,
        conn: Connection,
        where: str,
        params: dict[str, Any],
        names: Sequence[str],
        select: Sequence[str],
        dtype: np.dtype,
    ) -> np.ndarray | None:
        return bulk.aggregated_rows(conn, where, params, names, select, dtype)

    def rebuilt_indexes(
        self, conn: Connection, columns: Iterable[str], rows_changed: int
    ) -> AbstractContextManager[None]:
        return bulk.text_index_merged_once(conn)

    def update_memories(
        self,
        conn: Connection,
        fields: Sequence[str],
        rows: Iterable[Sequence[Any]],
        *,
        check_revision: bool,
        bump: bool = True,
    ) -> int:
        return bulk.update_memories_by_copy(
            conn, fields, rows, check_revision=check_revision, bump=bump
        )

    def current_values(
        self, conn: Connection, ids: Sequence[int], fields: Sequence[str]
    ) -> dict[int, tuple[Any, ...]]:
        # No temporary table: PostgreSQL creates none in a read-only transaction.
        select = ", ".join(f"m.{name}" for name in fields)
        rows = conn.execute(
            f"SELECT m.id, {select} FROM {self.id_table()} JOIN memory m ON m.id = j.value",
            (self.id_values(sorted({int(i) for i in ids})),),
        ).fetchall()
        return {row[0]: tuple(row[1:]) for row in rows}


def vector_literal(vector: bytes | Sequence[float]) -> str:
    """pgvector's text form of a float32 vector ("[0.1,0.2]"): each float32 written as the
    float64 that equals it, so the value read back is the same float32."""
    import numpy as np

    values = np.frombuffer(vector, np.float32) if isinstance(vector, bytes) else vector
    return "[" + ",".join(map(repr, np.asarray(values, np.float32).tolist())) + "]"


POSTGRES = PostgresDialect()
