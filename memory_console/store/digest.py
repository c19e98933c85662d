"""A store's tables as a copy carries them, read back in one canonical form and hashed: the
same rows read on either backend hash alike, so a copy is kept only when both sides agree
(store/copy.py, docs/ARCHITECTURE.md, "Two backends")."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from typing import Any

from memory_console.store.connection import Connection
from memory_console.store.errors import StoreError
from memory_console.store.schema import column_names, columns

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


def delete_copied_meta(conn: Any) -> None:
    """The destination's own console_meta rows that a copy replaces by the source's."""
    conn.execute(
        f"DELETE FROM console_meta WHERE key NOT IN ({', '.join('?' * len(FRESH_META))})",
        list(FRESH_META),
    )
