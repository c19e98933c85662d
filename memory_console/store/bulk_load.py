"""Filling a new, private store in bulk: rows first, then the text index and indexes once.

On SQLite, only for a file nobody else has open (the demo and a copy build one before renaming
it into place): it runs without a journal or syncs and with an exclusive lock. On PostgreSQL
(store/postgres/load.py), one transaction in an empty database: the rows go in through COPY,
the indexes are built after.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memory_console.files import not_regular
from memory_console.store import db, ddl
from memory_console.store.errors import StoreError
from memory_console.store.records import EVENT_INSERT, MEMORY_COLUMNS

MEMORY_INSERT = (
    f"INSERT INTO memory ({', '.join(MEMORY_COLUMNS)}) "
    f"VALUES ({', '.join('?' * len(MEMORY_COLUMNS))})"
)
FTS_REBUILD = "INSERT INTO memory_fts(memory_fts) VALUES('rebuild')"
# For the private files being built only: nothing to roll back, nobody else to see it.
LOAD_PRAGMAS = (
    "journal_mode = OFF",
    "synchronous = OFF",
    "locking_mode = EXCLUSIVE",
    "cache_size = -1000000",  # KiB: keeps the indexes of a million memories in memory
)
CHUNK = 50_000  # rows asked for and inserted at a time
# progress(stage, fraction of the stage done): memories, events, indexes, finishing.
Progress = Callable[[str, float], None]


@dataclass(frozen=True)
class Rows:
    """`count` rows of a table, made on demand: rows(lo, hi) gives rows lo..hi."""

    count: int
    rows: Callable[[int, int], Iterable[Sequence[Any]]]


def load_new_store(
    path: Path, side: Path, memories: Rows, events: Rows, progress: Progress
) -> None:
    """Create the schema in the new file at `path` and insert every memory (columns in
    MEMORY_COLUMNS order) and event (EVENT_INSERT's columns) without FTS triggers or
    indexes, then build both once.

    Two cores share the work: while a thread builds the text index and the memory indexes
    (SQLite releases the GIL), this thread writes the events, with their indexes, into the
    new `side` file; one INSERT ... SELECT then moves them in, which SQLite does by copying
    the table and its indexes as they are (its transfer optimisation).
    """
    conn = db.connect(path)
    background: Background | None = None
    try:
        prepare_loading(conn)
        db.create_schema(conn, with_indexes=False)
        event_table = conn.execute(
            "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'memory_event'"
        ).fetchone()[0]
        event_indexes = [s for s in ddl.index_statements() if " ON memory_event " in s]
        conn.execute("BEGIN")
        for name in ddl.FTS_TRIGGER_NAMES:
            conn.execute(f"DROP TRIGGER {name}")
        for lo in range(0, memories.count, CHUNK):
            progress("memories", lo / memories.count)
            conn.executemany(MEMORY_INSERT, memories.rows(lo, lo + CHUNK))
        background = Background(
            conn,
            [FTS_REBUILD, *(s for s in ddl.index_statements() if s not in event_indexes)],
        )
        write_events(side, [event_table, *event_indexes], events, progress)
        background.wait(lambda done: progress("indexes", done))
        progress("finishing", 0.0)
        for statement in event_indexes:  # on the empty table, so that the copy can transfer
            conn.execute(statement)
        conn.execute("COMMIT")
        conn.execute("ATTACH DATABASE ? AS side", (str(side),))
        conn.execute("BEGIN")
        conn.execute("INSERT INTO memory_event SELECT * FROM side.memory_event")
        for statement in ddl.FTS_TRIGGERS:
            conn.execute(statement)
        conn.execute("COMMIT")
        conn.execute("DETACH DATABASE side")
        conn.execute("PRAGMA locking_mode = NORMAL")
        conn.execute("PRAGMA journal_mode = WAL")
    finally:
        if background is not None:
            background.stop()
        conn.close()


def prepare_loading(conn: sqlite3.Connection) -> None:
    """Settings for one bulk load into a private file: no journal, no syncs, a big cache."""
    for pragma in LOAD_PRAGMAS:
        conn.execute(f"PRAGMA {pragma}")


def write_events(path: Path, schema: list[str], events: Rows, progress: Progress) -> None:
    """Every event into a memory_event table in a side file, indexed after the rows."""
    conn = db.connect(path)
    try:
        prepare_loading(conn)
        conn.execute("BEGIN")
        conn.execute(schema[0])
        for lo in range(0, events.count, CHUNK):
            progress("events", lo / events.count)
            conn.executemany(EVENT_INSERT, events.rows(lo, lo + CHUNK))
        for statement in schema[1:]:
            conn.execute(statement)
        conn.execute("COMMIT")
    finally:
        conn.close()


class Background:
    """SQL statements run in order on a thread; the first failure stops them and is raised
    by wait(). The connection is the thread's alone until wait() or stop() returns."""

    def __init__(self, conn: sqlite3.Connection, statements: list[str]) -> None:
        self.conn = conn
        self.statements = statements
        self.done = 0
        self.stopping = False
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self.run, name="demo-indexes", daemon=True)
        self.thread.start()

    def run(self) -> None:
        try:
            for statement in self.statements:
                if self.stopping:
                    return
                self.conn.execute(statement)
                self.done += 1
        except BaseException as error:  # handed over to the caller by wait()
            self.error = error

    def wait(self, progress: Callable[[float], None]) -> None:
        """Block until every statement ran, reporting the fraction done; re-raise a failure."""
        while self.thread.is_alive():
            progress(self.done / len(self.statements))
            self.thread.join(timeout=0.25)
        progress(1.0)
        if self.error is not None:
            raise self.error

    def stop(self) -> None:
        """Abandon the remaining statements (after a failure elsewhere)."""
        self.stopping = True
        while self.thread.is_alive():
            self.conn.interrupt()
            self.thread.join(timeout=0.1)


# -- the private file beside the target ----------------------------------------------------


def check_target(target: Path) -> None:
    """Refuse to build over anything that holds data (a store, its WAL) or that is not a
    regular file (a directory, a FIFO, a device: renaming over them would replace them)."""
    odd = not_regular(target)
    if odd is not None:
        raise StoreError(f"{odd}; a store is a regular file, so nothing was written")
    if target.exists() and target.stat().st_size > 0:
        raise StoreError(f"{target}: already exists and is not empty; choose another path")
    wal = target.with_name(target.name + "-wal")
    if wal.exists() and wal.stat().st_size > 0:
        raise StoreError(f"{wal}: the write-ahead log of an earlier store; move it away first")


def create_temporary(target: Path) -> Path:
    """A new owner-only file beside the target, so that the final rename is atomic."""
    for attempt in range(100):
        candidate = target.with_name(f".{target.name}.building-{os.getpid()}-{attempt}")
        try:
            db.create_new_file(candidate)
        except FileExistsError:
            continue
        except OSError as error:
            raise StoreError(f"{target}: cannot create: {error.strerror}") from error
        return candidate
    raise StoreError(f"{target}: cannot create a temporary file beside it")


def sync_file(path: Path) -> None:
    """Flush the finished store to disk before it takes the target's name."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def move_into_place(temporary: Path, target: Path) -> None:
    """Rename, never replacing a store that appeared meanwhile (an empty file may go)."""
    try:
        os.link(temporary, target)
    except FileExistsError:
        check_target(target)
        os.replace(temporary, target)
    except OSError:  # a file system without hard links
        check_target(target)
        os.replace(temporary, target)
    else:
        temporary.unlink()
