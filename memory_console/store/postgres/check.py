"""`check` on a PostgreSQL store: the checks of store/check.py that have a PostgreSQL meaning, under
the same names. PostgreSQL has no integrity_check of its own and no FTS5 index to compare:
what can drift is the schema (a dropped index or column, an index left invalid), amcheck's
view of the B-trees where the extension is installed, the keyword index's table against the
memories' text, the rows of memories that are gone, pgvector's column against the float32
bytes beside it, and the table of distinct vectors against both."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from memory_console.store import schema
from memory_console.store.check_rows import (
    CheckResult,
    check_events,
    check_orphan_vectors,
    check_vector_sizes,
)
from memory_console.store.errors import StoreError
from memory_console.store.postgres.connection import APPLICATION
from memory_console.store.postgres.schema import (
    EMBEDDING_DIMENSIONS,
    SEARCH_TABLE,
    TEXT_INDEX,
    TEXT_SEARCH_CONFIG,
    VECTOR_INDEX,
    VECTOR_TABLE,
)

if TYPE_CHECKING:
    from memory_console.store.connection import Connection
    from memory_console.store.store import Store

VECTOR_BATCH = 2000  # vectors compared per statement (two copies of each travel)
SEARCH_TRIGGERS = ("memory_search_ai", "memory_search_ad", "memory_search_au")
VECTOR_TRIGGERS = (
    "embedding_vector_ai",
    "embedding_vector_au_add",
    "embedding_vector_au_drop",
    "embedding_vector_ad",
)


def check_header(conn: Connection, result: CheckResult) -> None:
    meta = dict(
        conn.execute(
            "SELECT key, value FROM console_meta WHERE key IN ('application', 'schema_version')"
        ).fetchall()
    )
    if meta.get("application") != APPLICATION:
        result.add(
            f"console_meta names the application {meta.get('application')!r}, not {APPLICATION!r}"
        )
    version = meta.get("schema_version")
    if version != str(schema.SCHEMA_VERSION):
        result.add(f"schema version is {version}, not {schema.SCHEMA_VERSION}")


def expected_indexes() -> dict[str, str]:
    """Every index the schema makes, by name: the table it indexes."""
    from memory_console.store import tables

    found = {
        str(index.name): table.name
        for table in tables.SQLModel.metadata.sorted_tables
        for index in table.indexes
    }
    for name, table, _, _ in tables.EXTRA_INDEXES:
        found[name] = table
    found[TEXT_INDEX] = SEARCH_TABLE
    found[VECTOR_INDEX] = VECTOR_TABLE
    return found


def check_schema(conn: Connection, result: CheckResult) -> None:
    """The tables and columns the SQLModel tables declare, PostgreSQL's own columns, every
    index (valid: an interrupted CREATE INDEX CONCURRENTLY or REINDEX leaves one that no
    query uses), and the vector extension."""
    from memory_console.store import tables

    columns: dict[str, set[str]] = {}
    for table, column in conn.execute(
        "SELECT table_name, column_name FROM information_schema.columns "
        "WHERE table_schema = current_schema()"
    ):
        columns.setdefault(table, set()).add(column)
    for table in tables.SQLModel.metadata.sorted_tables:
        if table.name not in columns:
            result.add(f"table {table.name} is missing")
            continue
        for column in table.columns:
            if column.name not in columns[table.name]:
                result.add(f"column {table.name}.{column.name} is missing")
    for table, what in ((SEARCH_TABLE, "keyword"), (VECTOR_TABLE, "semantic")):
        if table not in columns:
            result.add(f"table {table} is missing: {what} search has nothing to read")
    kind = conn.execute(
        "SELECT format_type(a.atttypid, a.atttypmod) FROM pg_attribute AS a "
        "WHERE a.attrelid = to_regclass('embedding') AND a.attname = 'embedding' "
        "AND NOT a.attisdropped"
    ).fetchone()
    wanted = f"vector({EMBEDDING_DIMENSIONS})"
    if "embedding" in columns and (kind is None or kind[0] != wanted):
        result.add(
            f"column embedding.embedding is {kind[0] if kind else 'missing'}, not {wanted}: "
            "semantic search has no vectors to rank"
        )
    if conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'").fetchone() is None:
        result.add("the vector extension is missing (a superuser runs CREATE EXTENSION vector)")
    present = {
        name: (table, valid)
        for name, table, valid in conn.execute(
            "SELECT c.relname, t.relname, i.indisvalid AND i.indisready FROM pg_index AS i "
            "JOIN pg_class AS c ON c.oid = i.indexrelid JOIN pg_class AS t ON t.oid = i.indrelid "
            "WHERE t.relnamespace = current_schema()::regnamespace"
        )
    }
    for name, table in sorted(expected_indexes().items()):
        if name not in present:
            result.add(f"index {name} on {table} is missing")
        elif not present[name][1]:
            result.add(f"index {name} is invalid: no query uses it; REINDEX INDEX {name}")


def check_integrity(store: Store, result: CheckResult) -> None:
    """amcheck's B-tree check (and its GIN check, PostgreSQL 18) of every index of the
    store's tables, when the extension is installed: it only reads."""
    conn = store.connection
    if conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'amcheck'").fetchone() is None:
        result.skipped = (
            "needs the amcheck extension (a superuser runs CREATE EXTENSION amcheck); "
            "PostgreSQL has no integrity check without it"
        )
        return
    gin = conn.execute("SELECT to_regproc('gin_index_check') IS NOT NULL").fetchone()[0]
    indexes = conn.execute(
        "SELECT c.oid, c.relname, am.amname FROM pg_index AS i "
        "JOIN pg_class AS c ON c.oid = i.indexrelid JOIN pg_class AS t ON t.oid = i.indrelid "
        "JOIN pg_am AS am ON am.oid = c.relam "
        "WHERE t.relnamespace = current_schema()::regnamespace AND i.indisvalid "
        "ORDER BY c.relname"
    ).fetchall()
    for oid, name, method in indexes:
        call = {"btree": "bt_index_check", "gin": "gin_index_check" if gin else None}.get(method)
        if call is None:
            continue
        conn.execute("SAVEPOINT amcheck")
        try:
            conn.execute(f"SELECT {call}(?::oid)", (oid,))
        except StoreError as error:
            conn.execute("ROLLBACK TO SAVEPOINT amcheck")
            if "permission denied" in str(error):
                result.skipped = f"the role may not run amcheck ({error})"
                return
            result.add(f"index {name}: {error}")
        conn.execute("RELEASE SAVEPOINT amcheck")


