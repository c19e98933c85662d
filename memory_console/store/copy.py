"""Copying a whole store into a new one, on either backend, all or nothing and verified.

See docs/ARCHITECTURE.md, "Two backends" ("Moving a store"). Every table is copied with its
ids, except what belongs to one database only: vector_log (it feeds the index file beside an
SQLite store, which the copy's first search builds afresh) and the console_meta keys in
FRESH_META. Before the destination commits, both sides are read back in one canonical form,
table by table in key order, and the copy is kept only when the counts and hashes agree.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memory_console.store import bulk_load, db, ids, postgres
from memory_console.store.connection import Connection
from memory_console.store.dialect import vector_literal
from memory_console.store.errors import StoreError
from memory_console.store.schema import column_names, columns
from memory_console.store.vector_log import VECTOR_LOG_TRIGGER_NAMES, VECTOR_LOG_TRIGGERS

# The tables a copy carries, in the order it writes them.
TABLES = (
    "memory",
    "memory_event",
    "maintenance_run",
    "embedding",
    "store_setting",
    "store_setting_change",
    "erasure",
    "console_meta",
)
# console_meta keys that belong to one database, not to the memories it holds: the destination
# keeps its own. `store_id` must be fresh (an index file names its store by it, and one made for
# the source must never pass for the copy's); `application` and `schema_version` are written by
# the destination's creation; `vectors_checked` is a position in the source's vector_log, which
# is not copied. Everything else (creation time, the clear tokens' secret...) is kept.
FRESH_META = ("application", "schema_version", "store_id", "vectors_checked")
PAGE = 20_000  # rows read at a time, by key
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


def key_of(table: str) -> str:
    return next(column.name for column in columns(table) if column.primary_key)


def selection(table: str) -> tuple[str, list[Any]]:
    """The WHERE clause (and its parameters) of the rows of `table` that a copy carries."""
    if table == "console_meta":
        return f"key NOT IN ({', '.join('?' * len(FRESH_META))})", list(FRESH_META)
    return "1 = 1", []


def count_rows(conn: Connection, table: str) -> int:
    where, params = selection(table)
    return int(conn.execute(f"SELECT count(*) FROM {table} WHERE {where}", params).fetchone()[0])


def read_rows(conn: Connection, table: str) -> Iterator[tuple[Any, ...]]:
    """Every row a copy carries, in key order: integer keys page by key (one page in memory);
    text keys (the small settings and meta tables) are sorted here by their UTF-8 bytes, an
    order both databases agree on whatever PostgreSQL's collation."""
    names = column_names(table, key_first=True)
    key = key_of(table)
    where, params = selection(table)
    listed = ", ".join(names)
    if table in ("console_meta", "store_setting"):
        rows = conn.execute(f"SELECT {listed} FROM {table} WHERE {where}", params).fetchall()
        yield from sorted((tuple(row) for row in rows), key=lambda row: row[0].encode())
        return
    last = None
    while True:
        after = "" if last is None else f" AND {key} > ?"
        page = conn.execute(
            f"SELECT {listed} FROM {table} WHERE {where}{after} ORDER BY {key} LIMIT {PAGE}",
            [*params, *([] if last is None else [last])],
        ).fetchall()
        for row in page:
            yield tuple(row)
        if len(page) < PAGE:
            return
        last = page[-1][0]


def canonical(value: Any) -> Any:
    """A value as both databases' drivers give it back alike: NULL, whole numbers (flags
    included), floats exactly (their hex form), text as it is, bytes in hex; each tagged
    with its kind, so that 1 and 1.0 and "1" never hash alike."""
    if value is None:
        return None
    if isinstance(value, bool | int):
        return f"i{int(value)}"
    if isinstance(value, float):
        return f"f{value.hex()}"
    if isinstance(value, str):
        return f"s{value}"
    if isinstance(value, bytes | bytearray | memoryview):
        return f"b{bytes(value).hex()}"
    raise StoreError(f"a value of an unexpected type in the store: {type(value).__name__}")


class Digest:
    """Rows and the sha256 of their canonical lines, per table."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self.hashes: dict[str, Any] = {}

    def rows(self, table: str, rows: Iterator[tuple[Any, ...]]) -> Iterator[tuple[Any, ...]]:
        """The rows, passed on unchanged once counted and hashed."""
        digest = self.hashes.setdefault(table, hashlib.sha256())
        self.counts.setdefault(table, 0)
        for row in rows:
            line = json.dumps([canonical(value) for value in row], ensure_ascii=True)
            digest.update(line.encode() + b"\n")
            self.counts[table] += 1
            yield row

    def read(self, conn: Connection, table: str) -> None:
        for _ in self.rows(table, read_rows(conn, table)):
            pass

    def table_hashes(self) -> dict[str, str]:
        return {table: self.hashes[table].hexdigest() for table in TABLES}

    def total(self) -> str:
        """One hash of every table's count and hash, in TABLES order."""
        whole = hashlib.sha256()
        for table in TABLES:
            whole.update(
                f"{table} {self.counts[table]} {self.hashes[table].hexdigest()}\n".encode()
            )
        return whole.hexdigest()


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

    if postgres.is_url(target):
        shown = postgres.shown_url(target)
        back = to_postgres(target, rows)
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


def check_same(read: Digest, back: Digest, where: str) -> None:
    """Refuse a copy whose destination does not read back as its source did."""
    for table in TABLES:
        if read.counts[table] != back.counts[table]:
            raise StoreError(
                f"{where}: the copy's {table} reads back {back.counts[table]:,} rows, not "
                f"{read.counts[table]:,}; nothing was written"
            )
        if read.hashes[table].digest() != back.hashes[table].digest():
            raise StoreError(
                f"{where}: the copy's {table} reads back unlike the source's (hash differs); "
                "nothing was written"
            )


# -- into PostgreSQL -------------------------------------------------------------------------


def to_postgres(url: str, rows: Rows) -> Digest:
    with postgres.bulk_writer(url) as (conn, where, tables):
        fresh = not tables
        if fresh:
            postgres.write_schema(conn, with_indexes=False)
        else:
            postgres.refuse_filled(conn, where, tables, FRESH_META, "a copy")
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
            for statement in postgres.index_statements():
                conn.execute(statement)
        postgres.set_sequences(conn)
        back = Digest()
        for table in TABLES:
            back.read(conn, table)
        check_same(read, back, where)  # raises: the block rolls the copy back
    return back


def delete_copied_meta(conn: Any) -> None:
    """The destination's own console_meta rows that a copy replaces by the source's."""
    conn.execute(
        f"DELETE FROM console_meta WHERE key NOT IN ({', '.join('?' * len(FRESH_META))})",
        list(FRESH_META),
    )


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
    for name in (*db.FTS_TRIGGER_NAMES, *VECTOR_LOG_TRIGGER_NAMES):
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
    for statement in (*db.index_statements(), bulk_load.FTS_REBUILD):
        conn.execute(statement)
    for statement in (*db.FTS_TRIGGERS, *VECTOR_LOG_TRIGGERS):
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
