"""Bulk loads into a new or empty PostgreSQL database, in one transaction holding the writers'
lock: the demo's rows (store/bulk_load.py builds SQLite's) and a whole store's copy
(store/copy.py), through COPY, with the indexes built once after the rows."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from memory_console.store import schema
from memory_console.store.bulk_load import CHUNK, Progress, Rows
from memory_console.store.digest import (
    FRESH_META,
    TABLES,
    Digest,
    check_same,
    count_rows,
    delete_copied_meta,
)
from memory_console.store.errors import StoreError
from memory_console.store.postgres.connection import APPLICATION, Connection
from memory_console.store.postgres.dialect import WRITE_LOCK_KEY, vector_literal
from memory_console.store.postgres.schema import (
    index_statements,
    set_sequences,
    table_names,
    write_schema,
)
from memory_console.store.postgres.url import shown_url
from memory_console.store.records import EVENT_FIELDS, MEMORY_COLUMNS
from memory_console.store.schema import column_names


@contextmanager
def bulk_writer(url: str) -> Iterator[tuple[Connection, str, set[str]]]:
    """(connection, URL as shown, the database's tables) for a bulk load into `url` (the demo,
    a copy): one transaction holding the writers' lock, committed when the block ends,
    rolled back if it raises; the connection is closed either way."""
    conn = Connection(url, read_only=False)
    try:
        conn.execute("BEGIN")
        conn.execute("SELECT pg_advisory_xact_lock(?)", (WRITE_LOCK_KEY,))
        yield conn, shown_url(url), table_names(conn)
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    finally:
        conn.close()


def refuse_filled(
    conn: Connection, where: str, tables: set[str], fresh_meta: Sequence[str], what: str
) -> None:
    """A database that holds tables takes a bulk load (`what`: a copy, the demo) only when it
    is an empty store of ours at this schema: no rows but the store facts in `fresh_meta`."""
    if not schema.OUR_TABLES <= tables:
        raise StoreError(
            f"{where}: not empty (tables: {', '.join(sorted(tables)[:5])}); {what} goes into "
            "a new or empty database; nothing was written"
        )
    row = conn.execute("SELECT value FROM console_meta WHERE key = 'application'").fetchone()
    found = conn.execute("SELECT value FROM console_meta WHERE key = 'schema_version'").fetchone()
    if (
        row is None
        or row[0] != APPLICATION
        or found is None
        or int(found[0]) != schema.SCHEMA_VERSION
    ):
        raise StoreError(
            f"{where}: holds another application's or another version's tables; {what} goes "
            "into a new or empty database; nothing was written"
        )
    filled = [table for table in TABLES if table != "console_meta" and count_rows(conn, table)]
    kept = (*fresh_meta, "created_at")
    extra = conn.execute(
        f"SELECT count(*) FROM console_meta WHERE key NOT IN ({', '.join('?' * len(kept))})",
        list(kept),
    ).fetchone()
    if filled or (extra is not None and extra[0]):
        held = ", ".join(f"{count_rows(conn, t):,} {t}" for t in filled) or "store facts"
        raise StoreError(
            f"{where}: not empty ({held}); {what} goes into a new or empty store; "
            "nothing was written"
        )


def load_new_postgres(url: str, memories: Rows, events: Rows, progress: Progress) -> None:
    """load_new_store's twin for a new or empty PostgreSQL database: in one transaction, the
    tables, every memory and event through COPY, then the indexes once (a sorted build,
    faster than keeping them up to date row by row) and the sequences past the ids."""
    with bulk_writer(url) as (conn, where, tables):
        if tables:
            refuse_filled(
                conn, where, tables, ("application", "schema_version", "store_id"), "the demo"
            )
        else:
            write_schema(conn, with_indexes=False)
        for lo in range(0, memories.count, CHUNK):
            progress("memories", lo / memories.count)
            conn.copy_rows("memory", MEMORY_COLUMNS, memories.rows(lo, lo + CHUNK))
        for lo in range(0, events.count, CHUNK):
            progress("events", lo / events.count)
            conn.copy_rows("memory_event", EVENT_FIELDS, events.rows(lo, lo + CHUNK))
        statements = index_statements() if not tables else []
        for done, statement in enumerate(statements):
            progress("indexes", done / len(statements))
            conn.execute(statement)
        progress("finishing", 0.0)
        set_sequences(conn)


def copy_into(url: str, rows: Callable[[str], Iterator[tuple[Any, ...]]]) -> Digest:
    """store/copy.py's copy into the new or empty PostgreSQL database `url`: in one
    transaction holding the writers' lock, the tables, every row through COPY, then the
    indexes and the sequences; verified before it commits."""
    with bulk_writer(url) as (conn, where, tables):
        fresh = not tables
        if fresh:
            write_schema(conn, with_indexes=False)
        else:
            refuse_filled(conn, where, tables, FRESH_META, "a copy")
        read = Digest()
        for table in TABLES:
            names = column_names(table, key_first=True)
            given = read.rows(table, rows(table))
            if table == "console_meta":
                delete_copied_meta(conn)
            if table == "embedding":
                # pgvector's column, from the float32 bytes (the PostgreSQL store's twin).
                conn.copy_rows(
                    table,
                    (*names, "embedding"),
                    ((*row, vector_literal(row[3])) for row in given),
                )
            else:
                conn.copy_rows(table, names, given)
        if fresh:
            for statement in index_statements():
                conn.execute(statement)
        set_sequences(conn)
        back = Digest()
        for table in TABLES:
            back.read(conn, table)
        check_same(read, back, where)  # raises: the block rolls the copy back
    return back
