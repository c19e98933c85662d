"""Forward migrations of a PostgreSQL store: POSTGRES_MIGRATIONS[v] takes it from schema v to
v + 1, all of them in one transaction (PostgreSQL's DDL is transactional)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from memory_console.store import schema
from memory_console.store.connection import Connection
from memory_console.store.errors import StoreError
from memory_console.store.migrations import add_due_index, add_namespace, make_partial_indexes
from memory_console.store.postgres import schema as pg_schema
from memory_console.store.postgres.dialect import WRITE_LOCK_KEY


def postgres_search_and_vector_tables(conn: Any) -> None:
    """Schema 8 on PostgreSQL: the partial indexes, the keyword index's own table in place
    of memory's generated column, and one vector per distinct text for the HNSW index
    (store/postgres/schema.py, SEARCH_SCHEMA and VECTOR_SCHEMA, say why)."""
    make_partial_indexes(conn)
    for statement in pg_schema.SEARCH_SCHEMA:
        conn.execute(statement)
    # The generated column holds the same tsvector: taken as it is, not computed again.
    conn.execute(
        f"INSERT INTO {pg_schema.SEARCH_TABLE} (memory_id, search) SELECT id, search FROM memory"
    )
    conn.execute("ALTER TABLE memory DROP COLUMN search")  # and its GIN index
    conn.execute("DROP INDEX IF EXISTS ix_embedding_hnsw")
    for statement in pg_schema.VECTOR_SCHEMA[1:]:  # the column is there since schema 7
        conn.execute(statement)
    conn.execute(
        f"INSERT INTO {pg_schema.VECTOR_TABLE} (model_id, content_hash, embedding) "
        "SELECT DISTINCT ON (model_id, content_hash) model_id, content_hash, embedding "
        "FROM embedding WHERE embedding IS NOT NULL ORDER BY model_id, content_hash, memory_id"
    )
    for statement in (*pg_schema.SEARCH_INDEXES, *pg_schema.VECTOR_INDEXES):
        conn.execute(statement)


def postgres_ids_live_once(conn: Any) -> None:
    """Schema 9 on PostgreSQL: sequences never hand an id out twice, but a load that gave ids
    set them to the largest id left; they now start above every id any event, link or run
    names, and are never moved back (store/ids.py)."""
    pg_schema.raise_sequences(conn)


# PostgreSQL stores begin at schema 7 (store/postgres/schema.py, FIRST_SCHEMA): each later
# version adds its step here as well as to store/migrations.py, so both backends move through
# the same versions.
POSTGRES_MIGRATIONS: dict[int, Callable[[Any], None]] = {
    7: postgres_search_and_vector_tables,
    8: postgres_ids_live_once,
    9: add_namespace,
    10: add_due_index,
}


def migrate(conn: Connection, where: str, version: int) -> None:
    """Run every forward migration and the version's update in one transaction (PostgreSQL's
    DDL is transactional): the store ends at its old schema or fully migrated. No copy is
    made: the operator backs the database up (pg_dump) before upgrading the program."""
    conn.execute("BEGIN")
    try:
        conn.execute("SELECT pg_advisory_xact_lock(?)", (WRITE_LOCK_KEY,))
        # Read again under the lock: another process opening the store at the same time may
        # have migrated it while this one waited, and its steps must not run twice.
        row = conn.execute("SELECT value FROM console_meta WHERE key = 'schema_version'").fetchone()
        version = int(row[0]) if row else version
        for step in range(version, schema.SCHEMA_VERSION):
            if step not in POSTGRES_MIGRATIONS:
                raise StoreError(f"{where}: no migration from schema {step}")
            POSTGRES_MIGRATIONS[step](conn)
        conn.execute(
            "UPDATE console_meta SET value = ? WHERE key = 'schema_version'",
            (str(schema.SCHEMA_VERSION),),
        )
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
