"""Copying a whole store into a new one, on either backend, all or nothing and verified.

See docs/ARCHITECTURE.md, "Two backends" ("Moving a store"). Every table is copied with its
ids, except what belongs to one database only: vector_log (it feeds the index file beside an
SQLite store, which the copy's first search builds afresh) and the console_meta keys in
FRESH_META (store/digest.py). Before the destination commits, both sides are read back in one
canonical form, table by table in key order (store/digest.py), and the copy is kept only when
the counts and hashes agree. Into SQLite here; into PostgreSQL, store/postgres/load.py.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memory_console.store import bulk_load, db, ddl, ids
from memory_console.store.connection import Connection
from memory_console.store.digest import (
    TABLES,
    Digest,
    check_same,
    count_rows,
    delete_copied_meta,
    read_rows,
)
from memory_console.store.postgres.load import copy_into
from memory_console.store.postgres.url import is_url, shown_url
from memory_console.store.schema import column_names
from memory_console.store.vector_log import VECTOR_LOG_TRIGGER_NAMES, VECTOR_LOG_TRIGGERS

Progress = Callable[[int, int], None]  # (rows written, rows to write)


@dataclass(frozen=True)
class CopyReport:
    """What a copy wrote: rows per table, the hash of every table's rows in canonical form
    (the same read from the source and from the destination) and how long it took."""

    source: str
    destination: str
    counts: dict[str, int]
    hashes: dict[str, str]
    digest: str
    seconds: float


def copy_store(
    source: Connection,
    source_name: str,
    target: str,
    progress: Progress | None = None,
) -> CopyReport:
    """Copy every table the source connection reads (inside one read transaction, which the
    caller holds) into the new or empty store `target` (a file path or a PostgreSQL URL), in
    one transaction, verified before it commits; StoreError, with nothing written, when the
    target holds anything, when a row is refused or when the two sides read back unalike."""
    started = time.monotonic()
    report = progress or (lambda done, total: None)
    total = sum(count_rows(source, table) for table in TABLES)
    read = Digest()
    written = [0]

    def rows(table: str) -> Iterator[tuple[Any, ...]]:
        for row in read.rows(table, read_rows(source, table)):
            written[0] += 1
            if written[0] % 5000 == 0:
                report(written[0], total)
            yield row

    if is_url(target):
        shown = shown_url(target)
        back = copy_into(target, rows)
    else:
        shown = target
        back = to_sqlite(Path(target), rows)
    report(total, total)
    return CopyReport(
        source_name,
        shown,
        dict(read.counts),
        read.table_hashes(),
        back.total(),
        time.monotonic() - started,
    )


Rows = Callable[[str], Iterator[tuple[Any, ...]]]


# -- into SQLite -----------------------------------------------------------------------------


def to_sqlite(target: Path, rows: Rows) -> Digest:
    """Build the copy in a private file beside the target and rename it into place once it
    is complete and verified: a crash leaves at most that private file, never a half store."""
    bulk_load.check_target(target)
    temporary = bulk_load.create_temporary(target)
    try:
        conn = db.connect(temporary)
        try:
            back = fill_sqlite(conn, rows, str(target))
        finally:
            conn.close()
        bulk_load.sync_file(temporary)
        bulk_load.move_into_place(temporary, target)
    except BaseException:
        for suffix in ("", "-wal", "-shm", "-journal"):
            Path(f"{temporary}{suffix}").unlink(missing_ok=True)
        raise
    return back


def fill_sqlite(conn: Any, rows: Rows, where: str) -> Digest:
    """The schema, every row, then the indexes, the text index and the triggers, in one
    transaction on the private file; verified before it commits."""
    bulk_load.prepare_loading(conn)
    db.create_schema(conn, with_indexes=False)
    conn.execute("BEGIN")
    # The text index is built once after the rows; vector_log starts empty, as the index file
    # the copy's first search builds from the embedding table.
    for name in (*ddl.FTS_TRIGGER_NAMES, *VECTOR_LOG_TRIGGER_NAMES):
        conn.execute(f"DROP TRIGGER {name}")
    read = Digest()
    for table in TABLES:
        names = column_names(table, key_first=True)
        if table == "console_meta":
            delete_copied_meta(conn)
        insert = f"INSERT INTO {table} ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})"
        given = read.rows(table, rows(table))
        while chunk := list(next_rows(given, bulk_load.CHUNK)):
            conn.executemany(insert, chunk)
    for statement in (*ddl.index_statements(), bulk_load.FTS_REBUILD):
        conn.execute(statement)
    for statement in (*ddl.FTS_TRIGGERS, *VECTOR_LOG_TRIGGERS):
        conn.execute(statement)
    ids.raise_sqlite_sequences(conn)
    back = Digest()
    for table in TABLES:
        back.read(conn, table)
    check_same(read, back, where)
    conn.execute("COMMIT")
    conn.execute("PRAGMA locking_mode = NORMAL")
    conn.execute("PRAGMA journal_mode = WAL")
    return back


def next_rows(rows: Iterator[Sequence[Any]], size: int) -> Iterator[Sequence[Any]]:
    for _, row in zip(range(size), rows, strict=False):
        yield row


def copy_from(store: Any, target: str, progress: Progress | None = None) -> CopyReport:
    """copy_store from an open Store, read in one snapshot (one read transaction)."""
    with store.snapshot():
        return copy_store(store.connection, store.location, target, progress)