def index_method(conn: Connection, name: str) -> tuple[str, str] | None:
    """(access method, definition) of the index `name`; None when there is none."""
    row = conn.execute(
        "SELECT am.amname, pg_get_indexdef(c.oid) FROM pg_class AS c "
        "JOIN pg_am AS am ON am.oid = c.relam WHERE c.oid = to_regclass(?)",
        (name,),
    ).fetchone()
    return (str(row[0]), str(row[1])) if row is not None else None


def add_counts(result: CheckResult, *counts: tuple[int, str]) -> None:
    """One problem per non-zero count: "COUNT WHAT"."""
    for count, what in counts:
        if count:
            result.add(f"{count} {what}")


def missing_triggers(conn: Connection, table: str, names: tuple[str, ...]) -> list[str]:
    """The triggers of `names` that `table` lacks (or holds disabled)."""
    found = {
        row[0]
        for row in conn.execute(
            "SELECT tgname FROM pg_trigger WHERE tgrelid = to_regclass(?) AND tgenabled <> 'D'",
            (table,),
        )
    }
    return [name for name in names if name not in found]


def check_text_index(conn: Connection, result: CheckResult) -> None:
    """memory_search holds one tsvector per memory, the one its text makes now (the search
    configuration's words, weighted title, keywords, content), kept by memory's triggers and
    indexed by GIN."""
    if conn.execute("SELECT to_regclass(?)", (SEARCH_TABLE,)).fetchone()[0] is None:
        result.add(f"table {SEARCH_TABLE} is missing: keyword search has nothing to read")
        return
    function = conn.execute(
        "SELECT pg_get_functiondef(to_regprocedure('memory_search_vector(text, text, text)'))"
    ).fetchone()[0]
    words = ("title", "keywords", "content", f"'{TEXT_SEARCH_CONFIG}'")
    if function is None or not all(w in function for w in words):
        result.add(
            "function memory_search_vector is missing or not the tsvector of title, keywords "
            "and content: keyword search cannot be kept in step"
        )
        return
    left = missing_triggers(conn, "memory", SEARCH_TRIGGERS)
    if left:
        result.add(
            f"trigger {', '.join(left)} on memory is missing or disabled: keyword search misses "
            "new, edited or erased memories"
        )
    missing, orphans, stale = conn.execute(
        "SELECT count(*) FILTER (WHERE s.memory_id IS NULL), "
        "count(*) FILTER (WHERE m.id IS NULL), "
        "count(*) FILTER (WHERE s.search <> memory_search_vector(m.title, m.keywords, m.content)) "
        f"FROM memory AS m FULL JOIN {SEARCH_TABLE} AS s ON s.memory_id = m.id"
    ).fetchone()
    add_counts(
        result,
        (missing, "memories have no entry in the keyword index: keyword search misses them"),
        (orphans, "keyword index entries belong to no memory"),
        (stale, "keyword index entries differ from their memory's text: found by old words"),
    )
    method = index_method(conn, TEXT_INDEX)
    if method is None:
        result.add(f"index {TEXT_INDEX} is missing: keyword search scans every memory")
    elif method[0] != "gin" or "(search)" not in method[1]:
        result.add(f"index {TEXT_INDEX} is not GIN on {SEARCH_TABLE}.search: {method[1]}")


