"""The Store: the only door to a memory-console database (reads, writes and their events)."""

from __future__ import annotations

import functools
import json
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from memory_console.store import erase
from memory_console.store import settings as store_settings
from memory_console.store.connection import Connection
from memory_console.store.db import open_store_connection
from memory_console.store.dialect import SQLITE, Dialect
from memory_console.store.dialect import of as dialect_of
from memory_console.store.erase import ErasureRecord, ErasureScope, PurgeResult
from memory_console.store.errors import (
    CommittedError,
    NotFoundError,
    ReadOnlyError,
    StoreBusyError,
    StoreDamaged,
    StoreError,
    ValidationError,
    is_damage,
)
from memory_console.store.postgres.db import connect
from memory_console.store.postgres.url import is_url, shown_url
from memory_console.store.records import (
    EVENT_INSERT,
    EVENT_SELECT,
    FLAG_COLUMNS,
    JSON_COLUMNS,
    MEMORY_COLUMNS,
    MEMORY_SELECT,
    WRITE_MARKS,
    ChangeResult,
    Cursor,
    EventRecord,
    MemoryFilter,
    MemoryRecord,
    Page,
    PlaceCount,
    chunks,
    with_evaluated_at,
)
from memory_console.store.search_text import terms
from memory_console.store.settings import SettingChange, StoreSettings, all_specs, check_value
from memory_console.store.validate import check_field, complete_memory
from memory_console.store.vocab import EDITABLE, SESSION_TIERS, SORTABLE

if TYPE_CHECKING:
    import numpy as np

    from memory_console.policies.params import PolicyParams
from memory_console.timeutil import now_ts

ChangeListener = Callable[[str, list[int]], None]
T = TypeVar("T")
LOCK_RETRIES = 3
# The distinct owners of the memories of one status (given twice), one index seek each.
_OWNERS_OF_STATUS = (
    "WITH RECURSIVE owners(name) AS ("
    "SELECT min(owner) FROM memory WHERE status = ? "
    "UNION ALL SELECT (SELECT min(owner) FROM memory WHERE status = ? AND owner > owners.name) "
    "FROM owners WHERE owners.name IS NOT NULL"
    ") SELECT name FROM owners WHERE name IS NOT NULL"
)
RANKED_MATCHES = 1000  # keyword search ranks at most this many (newest) matches per query

# Status changes a person can ask for: kind of event -> (field, value it sets).
FLAG_ACTIONS: dict[str, tuple[str, Any]] = {
    "protected": ("is_protected", 1),
    "unprotected": ("is_protected", 0),
    "archived": ("status", "archived"),
    "restored": ("status", "active"),
}


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


