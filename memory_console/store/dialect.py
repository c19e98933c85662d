"""The SQL that differs between SQLite and PostgreSQL, one class per backend.

The Store writes one statement for both where the two databases agree (most of them), and
asks its Dialect for the pieces where they do not: index hints, NULL order, JSON, text search,
string aggregation and how a write transaction begins.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from memory_console.store.search_text import fts_query, terms

# console_meta's count of a PostgreSQL store's committed write transactions.
COMMIT_COUNT_KEY = "commit_count"
# How long one attempt at a write transaction waits for the writers' lock, on both backends
# (SQLite's busy_timeout, PostgreSQL's lock_timeout on the advisory lock); the Store makes
# LOCK_RETRIES attempts, then says the store is busy.
WRITE_WAIT_MS = 5000

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


class PostgresDialect(Dialect):
    """PostgreSQL's SQL (store/postgres.py holds its connection and DDL)."""

    name = "postgresql"
    # Writers queue on one advisory lock, as SQLite's one writer (postgres.WRITE_LOCK_KEY),
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
        # One vector per distinct text (embedding_vector, store/postgres.py), reached by the
        # index in distance order; each then stands for every memory of its text.
        return (
            f"SELECT e.memory_id, 1 - ({distance}) FROM embedding_vector v "
            "JOIN embedding e ON e.model_id = v.model_id AND e.content_hash = v.content_hash "
            "JOIN memory m ON m.id = e.memory_id "
            f"WHERE v.model_id = ?{extra} ORDER BY {order} LIMIT ?"
        )


def vector_literal(vector: bytes | Sequence[float]) -> str:
    """pgvector's text form of a float32 vector ("[0.1,0.2]"): each float32 written as the
    float64 that equals it, so the value read back is the same float32."""
    import numpy as np

    values = np.frombuffer(vector, np.float32) if isinstance(vector, bytes) else vector
    return "[" + ",".join(map(repr, np.asarray(values, np.float32).tolist())) + "]"


SQLITE = Dialect()
POSTGRES = PostgresDialect()


def of(conn: object) -> Dialect:
    """The dialect of a connection the Store hands its modules: PostgreSQL's connection
    names its own; an sqlite3 connection has none."""
    found = getattr(conn, "dialect", SQLITE)
    return found if isinstance(found, Dialect) else SQLITE