def check_vectors(conn: Connection, result: CheckResult) -> None:
    """As on SQLite, then pgvector's column against the float32 bytes: a vector without its
    column is never found by semantic search, and one that differs ranks by another text."""
    import numpy as np

    check_orphan_vectors(conn, result)
    check_vector_sizes(conn, result)
    (missing,) = conn.execute("SELECT count(*) FROM embedding WHERE embedding IS NULL").fetchone()
    if missing:
        result.add(
            f"{missing} vectors have no value in pgvector's column: semantic search skips them"
        )
    method = index_method(conn, VECTOR_INDEX)
    if method is None:
        result.add(f"index {VECTOR_INDEX} is missing: semantic search scans every vector")
    elif method[0] != "hnsw" or "vector_cosine_ops" not in method[1]:
        result.add(f"index {VECTOR_INDEX} is not HNSW by cosine: {method[1]}")
    check_distinct_vectors(conn, result)
    after = -1
    while True:
        rows = conn.execute(
            "SELECT memory_id, vector, vector_send(embedding) FROM embedding "
            "WHERE embedding IS NOT NULL AND memory_id > ? ORDER BY memory_id LIMIT ?",
            (after, VECTOR_BATCH),
        ).fetchall()
        for memory_id, stored, sent in rows:
            # vector_send: the dimension (int16), an unused int16, then big-endian float4s.
            dimensions = int.from_bytes(sent[:2], "big")
            floats = np.frombuffer(bytes(stored), "<f4") if len(stored) % 4 == 0 else None
            if floats is None or dimensions != len(floats):
                result.add(
                    f"memory {memory_id}: pgvector's column has {dimensions} dimensions, its "
                    f"bytes {len(stored)} ({len(stored) / 4:g} float32)"
                )
            elif not np.array_equal(floats, np.frombuffer(bytes(sent[4:]), ">f4")):
                result.add(f"memory {memory_id}: pgvector's column differs from its float32 bytes")
        if len(rows) < VECTOR_BATCH:
            return
        after = rows[-1][0]


def check_distinct_vectors(conn: Connection, result: CheckResult) -> None:
    """embedding_vector holds each text's vector once: one row for every model and content
    hash that a memory's vector has, equal to it, and none that no memory has."""
    if conn.execute("SELECT to_regclass(?)", (VECTOR_TABLE,)).fetchone()[0] is None:
        return  # check_schema said so
    left = missing_triggers(conn, "embedding", VECTOR_TRIGGERS)
    if left:
        result.add(
            f"trigger {', '.join(left)} on embedding is missing or disabled: semantic search "
            "misses new vectors or keeps erased ones"
        )
    missing, differ = conn.execute(
        "SELECT count(DISTINCT (e.model_id, e.content_hash)) FILTER (WHERE v.model_id IS NULL), "
        "count(DISTINCT (e.model_id, e.content_hash)) "
        "FILTER (WHERE v.embedding <> e.embedding) "
        f"FROM embedding AS e LEFT JOIN {VECTOR_TABLE} AS v "
        "ON v.model_id = e.model_id AND v.content_hash = e.content_hash "
        "WHERE e.embedding IS NOT NULL"
    ).fetchone()
    (orphans,) = conn.execute(
        f"SELECT count(*) FROM {VECTOR_TABLE} AS v WHERE NOT EXISTS (SELECT 1 FROM embedding "
        "AS e WHERE e.model_id = v.model_id AND e.content_hash = v.content_hash "
        "AND e.embedding IS NOT NULL)"
    ).fetchone()
    add_counts(
        result,
        (missing, "texts' vectors are missing from the HNSW table: semantic search misses them"),
        (differ, "texts' vectors in the HNSW table differ from their memories' vectors"),
        (orphans, "vectors in the HNSW table belong to no memory (an erased text's, perhaps)"),
    )


POSTGRES_CHECKS: tuple[tuple[str, str, Callable[[Store, CheckResult], None]], ...] = (
    ("header", "application and schema version", lambda s, r: check_header(s.connection, r)),
    (
        "schema",
        "tables, columns, indexes and the vector extension",
        lambda s, r: check_schema(s.connection, r),
    ),
    ("integrity", "amcheck's check of the indexes", check_integrity),
    (
        "text_index",
        "the keyword index's table, its triggers and its GIN index",
        lambda s, r: check_text_index(s.connection, r),
    ),
    ("events", "events whose memory or run is gone", lambda s, r: check_events(s.connection, r)),
    (
        "vectors",
        "vectors whose memory is gone, sizes, pgvector's column, the HNSW table and index",
        lambda s, r: check_vectors(s.connection, r),
    ),
)