class Store:
    """A memory store in one SQLite file, or in a PostgreSQL database named by a URL
    (docs/ARCHITECTURE.md, "Two backends"). Thread-safe: one connection behind a lock.

    `actor` names who acts (cli, tui, api, a pass) in the events this Store writes.

    The one rule for the store's files: a process holding a connection to a store never
    opens and closes the store's file (or its -wal/-shm) by another path, since closing any
    descriptor of a file drops every POSIX lock the process holds on it, and another process
    then deletes the WAL under the live connections. Header checks run before the first
    connection; files named by an operator are compared with held stores by identity.
    """

    # Where that rule is kept: every connection comes from db.connect, counted in store.held;
    # db.check_header runs only while none is held; export/purge --out and import compare
    # paths with store.held.holds() before opening them; migrate backs up with conn.backup()
    # into a new file; the demo builds and fsyncs a private file before renaming it into
    # place. Everything else only stats store files (exists, size, access), which is safe.

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        read_only: bool = False,
        create: bool = True,
        actor: str = "cli",
    ) -> None:
        self.read_only = read_only
        self.actor = actor
        self.url: str | None = None
        self._path: Path | None = None
        self.dialect: Dialect = SQLITE
        self.migration_backup: Path | None = None
        if is_url(path):
            self.url = str(path)
            self.location = shown_url(self.url)
            self._conn: Connection = connect(self.url, read_only=read_only, create=create)
            self.dialect = dialect_of(self._conn)
        else:
            self._path = Path(path)
            self.location = str(self._path)
            self._conn, self.migration_backup = open_store_connection(
                self._path, read_only=read_only, create=create
            )
        self._lock = threading.RLock()
        self._in_transaction = False
        self.listeners: list[ChangeListener] = []
        # PostgreSQL's data_version (see data_version): the store's commit count last seen,
        # and how many times it was seen moved by another connection's commits.
        self._commits_seen: int | None = None
        self._outside_changes = 0

    # -- plumbing -------------------------------------------------------------------------

    @property
    def path(self) -> Path:
        """The store's file; a PostgreSQL store has none, and code that would read or write
        files beside it (vector index file, backups) is refused here, not handed a fake."""
        if self._path is None:
            raise StoreError(f"{self.location}: a PostgreSQL store has no file for this")
        return self._path

    @property
    def identity(self) -> str:
        """Which store this is, as a plan names it: the file's resolved path, or the URL
        without its password."""
        return self.location if self._path is None else str(self._path.resolve())

    @property
    def backend(self) -> str:
        """ "sqlite" or "postgresql"."""
        return self.dialect.name

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def connection(self) -> Connection:
        """The raw connection, for modules under store/ only (a test keeps it so); everything
        else reads through Store methods, read() and snapshot()."""
        return self._conn

    @property
    def lock(self) -> threading.RLock:
        """The lock around the connection, for modules under store/."""
        return self._lock

    def require_writable(self, what: str) -> None:
        if self.read_only:
            raise ReadOnlyError(f"read-only store: {what} refused")

    @contextmanager
    def transaction(self, what: str = "this change") -> Iterator[Connection]:
        """One write transaction (BEGIN IMMEDIATE), retried a bounded number of times when
        another process holds the write lock, then refused with a clear message."""
        self.require_writable(what)
        with self._lock:
            if self._in_transaction:
                yield self._conn
                return
            for attempt in range(LOCK_RETRIES):
                try:
                    for statement in self.dialect.begin_write:
                        self._conn.execute(statement)
                    break
                except (sqlite3.OperationalError, StoreBusyError) as error:
                    if isinstance(error, StoreBusyError) and self._conn.in_transaction:
                        self._conn.execute("ROLLBACK")  # PostgreSQL: BEGIN ran, the lock did not
                    if isinstance(error, sqlite3.OperationalError) and (
                        "locked" not in str(error) and "busy" not in str(error)
                    ):
                        raise StoreError(f"{what}: {error}") from error
                    if attempt == LOCK_RETRIES - 1:
                        raise StoreBusyError(
                            f"{what}: the database is busy (another process holds its write lock); "
                            "try again in a moment"
                        ) from error
                    time.sleep(0.2 * (attempt + 1))
            self._in_transaction = True
            try:
                yield self._conn
                counted = self._count_commit()
                self._conn.execute("COMMIT")
                self._own_commit(counted)
            except sqlite3.DatabaseError as error:
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                if isinstance(error, sqlite3.OperationalError) and "full" in str(error):
                    raise StoreError(f"{what}: the disk is full; nothing was written") from error
                if is_damage(error):
                    raise StoreDamaged(self.location, error) from error
                if "locked" in str(error) or "busy" in str(error):
                    raise StoreBusyError(f"{what}: {error}; nothing was written") from error
                raise StoreError(f"{what}: {error}; nothing was written") from error
            except BaseException:
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                raise
            finally:
                self._in_transaction = False

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """One read transaction: every read inside (by this thread) sees the same state of
        the store, as a plan needs. Inside a transaction, that transaction is the snapshot."""
        with self._lock:
            if self._conn.in_transaction:
                yield
                return
            self._conn.execute(self.dialect.begin_read)
            try:
                yield
            finally:
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")

    def read(self, reader: Callable[..., T], *args: Any) -> T:
        """`reader(connection, *args)` under the lock, for the readers of modules under
        store/ (bulk, runs, consolidation): callers outside the store name what to read
        without holding the connection. Busy and damaged databases become StoreError."""
        with self._lock, self._read_errors():
            return reader(self._conn, *args)

    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Rows of one SQL statement: for the Store and modules under store/ only."""
        with self._lock, self._read_errors():
            return self._conn.execute(sql, params).fetchall()

    @contextmanager
    def _read_errors(self) -> Iterator[None]:
        try:
            yield
        except sqlite3.OperationalError as error:
            if "locked" in str(error) or "busy" in str(error):
                raise StoreBusyError("the database is busy; try again in a moment") from error
            raise
        except sqlite3.DatabaseError as error:
            if is_damage(error):
                raise StoreDamaged(self.location, error) from error
            raise StoreError(f"{self.location}: damaged database ({error})") from error

    def data_version(self, *, wait: bool = True) -> int | None:
        """A number that changes when another connection (another process, another Store,
        or a private reader's writer) commits a change, and not on this Store's own commits,
        so a viewer can poll it cheaply to learn that what it shows may be stale. With
        wait=False, None when this connection is busy in another thread (ask again later).

        SQLite answers with `PRAGMA data_version`, which means exactly that. PostgreSQL has
        no twin, so every write transaction of the Store counts its commit in one
        console_meta row (dialect.count_commit) just before COMMIT, under the writers'
        advisory lock: the count is transactional (a rolled-back transaction leaves it as it
        was), it moves only once the commit is visible to every reader, and reading it is
        one primary-key lookup whatever the store's size. The Store remembers the count it
        last saw; its own commit moves that along when nobody else committed in between (the
        count was one below its own), so its own writes are no news, as on SQLite. LISTEN and
        NOTIFY would need a second connection per viewer and lose what was said while that
        connection was down; a sequence is not transactional and cannot tell our commit from
        another's."""
        if not self._lock.acquire(blocking=wait):
            return None
        try:
            with self._read_errors():
                row = self._conn.execute(self.dialect.data_version).fetchone()
            if self.dialect.count_commit is None:
                return int(row[0])
            count = int(row[0]) if row else 0
            if self._commits_seen is not None and count != self._commits_seen:
                self._outside_changes += 1
            self._commits_seen = count
            return self._outside_changes
        finally:
            self._lock.release()

    def _count_commit(self) -> int | None:
        """Inside a write transaction about to commit: count the commit (PostgreSQL), and
        return the new count."""
        if self.dialect.count_commit is None:
            return None
        return int(self._conn.execute(self.dialect.count_commit).fetchone()[0])

    def _own_commit(self, counted: int | None) -> None:
        """This Store's commit (counted as `counted`) is not a change for data_version when
        the count was, before it, the one the Store last saw."""
        if counted is not None and self._commits_seen == counted - 1:
            self._commits_seen = counted

    def notify(self, kind: str, ids: list[int]) -> None:
        """Tell listeners (the vector index, the console) which memories changed and how,
        after the change committed: a listener's failure is a CommittedError, which says the
        change was written, so that no caller makes it again."""
        if not ids:
            return
        for listener in list(self.listeners):
            try:
                listener(kind, ids)
            except Exception as error:
                raise CommittedError(
                    f"the change to {memories(len(ids))} was written, but the search index "
                    f"could not follow it ({type(error).__name__}: {error}); it catches up "
                    "at the next start or `memory-console reindex`"
                ) from error

    def write_events(self, rows: Iterable[tuple[Any, ...]]) -> None:
        """Insert event rows (memory_id, at, actor, kind, before, after, run_id, query, scores
        [, evaluated_at]); a row without evaluated_at was evaluated when it was written."""
        self._conn.executemany(EVENT_INSERT, with_evaluated_at(rows))

    def meta(self, key: str) -> str | None:
        rows = self._query("SELECT value FROM console_meta WHERE key = ?", (key,))
        return rows[0][0] if rows else None

    def settings(self) -> StoreSettings:
        """The store's settings as of now: stored values over the built-in defaults
        (store/settings.py); a flag given for one run goes over both."""
        rows = self._query("SELECT key, value FROM store_setting")
        return StoreSettings({key: store_settings.loads(value) for key, value in rows})

    def set_setting(
        self,
        key: str,
        value: Any,
        actor: str | None = None,
        *,
        parameter_sets: Mapping[str, type[PolicyParams]] | None = None,
        now: float | None = None,
    ) -> SettingChange:
        """Check and record one setting (None: back to its default), with who and when.
        `parameter_sets` names the parameter classes whose `<set>.<name>` keys are known
        (default: the policies'; the maintenance registry adds the passes')."""
        parsed = None if value is None else check_value(key, value, parameter_sets)
        if value is None and key not in all_specs(parameter_sets):
            raise ValueError(f"unknown setting {key!r}; `memory-console config` lists them")
        moment = now_ts() if now is None else now
        who = actor or self.actor
        with self.transaction(f"setting {key}") as conn:
            row = conn.execute("SELECT value FROM store_setting WHERE key = ?", (key,)).fetchone()
            before = None if row is None else store_settings.loads(row[0])
            if parsed is None:
                conn.execute("DELETE FROM store_setting WHERE key = ?", (key,))
            else:
                conn.execute(
                    "INSERT INTO store_setting(key, value, changed_at, changed_by) "
                    "VALUES (?, ?, ?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value, "
                    "changed_at = excluded.changed_at, changed_by = excluded.changed_by",
                    (key, store_settings.dumps(parsed), moment, who),
                )
            conn.execute(
                "INSERT INTO store_setting_change(key, before, after, at, actor) "
                "VALUES (?, ?, ?, ?, ?)",
                (
                    key,
                    None if before is None else store_settings.dumps(before),
                    None if parsed is None else store_settings.dumps(parsed),
                    moment,
                    who,
                ),
            )
        return SettingChange(key, before, parsed, moment, who)

    def setting_history(self, limit: int = 50, key: str | None = None) -> list[SettingChange]:
        """Changes of the settings, newest first."""
        where, args = ("WHERE key = ? ", [key]) if key else ("", [])
        rows = self._query(
            "SELECT key, before, after, at, actor FROM store_setting_change "
            f"{where}ORDER BY at DESC, id DESC LIMIT ?",
            (*args, limit),
        )
        return [
            SettingChange(
                k,
                None if b is None else store_settings.loads(b),
                None if a is None else store_settings.loads(a),
                at,
                actor,
            )
            for k, b, a, at, actor in rows
        ]

    def set_meta(self, key: str, value: str) -> None:
        with self.transaction("setting " + key) as conn:
            conn.execute(
                "INSERT INTO console_meta(key, value) VALUES (?, ?) "
                "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                (key, value),
            )

    # -- adding ---------------------------------------------------------------------------

    def add(self, memory: dict[str, Any], *, now: float | None = None) -> int:
        """Add one memory (fields as in docs/ARCHITECTURE.md, "Data model"); returns its id."""
        return self.add_many([memory], now=now)[0]

    def add_many(
        self,
        memories: Iterable[dict[str, Any]],
        *,
        now: float | None = None,
        keep_ids: bool = False,
        created_kind: str = "created",
    ) -> list[int]:
        """Check every memory first, then insert all of them in one transaction.

        A ValidationError names the (0-based) position of the first bad memory; nothing is
        written then. With keep_ids an `id` in the input is kept (export/import round trip).
        """
        moment = now_ts() if now is None else now
        rows: list[dict[str, Any]] = []
        for position, memory in enumerate(memories):
            try:
                row = complete_memory(memory, moment)
            except ValidationError as error:
                raise ValidationError(f"memory {position + 1}: {error}") from error
            if keep_ids and memory.get("id") is not None:
                row["id"] = check_field("retrieval_count", memory["id"]) or None
                if row["id"] is None:
                    raise ValidationError(f"memory {position + 1}: id must be >= 1")
            rows.append(row)
        if not rows:
            return []
        return self.insert_rows(rows, moment, created_kind=created_kind)

    def insert_rows(
        self,
        rows: list[dict[str, Any]],
        moment: float,
        *,
        created_kind: str = "created",
        histories: Sequence[Sequence[tuple[Any, ...]] | None] | None = None,
    ) -> list[int]:
        """Insert already-checked rows with their `created` events, or with the histories
        given (event tuples without memory_id, as an export carries them); returns the ids."""
        return self.insert_batches([(rows, histories)], moment, created_kind=created_kind)

    def insert_batches(
        self,
        batches: Iterable[tuple[list[dict[str, Any]], Sequence[Any] | None]],
        moment: float,
        *,
        created_kind: str = "created",
    ) -> list[int]:
        """insert_rows for (rows, histories) batches, all in one transaction: a caller streaming
        a file holds one batch at a time, and an error raised by `batches` rolls back all."""
        from memory_console.store.bulk import INSERT_CACHE_KIB, large_cache

        ids: list[int] = []
        # A bigger page cache on SQLite keeps the twenty indexes' pages in memory: with the
        # default one, a million-line import spends most of its time reading them back.
        with self.transaction("adding memories") as conn, large_cache(conn, INSERT_CACHE_KIB):
            for rows, histories in batches:
                ids += self.insert_batch(conn, rows, created_kind, histories)
        self.notify("added", ids)
        return ids

    def insert_batch(
        self,
        conn: Connection,
        rows: list[dict[str, Any]],
        created_kind: str,
        histories: Sequence[Sequence[tuple[Any, ...]] | None] | None,
    ) -> list[int]:
        if any("id" in row for row in rows):
            wanted = [row["id"] for row in rows if "id" in row]
            if len(set(wanted)) != len(wanted):
                raise ValidationError("duplicate ids in the input")
            clash = self.existing_ids(wanted)
            if clash:
                raise ValidationError(f"id {clash[0]} already exists in the store")
        # Each backend its own way: a statement per row on SQLite, one COPY per table and
        # batch on PostgreSQL (store/postgres/bulk.py).
        ids = self.dialect.insert_memories(conn, rows)
        write_events = functools.partial(self.dialect.insert_events, conn)
        plain = [
            (
                ident,
                row["created_at"],
                self.actor,
                created_kind,
                None,
                dumps({"confidence": row["confidence"], "status": row["status"]}),
                None,
                None,
                None,
            )
            for position, (ident, row) in enumerate(zip(ids, rows, strict=True))
            if not (histories and histories[position])
        ]
        write_events(plain)
        if histories:
            write_events(
                (ident, *event)
                for ident, history in zip(ids, histories, strict=True)
                for event in (history or ())
            )
        return ids

    def ids_by_external_id(self, external_ids: Sequence[str]) -> dict[str, int]:
        """external id -> memory id for those of the given external ids the store holds."""
        found: dict[str, int] = {}
        for chunk, marks in chunks(external_ids):
            found.update(
                self._query(
                    f"SELECT external_id, id FROM memory WHERE external_id IN ({marks})", chunk
                )
            )
        return found

    def active_by_external_id(self, external_id: str) -> list[int]:
        """The ids of the active memories that keep this external id."""
        plus = self.dialect.unindexed("status", "external_id")  # the status index aside
        rows = self._query(
            "SELECT id FROM memory WHERE external_id IS NOT NULL AND external_id = ? "
            f"AND {plus}status = 'active'",
            (external_id,),
        )
        return [int(row[0]) for row in rows]

    def active_external_prefix(
        self, prefix: str, limit: int | None = None
    ) -> list[tuple[int, str]]:
        """(id, external id) of the active memories whose external id begins with `prefix`,
        case and all (at most `limit`): read from the external_id index on SQLite."""
        rows = self._active_external_prefix("external_id", prefix, limit)
        return [(int(row[0]), str(row[1])) for row in rows]

    def active_external_prefix_updated(self, prefix: str) -> list[tuple[int, float]]:
        """(id, updated_at) of the active memories whose external id begins with `prefix`
        (as active_external_prefix reads them), for a caller that lists them newest first."""
        rows = self._active_external_prefix("updated_at", prefix, None)
        return [(int(row[0]), float(row[1])) for row in rows]

    def _active_external_prefix(
        self, column: str, prefix: str, limit: int | None
    ) -> list[tuple[Any, ...]]:
        """(id, `column`) rows of active_external_prefix (`column`: one of the code's own)."""
        condition, params = self.dialect.starts_with("external_id", prefix)
        plus = self.dialect.unindexed("status", "external_id")  # the status index aside
        # "IS NOT NULL" lets the partial index of external_id serve the range.
        sql = (
            f"SELECT id, {column} FROM memory WHERE external_id IS NOT NULL AND "
            f"{condition} AND {plus}status = 'active'"
        )
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        return self._query(sql, params)

    def external_ids_of(self, ids: Iterable[int]) -> dict[int, str | None]:
        """The external id of each of these memories that exists (None: it has none)."""
        found: dict[int, str | None] = {}
        for chunk, marks in chunks(list(dict.fromkeys(int(i) for i in ids))):
            rows = self._query(f"SELECT id, external_id FROM memory WHERE id IN ({marks})", chunk)
            found.update((int(row[0]), row[1]) for row in rows)
        return found

    def existing_ids(self, ids: Sequence[int]) -> list[int]:
        found: list[int] = []
        for chunk, marks in chunks(ids):
            rows = self._query(f"SELECT id FROM memory WHERE id IN ({marks})", chunk)
            found += [row[0] for row in rows]
        return sorted(found)

    # -- reading --------------------------------------------------------------------------

    def get(self, memory_id: int) -> MemoryRecord | None:
        rows = self._query(f"SELECT {MEMORY_SELECT} FROM memory WHERE id = ?", (memory_id,))
        return MemoryRecord.from_row(rows[0]) if rows else None

    def require(self, memory_id: int) -> MemoryRecord:
        record = self.get(memory_id)
        if record is None:
            raise NotFoundError(f"no memory with id {memory_id}")
        return record

    def get_many(self, ids: Sequence[int]) -> dict[int, MemoryRecord]:
        found: dict[int, MemoryRecord] = {}
        for chunk, marks in chunks(ids):
            for row in self._query(
                f"SELECT {MEMORY_SELECT} FROM memory WHERE id IN ({marks})", chunk
            ):
                found[row[0]] = MemoryRecord.from_row(row)
        return found

    def where(
        self, memory_filter: MemoryFilter, alias: str = "", sort: str | None = None
    ) -> tuple[list[str], list[Any]]:
        """SQL conditions and parameters for a filter over the memory table (named `alias`).

        With a `sort` column, equality filters are written `+column = ?`, which keeps SQLite
        from reaching for their index and then sorting every match: it walks the sort column's
        index instead and stops after one page (2.6 s -> 2 ms per page on a million memories
        filtered by status and sorted by last access; 222 -> 4 ms at 300,000 for one owner).
        """
        col = f"{alias}." if alias else ""
        clauses: list[str] = []
        params: list[Any] = []
        for name in ("owner", "topic", "tier", "memory_type", "status", "decay_policy"):
            value = getattr(memory_filter, name)
            if value is not None:
                clauses.append(f"{self.dialect.unindexed(name, sort)}{col}{name} = ?")
                params.append(value)
        if memory_filter.namespace == "":
            clauses.append(f"{col}namespace IS NULL")
        elif memory_filter.namespace is not None:
            clauses.append(f"{self.dialect.unindexed('namespace', sort)}{col}namespace = ?")
            params.append(memory_filter.namespace)
        if memory_filter.is_protected is not None:
            clauses.append(f"{self.dialect.unindexed('is_protected', sort)}{col}is_protected = ?")
            params.append(int(memory_filter.is_protected))
        if memory_filter.min_confidence is not None:
            clauses.append(f"{col}confidence >= ?")
            params.append(memory_filter.min_confidence)
        if memory_filter.max_confidence is not None:
            clauses.append(f"{col}confidence <= ?")
            params.append(memory_filter.max_confidence)
        if memory_filter.ids is not None:
            clauses.append(
                f"{col}id IN ({','.join(str(int(i)) for i in memory_filter.ids) or 'NULL'})"
            )
        if memory_filter.tiers is not None:
            clauses.append(f"{col}tier IN ({','.join('?' * len(memory_filter.tiers)) or 'NULL'})")
            params.extend(memory_filter.tiers)
        if memory_filter.session_id is not None:
            banks = ",".join(f"'{tier}'" for tier in SESSION_TIERS)
            clauses.append(f"({col}tier NOT IN ({banks}) OR {self.dialect.session_id(col)} = ?)")
            params.append(memory_filter.session_id)
        if memory_filter.actor is not None:
            clauses.append(f"{col}id IN (SELECT memory_id FROM memory_event WHERE actor = ?)")
            params.append(memory_filter.actor)
        if memory_filter.text:
            condition = self.dialect.text_filter(col, memory_filter.text)
            if condition is not None:
                clauses.append(condition[0])
                params.extend(condition[1])
        return clauses, params

    def page(
        self,
        memory_filter: MemoryFilter | None = None,
        *,
        sort: str = "id",
        descending: bool = False,
        after: Cursor | None = None,
        limit: int = 50,
    ) -> Page:
        """One page of memories in (sort, id) order after a cursor: keyset paging, so page
        1,000 costs what page 1 costs."""
        if sort not in SORTABLE:
            raise ValidationError(f"cannot sort by {sort!r}; one of: {', '.join(SORTABLE)}")
        clauses, params = self.where(memory_filter or MemoryFilter(), sort=sort)
        rows: list[MemoryRecord] = []
        segments = keyset_segments(sort, descending, after)
        for condition, condition_params, order in segments:
            where = [*clauses, condition] if condition else clauses
            where_sql = f"WHERE {' AND '.join(where)}" if where else ""
            sql = f"SELECT {MEMORY_SELECT} FROM memory {where_sql} ORDER BY {order} LIMIT ?"
            wanted = limit + 1 - len(rows)
            found = self._query(sql, [*params, *condition_params, wanted])
            rows += [MemoryRecord.from_row(r) for r in found]
            if len(rows) > limit:
                break
        more = len(rows) > limit
        rows = rows[:limit]
        cursor = Cursor(getattr(rows[-1], sort), rows[-1].id) if more and rows else None
        if cursor is not None and sort == "is_protected":
            cursor = Cursor(int(cursor.value), cursor.id)
        return Page(rows, cursor)

    def iter_memories(
        self, memory_filter: MemoryFilter | None = None, *, batch: int = 1000
    ) -> Iterator[MemoryRecord]:
        """Every memory the filter keeps, in id order, read one keyset page at a time."""
        cursor = None
        while True:
            page = self.page(memory_filter, after=cursor, limit=batch)
            yield from page.rows
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    def page_with_offset(
        self,
        memory_filter: MemoryFilter | None = None,
        *,
        sort: str = "id",
        descending: bool = False,
        offset: int = 0,
        limit: int = 50,
    ) -> list[MemoryRecord]:
        """OFFSET paging: kept only as the benchmark's baseline against keyset paging."""
        clauses, params = self.where(memory_filter or MemoryFilter())
        direction = "DESC" if descending else "ASC"
        where_sql = f"WHERE {' AND '.join(clauses)}" if clauses else ""
        sql = (
            f"SELECT {MEMORY_SELECT} FROM memory {where_sql} "
            f"ORDER BY {sort} {direction}, id {direction} LIMIT ? OFFSET ?"
        )
        return [MemoryRecord.from_row(r) for r in self._query(sql, [*params, limit, offset])]

    def ids_matching(self, memory_filter: MemoryFilter) -> np.ndarray:
        """Every id the filter keeps, as int64 (the vector index ranks only among these).

        SQLite joins the ids into one string, parsed by numpy: a row per id through Python
        costs about 1 microsecond each, four times as much at 100,000 ids.
        """
        import numpy as np

        clauses, params = self.where(memory_filter)
        if (
            memory_filter.status is not None
            and memory_filter.topic
            and not memory_filter.owner
            and self.dialect.seeks_owners
        ):
            # A topic without an owner would read every entry of the status in the
            # (status, owner, topic) index; naming the status's owners (one index seek each)
            # lets SQLite seek (status, owner, topic) per owner: 154 -> 55 ms at 1,000,000.
            clauses.append(f"owner IN ({_OWNERS_OF_STATUS})")
            params += [memory_filter.status, memory_filter.status]
        where_sql = f"WHERE {' AND '.join(clauses)}" if clauses else ""
        joined = self._query(self.dialect.id_list(where_sql), params)[0][0]
        if not joined:
            return np.empty(0, dtype=np.int64)
        return np.fromstring(joined, dtype=np.int64, sep=",")

    def count(self, memory_filter: MemoryFilter | None = None) -> int:
        clauses, params = self.where(memory_filter or MemoryFilter())
        where_sql = f"WHERE {' AND '.join(clauses)}" if clauses else ""
        return int(self._query(f"SELECT count(*) FROM memory {where_sql}", params)[0][0])

    def counts_by(
        self, *fields: str, memory_filter: MemoryFilter | None = None
    ) -> list[tuple[Any, ...]]:
        """Counts grouped by one or more fields, e.g. ("owner", "topic") for the topic tree."""
        allowed = {"owner", "topic", "tier", "memory_type", "status", "decay_policy", "source"}
        if not fields or not set(fields) <= allowed:
            raise ValidationError(f"counts by {fields!r}: fields must be among {sorted(allowed)}")
        clauses, params = self.where(memory_filter or MemoryFilter())
        where_sql = f"WHERE {' AND '.join(clauses)}" if clauses else ""
        group = ", ".join(fields)
        return self._query(
            f"SELECT {group}, count(*) FROM memory {where_sql} GROUP BY {group} ORDER BY {group}",
            params,
        )

    def place_counts(self, memory_filter: MemoryFilter | None = None) -> list[PlaceCount]:
        """The topics tree's counts: memories per owner, namespace (None: in none) and topic.

        Two covered index reads: every memory by owner and topic, then the namespaced ones
        (their partial index) by owner, namespace and topic, which are taken from the first."""
        clauses, params = self.where(memory_filter or MemoryFilter())
        where_sql = " AND ".join(clauses) or "1 = 1"
        counts: dict[tuple[str, str | None, str], int] = {
            (owner, None, topic): count
            for owner, topic, count in self._query(
                f"SELECT owner, topic, count(*) FROM memory WHERE {where_sql} "
                "GROUP BY owner, topic",
                params,
            )
        }
        # Every other index set aside: the partial one holds only the namespaced memories.
        clauses, params = self.where(memory_filter or MemoryFilter(), sort="namespace")
        for owner, namespace, topic, count in self._query(
            "SELECT owner, namespace, topic, count(*) FROM memory WHERE "
            + " AND ".join([*clauses, "namespace IS NOT NULL"])
            + " GROUP BY namespace, owner, topic",
            params,
        ):
            counts[(owner, namespace, topic)] = count
            counts[(owner, None, topic)] -= count
        return sorted(
            (
                PlaceCount(owner, namespace, topic, count)
                for (owner, namespace, topic), count in counts.items()
                if count
            ),
            key=lambda row: (row.owner, row.namespace or "", row.topic),
        )

    def keyword_search(
        self, text: str, memory_filter: MemoryFilter | None = None, *, limit: int = 20
    ) -> list[tuple[MemoryRecord, float]]:
        """Memories matching the query's words, best first, as (memory, bm25) pairs: see
        keyword_ranking()."""
        ranking = self.keyword_ranking(text, memory_filter, limit=limit)
        records = self.get_many([ident for ident, _ in ranking])
        return [(records[ident], bm25) for ident, bm25 in ranking if ident in records]

    def keyword_ranking(
        self, text: str, memory_filter: MemoryFilter | None = None, *, limit: int = 20
    ) -> list[tuple[int, float]]:
        """Ids of memories matching the query's words (stop words dropped), best bm25 first:
        those with every word first, then those with any word when that leaves room.

        bm25 costs microseconds per match, so only the newest RANKED_MATCHES matches of each
        query are ranked: exact for rare words, bounded for common ones.
        Returns (id, bm25) pairs; a lower bm25 is a better match, as SQLite reports it.
        """
        return [
            (ident, bm25) for ident, bm25, _ in self.keyword_matches(text, memory_filter, limit)
        ]

    def keyword_matches(
        self, text: str, memory_filter: MemoryFilter | None = None, limit: int = 20
    ) -> list[tuple[int, float, bool]]:
        """keyword_ranking() with a third value per match: True when it holds every word of
        the query (search reads that as strong keyword evidence, whatever the cosine)."""
        clauses, params = self.where(memory_filter or MemoryFilter(status="active"), alias="m")
        extra = "".join(" AND " + clause for clause in clauses)
        # Only ids and ranks go through the sort; the caller reads the rows it keeps.
        sql = self.dialect.keyword_sql(extra)
        results: dict[int, tuple[int, float, bool]] = {}
        for require_all in (True, False):
            query = self.dialect.keyword_query(text, require_all)
            if query is None:
                return []
            # A one-word query's OR pass is its AND pass: every match holds all its words.
            match, holds_all = query
            for ident, rank in self._query(sql, [match, *params, RANKED_MATCHES, limit]):
                if ident not in results and len(results) < limit:
                    results[ident] = (int(ident), float(rank), holds_all)
            if len(results) >= limit or len(terms(text)) < 2:
                break
        return list(results.values())

    def history(self, memory_id: int) -> list[EventRecord]:
        rows = self._query(
            f"SELECT {EVENT_SELECT} FROM memory_event WHERE memory_id = ? ORDER BY at, id",
            (memory_id,),
        )
        return [EventRecord.from_row(r) for r in rows]

    def histories(self, memory_ids: Sequence[int]) -> dict[int, list[EventRecord]]:
        """Each memory's history (as history() gives it) in one statement: an export reads a
        page of memories' histories at a time, not one query per memory."""
        found: dict[int, list[EventRecord]] = {int(ident): [] for ident in memory_ids}
        rows = self._query(
            f"SELECT {EVENT_SELECT} FROM memory_event WHERE memory_id IN "
            f"(SELECT value FROM {self.dialect.id_table()}) ORDER BY memory_id, at, id",
            (self.dialect.id_values(list(found)),),
        )
        for row in rows:
            found[row[1]].append(EventRecord.from_row(row))
        return found

    def accesses(self, memory_id: int, limit: int = 100) -> list[EventRecord]:
        """The memory's access log, newest first: when, which query, which scores (recalls,
        and reinforcements when an agent met the memory again)."""
        rows = self._query(
            f"SELECT {EVENT_SELECT} FROM memory_event WHERE memory_id = ? "
            "AND kind IN ('accessed', 'reinforced') ORDER BY at DESC, id DESC LIMIT ?",
            (memory_id, limit),
        )
        return [EventRecord.from_row(r) for r in rows]

    # -- a person's actions ----------------------------------------------------------------

    def set_flag(self, kind: str, ids: Sequence[int], *, now: float | None = None) -> ChangeResult:
        """protect / unprotect / archive / restore ids; each change writes its event.

        Protecting stops decay, so a faded memory keeps the confidence it has as of now (its
        stored one once decay is applied): the event records that confidence change, and
        the memory never jumps back to a value decay had already taken from it."""
        field, value = FLAG_ACTIONS[kind]
        moment = now_ts() if now is None else now
        frozen = self.faded_confidences(ids, moment) if kind == "protected" else {}
        return self.change_fields(ids, {field: value}, kind, now=moment, extra=frozen)

    def faded_confidences(self, ids: Sequence[int], moment: float) -> dict[int, dict[str, Any]]:
        """{id: {confidence, base_confidence}} for the memories whose confidence as of moment
        (under the store's policy) is below the stored one."""
        from memory_console.policies import reinforce_from_now

        wanted = list(dict.fromkeys(int(i) for i in ids))
        params = self.settings().params(None)
        found: dict[int, dict[str, Any]] = {}
        for chunk, marks in chunks(wanted):
            rows = self._query(
                "SELECT id, confidence, base_confidence, memory_type, retrieval_count, "
                "last_accessed_at, created_at, decay_policy, is_protected, status "
                f"FROM memory WHERE id IN ({marks})",
                chunk,
            )
            if not rows:
                continue
            columns = list(zip(*rows, strict=True))
            current, _ = reinforce_from_now(
                confidence=list(columns[1]),
                base_confidence=list(columns[2]),
                retrieval_count=list(columns[4]),
                last_accessed_at=[float("nan") if v is None else v for v in columns[5]],
                created_at=list(columns[6]),
                memory_type=list(columns[3]),
                decay_policy=list(columns[7]),
                is_protected=[bool(v) for v in columns[8]],
                status=list(columns[9]),
                now=moment,
                params=params,  # type: ignore[arg-type]
            )
            for row, value in zip(rows, current, strict=True):
                if float(value) < row[1] - 1e-12:
                    found[row[0]] = {"confidence": float(value), "base_confidence": float(value)}
        return found

    def protect(self, ids: Sequence[int], *, now: float | None = None) -> ChangeResult:
        return self.set_flag("protected", ids, now=now)

    def unprotect(self, ids: Sequence[int], *, now: float | None = None) -> ChangeResult:
        return self.set_flag("unprotected", ids, now=now)

    def archive(self, ids: Sequence[int], *, now: float | None = None) -> ChangeResult:
        return self.set_flag("archived", ids, now=now)

    def restore(self, ids: Sequence[int], *, now: float | None = None) -> ChangeResult:
        """Bring archived (or consolidated) memories back to active."""
        return self.change_fields(
            ids,
            {"status": "active", "consolidated_into": None, "superseded_by": None},
            "restored",
            now=now,
        )

    def supersede(
        self,
        old_id: int,
        new_id: int,
        *,
        now: float | None = None,
        reason: str | None = None,
        run_id: int | None = None,
    ) -> ChangeResult:
        """Archive `old_id` as replaced by `new_id`, which states the same fact's newer value
        (docs/ARCHITECTURE.md, "Facts that change"): old gets superseded_by = new, reason
        "superseded by #new" and a `superseded` event; new a `supersedes` event naming old.
        A protected old memory is refused (ValidationError): it goes to review instead.
        Undone like any event (its `before` is status active, no link)."""
        moment = now_ts() if now is None else now
        why = reason or f"superseded by #{new_id}"
        with self.transaction("superseding a memory"):
            old, new = self.require(old_id), self.require(new_id)
            if old.id == new.id:
                raise ValidationError(f"memory {old.id} cannot supersede itself")
            if old.is_protected:
                raise ValidationError(f"memory {old.id} is protected: not superseded")
            if new.status != "active":
                raise ValidationError(f"memory {new.id} is {new.status}: it supersedes nothing")
            if old.status != "active":
                return ChangeResult(unchanged=[old.id])
            result = self.change_fields(
                [old.id],
                {"status": "archived", "superseded_by": new.id},
                "superseded",
                now=moment,
                reason=why,
                run_id=run_id,
            )
            self.write_events(
                [
                    (
                        new.id,
                        moment,
                        self.actor,
                        "supersedes",
                        None,
                        dumps({"supersedes": old.id}),
                        run_id,
                        why,
                        None,
                    )
                ]
            )
        return result

    def superseded_by_each(self, ids: Sequence[int]) -> dict[int, list[int]]:
        """id -> the memories it supersedes (archived, linked to it), oldest first."""
        wanted = list(dict.fromkeys(int(i) for i in ids))
        found: dict[int, list[int]] = {}
        for chunk, marks in chunks(wanted):
            for ident, newer in self._query(
                f"SELECT id, superseded_by FROM memory WHERE superseded_by IN ({marks}) "
                "ORDER BY created_at, id",
                chunk,
            ):
                found.setdefault(newer, []).append(ident)
        return found

    def forget(
        self,
        ids: Sequence[int],
        reason: str = "forgotten by an operator",
        *,
        now: float | None = None,
    ) -> ChangeResult:
        """Archive with a reason (kept in metadata and in the event); restorable."""
        return self.change_fields(ids, {"status": "archived"}, "archived", now=now, reason=reason)

    def edit(
        self, memory_id: int, fields: dict[str, Any], *, now: float | None = None
    ) -> ChangeResult:
        """Change editable fields of one memory; a manual confidence also resets its base."""
        unknown = set(fields) - set(EDITABLE)
        if unknown:
            raise ValidationError(f"cannot edit {', '.join(sorted(unknown))}")
        checked = {name: check_field(name, value) for name, value in fields.items()}
        if "content" in checked and not str(checked["content"]).strip():
            raise ValidationError("content is empty")
        if "confidence" in checked:
            checked["base_confidence"] = checked["confidence"]
        return self.change_fields([memory_id], checked, "edited", now=now)

    def change_fields(
        self,
        ids: Sequence[int],
        values: dict[str, Any],
        kind: str,
        *,
        now: float | None = None,
        reason: str | None = None,
        run_id: int | None = None,
        extra: dict[int, dict[str, Any]] | None = None,
    ) -> ChangeResult:
        """Set the same values on many memories in one transaction, one event per memory that
        actually changed, with the fields' values before and after; `extra` adds values of
        some memories' own (a protected memory's confidence as of now)."""
        moment = now_ts() if now is None else now
        extra = extra or {}
        own = sorted({name for more in extra.values() for name in more} - set(values))
        fields = [*values, *own]
        columns = [f for f in fields if f != "metadata"]  # metadata is written on its own
        wanted = list(dict.fromkeys(int(i) for i in ids))
        result = ChangeResult()
        with self.transaction(f"{kind} {memories(len(wanted))}") as conn:
            current: dict[int, tuple[Any, ...]] = {}
            for chunk, marks in chunks(wanted):
                for row in conn.execute(
                    f"SELECT id, {', '.join(fields)}, metadata FROM memory WHERE id IN ({marks})",
                    chunk,
                ):
                    current[row[0]] = row[1:]
            updates: list[list[Any]] = []
            events: list[tuple[Any, ...]] = []
            for ident in wanted:
                if ident not in current:
                    result.missing.append(ident)
                    continue
                before_values = current[ident][:-1]
                stored = dict(zip(fields, before_values, strict=True))
                wanted_values = {**stored, **values, **extra.get(ident, {})}
                if not any(stored[f] != values[f] for f in values):
                    result.unchanged.append(ident)
                    continue
                before = {f: b for f, b in stored.items() if b != wanted_values[f]}
                after = {f: wanted_values[f] for f in before}
                # An edit of the metadata itself is its new value, and the reason (if any) is
                # kept in that; either way the metadata column is written once, below.
                metadata = wanted_values.pop("metadata", None) or current[ident][-1]
                meta = json.loads(metadata or "{}")
                if reason is not None:
                    meta["forget_reason"] = reason
                elif "status" in values:
                    # The reason a memory was forgotten ends with the status it explained.
                    meta.pop("forget_reason", None)
                if meta != json.loads(metadata or "{}"):
                    # Written with the event, so that its undo puts the metadata back too.
                    before.setdefault("metadata", current[ident][-1] or "{}")
                    after["metadata"] = dumps(meta)
                    metadata = dumps(meta)
                updates.append([*(wanted_values[f] for f in columns), moment, metadata, ident])
                events.append(
                    (
                        ident,
                        moment,
                        self.actor,
                        kind,
                        dumps(decode_fields(before)),
                        dumps(decode_fields(after)),
                        run_id,
                        reason,
                        None,
                    )
                )
                result.changed.append(ident)
            if updates:
                assignments = "".join(f"{f} = ?, " for f in columns)
                conn.executemany(
                    f"UPDATE memory SET {assignments}updated_at = ?, metadata = ?, "
                    f"{WRITE_MARKS} WHERE id = ?",
                    updates,
                )
                self.write_events(events)
        self.notify(kind, result.changed)
        return result

    def record_access(
        self,
        ids: Sequence[int],
        *,
        now: float | None = None,
        query: str | None = None,
        scores: dict[int, dict[str, Any]] | None = None,
        policy: str | None = None,
        kind: str = "accessed",
    ) -> ChangeResult:
        """Reinforce memories that were retrieved and log each access (kind "reinforced"
        when the agent met the memory again rather than recalled it).

        The boost starts from the confidence as of `now` under the store's policy (or
        `policy`, with the store's parameters for it), so a recall never erases the decay
        since the last access (docs/ARCHITECTURE.md, "Reinforcement on access"). The event
        keeps the stored value, the as-of-now value (`current`) and the new one."""
        from memory_console.policies import reinforce_from_now

        moment = now_ts() if now is None else now
        result = ChangeResult()
        with self.transaction("recording an access") as conn:
            params = self.settings().params(policy)
            for ident in dict.fromkeys(int(i) for i in ids):
                row = conn.execute(
                    "SELECT confidence, base_confidence, memory_type, retrieval_count, "
                    "last_accessed_at, created_at, decay_policy, is_protected, status "
                    "FROM memory WHERE id = ?",
                    (ident,),
                ).fetchone()
                if row is None:
                    result.missing.append(ident)
                    continue
                confidence, base, memory_type, count, last, created, decay, protected, status = row
                current, boosted = reinforce_from_now(
                    confidence=[confidence],
                    base_confidence=[base],
                    retrieval_count=[count],
                    last_accessed_at=[float("nan") if last is None else last],
                    created_at=[created],
                    memory_type=[memory_type],
                    decay_policy=[decay],
                    is_protected=[bool(protected)],
                    status=[status],
                    now=moment,
                    params=params,  # type: ignore[arg-type]
                )
                new, as_of_now = float(boosted[0]), float(current[0])
                conn.execute(
                    "UPDATE memory SET confidence = ?, base_confidence = ?, retrieval_count = ?, "
                    f"last_accessed_at = ?, {WRITE_MARKS} WHERE id = ?",
                    (new, new, count + 1, moment, ident),
                )
                score = (scores or {}).get(ident)
                self.write_events(
                    [
                        (
                            ident,
                            moment,
                            self.actor,
                            kind,
                            dumps(
                                {
                                    "confidence": confidence,
                                    "current": as_of_now,
                                    "retrieval_count": count,
                                    "last_accessed_at": last,
                                }
                            ),
                            dumps(
                                {
                                    "confidence": new,
                                    "retrieval_count": count + 1,
                                    "last_accessed_at": moment,
                                }
                            ),
                            None,
                            query,
                            dumps(score) if score is not None else None,
                        )
                    ]
                )
                result.changed.append(ident)
        self.notify("accessed", result.changed)
        return result

    def erasure_scope(self, ids: Sequence[int]) -> ErasureScope:
        """What purging `ids` would remove (the selected memories, those joined by
        consolidation links, the rows held about them, migration backups), read-only."""
        return erase.erasure_scope(self, ids)

    def purge_file(self, now: float, elsewhere: Path) -> Path | None:
        """Where a purge writes its file unless told: beside an SQLite store, in `elsewhere`
        (the user's data directory) for a PostgreSQL one (None: every name for this second is
        taken)."""
        return erase.default_purge_file(self, now, elsewhere)

    def purge(
        self,
        ids: Sequence[int],
        out_path: str | os.PathLike[str],
        *,
        now: float | None = None,
        selection: str = "ids",
        wal_wait: float = 5.0,
    ) -> PurgeResult:
        """Erase memories for good, leaving no trace in the store's files, after writing them
        (each with its whole history) to a new owner-only JSONL file synced to disk: the only
        way back is importing that file. An existing path, a symlink, a pipe or a device is
        refused before the write lock is taken; if writing fails, nothing is erased.

        The erasure takes in memories linked by consolidation (erasure_scope), deletes the
        memories, all their events and vectors, redacts their logged queries where other
        memories' accesses log them too, and keeps one audit row (no text; `selection` names
        the filters that chose the ids, never their values). Then it merges the text index,
        and truncates the WAL, waiting up to `wal_wait` seconds for other readers
        (docs/ARCHITECTURE.md, "Erasure"); on PostgreSQL it rewrites the tables with VACUUM
        FULL instead, waiting as long for older snapshots and locks ("Two backends")."""
        return erase.purge(self, ids, out_path, now=now, selection=selection, wal_wait=wal_wait)

    def erasures(self, limit: int = 50) -> list[ErasureRecord]:
        """The audit rows of erasures, newest first."""
        return erase.erasures(self, limit)

    def undo_event_group(
        self, event_ids: Sequence[int], *, now: float | None = None
    ) -> ChangeResult:
        """Undo a person's last action: restore each event's `before` values, unless the memory
        changed again since (then it is reported as unchanged) or the event is undone already
        (reported as undone: an undo repeated writes nothing)."""
        moment = now_ts() if now is None else now
        result = ChangeResult()
        announced: dict[str, list[int]] = {}
        with self.transaction("undo") as conn:
            for event_id in event_ids:
                row = conn.execute(
                    "SELECT memory_id, kind, before, after FROM memory_event WHERE id = ?",
                    (event_id,),
                ).fetchone()
                if row is None:
                    raise NotFoundError(f"no event {event_id}")
                memory_id, kind, before_json, after_json = row
                later = conn.execute(
                    "SELECT id, query FROM memory_event "
                    "WHERE memory_id = ? AND id > ? AND kind != 'accessed'",
                    (memory_id, event_id),
                ).fetchall()
                if undone_since(event_id, later):  # undoing it again would write it again
                    result.undone.append(memory_id)
                    continue
                if changed_since(later):
                    result.unchanged.append(memory_id)
                    continue
                before = json.loads(before_json or "{}")
                values = encode_fields(before)
                if not values:
                    result.unchanged.append(memory_id)
                    continue
                assignments = ", ".join(f"{f} = ?" for f in values)
                conn.execute(
                    f"UPDATE memory SET {assignments}, updated_at = ?, {WRITE_MARKS} WHERE id = ?",
                    [*values.values(), moment, memory_id],
                )
                self.write_events(
                    [
                        (
                            memory_id,
                            moment,
                            self.actor,
                            undo_kind(kind),
                            after_json,
                            dumps(before),
                            None,
                            f"{UNDO_NOTE}{event_id}",
                            None,
                        )
                    ]
                )
                result.changed.append(memory_id)
                announced.setdefault(status_change(before), []).append(memory_id)
        # Each memory announced as what the undo did to it: an undo of a restore archives.
        for kind, ids in announced.items():
            self.notify(kind, ids)
        return result

    def last_event_ids(self, actor: str, kinds: Sequence[str], at: float) -> list[int]:
        """Ids of the events one action wrote (same actor and time), for undo of the last action."""
        marks = ",".join("?" * len(kinds))
        rows = self._query(
            "SELECT id FROM memory_event WHERE actor = ? AND at = ? "
            f"AND kind IN ({marks}) ORDER BY id",
            (actor, at, *kinds),
        )
        return [r[0] for r in rows]


UNDO_NOTE = "undo of event "


def undone_since(event_id: int, later: list[tuple[int, str | None]]) -> bool:
    """Whether an event was undone by a later one that is not itself undone."""
    notes = {ident: query for ident, query in later if query and query.startswith(UNDO_NOTE)}
    undone = {int(query[len(UNDO_NOTE) :]) for query in notes.values()}
    return any(
        query == f"{UNDO_NOTE}{event_id}" and ident not in undone for ident, query in notes.items()
    )


def changed_since(later: list[tuple[int, str | None]]) -> bool:
    """Whether events after the one being undone changed the memory: events that were
    themselves undone, and the undo events, cancel out (so undo works as a stack)."""
    undone = {
        int(query[len(UNDO_NOTE) :]) for _, query in later if query and query.startswith(UNDO_NOTE)
    }
    return any(
        ident not in undone and not (query or "").startswith(UNDO_NOTE) for ident, query in later
    )


def status_change(values: dict[str, Any]) -> str:
    """How listeners hear of a memory set back to `values`: restored (active again),
    archived (out of search) or edited."""
    if "status" not in values:
        return "edited"
    return "restored" if values["status"] == "active" else "archived"


def memories(count: int) -> str:
    return "1 memory" if count == 1 else f"{count} memories"


def decode_fields(values: dict[str, Any]) -> dict[str, Any]:
    """Event JSON keeps lists and objects as such, not as their stored JSON text."""
    out = dict(values)
    for name in JSON_COLUMNS:
        if name in out and isinstance(out[name], str):
            out[name] = json.loads(out[name])
    for name in FLAG_COLUMNS:
        if name in out:
            out[name] = bool(out[name])
    return out


def encode_fields(values: dict[str, Any]) -> dict[str, Any]:
    """The database values of fields recorded in an event."""
    out: dict[str, Any] = {}
    for name, value in values.items():
        if name not in MEMORY_COLUMNS or name in ("id", "revision"):
            continue
        if name in JSON_COLUMNS:
            out[name] = dumps(value)
        elif name in FLAG_COLUMNS:
            out[name] = int(bool(value))
        else:
            out[name] = value
    return out


def undo_kind(kind: str) -> str:
    """The event kind that takes back an event of `kind`."""
    return {
        "protected": "unprotected",
        "unprotected": "protected",
        "archived": "restored",
        "restored": "archived",
        "superseded": "restored",
    }.get(kind, "edited")


def keyset_segments(
    sort: str, descending: bool, after: Cursor | None
) -> list[tuple[str | None, list[Any], str]]:
    """The (condition, params, ORDER BY) queries that continue a (sort, id) order after a
    cursor, read in turn until the page is full. NULLs come first when ascending and last
    when descending (SQLite's order, on either backend). The NULL run is its own segment,
    from the first page on, so every query is one index range read in the index's order: an
    OR across the NULL boundary would scan the table, and on PostgreSQL an ORDER BY naming
    where NULLs go (NULLS LAST, descending) matches no index and sorted every row (0.45 s a
    page at 1,000,000 memories)."""
    direction = "DESC" if descending else "ASC"
    by_id = f"id {direction}"
    if sort == "id":
        if after is None:
            return [(None, [], by_id)]
        return [("id < ?" if descending else "id > ?", [after.id], by_id)]
    # Without NULLs in a segment, the plain order is SQLite's on both backends.
    by_sort = f"{sort} {direction}, id {direction}"
    if after is None:
        nulls: tuple[str | None, list[Any], str] = (f"{sort} IS NULL", [], by_id)
        values: tuple[str | None, list[Any], str] = (f"{sort} IS NOT NULL", [], by_sort)
        return [values, nulls] if descending else [nulls, values]
    if after.value is None:
        if descending:
            return [(f"{sort} IS NULL AND id < ?", [after.id], by_id)]
        return [
            (f"{sort} IS NULL AND id > ?", [after.id], by_id),
            (f"{sort} IS NOT NULL", [], by_sort),
        ]
    op = "<" if descending else ">"
    segments: list[tuple[str | None, list[Any], str]] = [
        (f"({sort}, id) {op} (?, ?)", [after.value, after.id], by_sort)
    ]
    if descending:
        segments.append((f"{sort} IS NULL", [], by_id))
    return segments
