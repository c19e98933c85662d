"""Erasure: which memories an erasure takes in, removing them without a trace, and its audit."""

from __future__ import annotations

import errno
import json
import os
import re
import sqlite3
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote

from memory_console.files import create_new, not_new, sync_directory
from memory_console.store import dialect, held
from memory_console.store.connection import Connection
from memory_console.store.db import BUSY_TIMEOUT_MS
from memory_console.store.errors import StoreError
from memory_console.store.postgres.erase import scrub
from memory_console.store.postgres.url import database_name
from memory_console.store.records import ChangeResult, chunks
from memory_console.timeutil import now_ts

if TYPE_CHECKING:
    from memory_console.store.door import Door

# What an erasure counts before and after, per table or kind of row (ErasureScope.held).
HELD_KEYS = ("memory", "memory_event", "accessed", "embedding", "memory_fts", "queries_elsewhere")
ACCESS_KINDS = ("accessed", "reinforced")  # events that log the query that met the memory
REDACTED = "[redacted]"  # what a query logged on another memory becomes when it is erased
WAL_RETRY_SECONDS = 0.1


@dataclass(frozen=True, slots=True)
class Joined:
    """A memory an erasure takes in besides those selected, and why."""

    id: int
    via: int  # the memory that brought it in
    why: str  # "absorbed #12" (built from #12) or "consolidated into #40" (lives on in #40)


@dataclass(slots=True)
class ErasureScope:
    """What an erasure would remove, decided before anything is written (read-only)."""

    selected: list[int] = field(default_factory=list)  # the ids asked for that exist
    missing: list[int] = field(default_factory=list)  # the ids asked for that do not
    joined: list[Joined] = field(default_factory=list)  # taken in by consolidation links
    held: dict[str, int] = field(default_factory=dict)  # rows per HELD_KEYS
    backups: list[Path] = field(default_factory=list)  # migration backups beside the store
    # Per backup: how many of these memories it holds (None: it could not be read).
    backup_memories: dict[Path, int | None] = field(default_factory=dict)

    @property
    def ids(self) -> list[int]:
        """Selected, then joined: every memory the erasure removes."""
        return [*self.selected, *(j.id for j in self.joined)]


@dataclass(frozen=True, slots=True)
class PurgeResult(ChangeResult):
    """A purge: `changed` lists every memory erased (selected and joined)."""

    scope: ErasureScope = field(default_factory=ErasureScope)  # as it was before
    after: dict[str, int] = field(default_factory=dict)  # HELD_KEYS counted again after
    wal: str | None = None  # None: WAL truncated; else what remains there and why
    # None: the tables' files were rewritten without the text (always on SQLite, whose
    # secure_delete zeroes it); else what remains there and why (PostgreSQL's VACUUM refused).
    tables: str | None = None
    erasure_id: int | None = None  # the audit row
    purge_file: Path | None = None  # None when nothing was erased (no file written)


@dataclass(frozen=True, slots=True)
class ErasureRecord:
    """One audit row: that an erasure happened, never what it erased."""

    id: int
    at: float
    actor: str
    memories: int
    purge_file: str
    selection: str


# -- scope ------------------------------------------------------------------------------


def existing(conn: Connection, ids: Sequence[int]) -> set[int]:
    found: set[int] = set()
    for part, marks in chunks(ids):
        rows = conn.execute(f"SELECT id FROM memory WHERE id IN ({marks})", part)
        found.update(row[0] for row in rows)
    return found


def links(conn: Connection, ids: Sequence[int]) -> list[tuple[int, int, str]]:
    """(linked memory, via, why) for each consolidation link touching `ids`: as the memories
    hold it now (consolidated_into) or as a `consolidated` event recorded it (a member
    restored since keeps its sentences in the consolidated text)."""
    found: list[tuple[int, int, str]] = []
    into_of = dialect.of(conn).consolidated_into
    for part, marks in chunks(ids):
        for member, into in conn.execute(
            f"SELECT id, consolidated_into FROM memory WHERE consolidated_into IN ({marks})", part
        ):
            found.append((member, into, f"consolidated into #{into}"))
        for member, into in conn.execute(
            "SELECT id, consolidated_into FROM memory WHERE consolidated_into IS NOT NULL "
            f"AND id IN ({marks})",
            part,
        ):
            found.append((into, member, f"absorbed #{member}"))
        for member, into in conn.execute(
            f"SELECT memory_id, {into_of} FROM memory_event WHERE kind = 'consolidated' "
            f"AND memory_id IN ({marks}) AND {into_of} IS NOT NULL",
            part,
        ):
            found.append((into, member, f"absorbed #{member}"))
        for member, into in conn.execute(
            f"SELECT memory_id, {into_of} FROM memory_event WHERE kind = 'consolidated' "
            f"AND {into_of} IN ({marks})",
            part,
        ):
            found.append((member, into, f"consolidated into #{into}"))
    return found


def joined_by_links(conn: Connection, selected: Sequence[int]) -> list[Joined]:
    """Memories linked to `selected` by consolidation, closed transitively, that still exist."""
    taken = set(selected)
    joined: list[Joined] = []
    frontier = list(selected)
    while frontier:
        candidates = [link for link in links(conn, frontier) if link[0] not in taken]
        alive = existing(conn, [link[0] for link in candidates])
        frontier = []
        for ident, via, why in sorted(candidates, key=lambda link: (link[1], link[0])):
            if ident in alive and ident not in taken:
                taken.add(ident)
                joined.append(Joined(ident, via, why))
                frontier.append(ident)
    return joined


def logged_queries(conn: Connection, ids: Sequence[int]) -> set[str]:
    """The queries logged with the accesses of these memories."""
    queries: set[str] = set()
    kinds = ",".join(f"'{k}'" for k in ACCESS_KINDS)
    for part, marks in chunks(ids):
        queries.update(
            r[0]
            for r in conn.execute(
                f"SELECT DISTINCT query FROM memory_event WHERE memory_id IN ({marks}) "
                f"AND kind IN ({kinds}) AND query IS NOT NULL",
                part,
            )
        )
    queries.discard(REDACTED)
    return queries


def queries_elsewhere(conn: Connection, ids: Sequence[int], queries: set[str]) -> list[int]:
    """Event ids of OTHER memories' accesses that log one of `queries` (to be redacted)."""
    erased = set(ids)
    kinds = ",".join(f"'{k}'" for k in ACCESS_KINDS)
    events: list[int] = []
    listed = sorted(queries)
    for part, marks in chunks(listed):
        events.extend(
            event
            for event, memory in conn.execute(
                f"SELECT id, memory_id FROM memory_event WHERE kind IN ({kinds}) "
                f"AND query IN ({marks})",
                part,
            )
            if memory not in erased
        )
    return sorted(events)


def count_held(conn: Connection, ids: Sequence[int]) -> dict[str, int]:
    """Rows held about these memories, per HELD_KEYS."""
    counts = dict.fromkeys(HELD_KEYS, 0)
    kinds = ",".join(f"'{k}'" for k in ACCESS_KINDS)
    text_index_rows = dialect.of(conn).text_index_rows
    for part, marks in chunks(ids):
        counts["memory"] += conn.execute(
            f"SELECT count(*) FROM memory WHERE id IN ({marks})", part
        ).fetchone()[0]
        for kind_is_access, number in conn.execute(
            f"SELECT kind IN ({kinds}), count(*) FROM memory_event WHERE memory_id IN ({marks}) "
            "GROUP BY 1",
            part,
        ):
            counts["accessed" if kind_is_access else "memory_event"] += number
        counts["embedding"] += conn.execute(
            f"SELECT count(*) FROM embedding WHERE memory_id IN ({marks})", part
        ).fetchone()[0]
        # The index's own per-document row, not the content table it reads text from.
        counts["memory_fts"] += conn.execute(text_index_rows.format(marks=marks), part).fetchone()[
            0
        ]
    counts["queries_elsewhere"] = len(queries_elsewhere(conn, ids, logged_queries(conn, ids)))
    return counts


def migration_backups(path: Path) -> list[Path]:
    """Copies a migration left beside the store (`<name>.schema<N>.bak*`): made before now,
    so they may hold what an erasure removes."""
    return sorted(p for p in path.parent.glob(f"{path.name}.schema*.bak*") if p.is_file())


def memories_in_backup(backup: Path, ids: Sequence[int]) -> int | None:
    """How many of `ids` a backup holds, read as an immutable file (a backup is no live
    store, so no lock is taken or dropped); None when it cannot be read or is held open."""
    if not ids or held.holds(backup):
        return None if ids else 0
    uri = f"file:{quote(str(backup))}?mode=ro&immutable=1"
    try:
        conn = sqlite3.connect(uri, uri=True)
    except sqlite3.Error:
        return None
    try:
        return len(existing(conn, ids))
    except sqlite3.Error:
        return None
    finally:
        conn.close()


def scope_in(conn: Connection, path: Path | None, ids: Sequence[int]) -> ErasureScope:
    """The scope of erasing `ids`, read on `conn` (inside a snapshot or the erasure's own
    write transaction). `path` is the store's file (None: a PostgreSQL store, which has no
    migration backups beside it; its backups are the operator's)."""
    wanted = list(dict.fromkeys(int(i) for i in ids))
    present = existing(conn, wanted)
    scope = ErasureScope(
        selected=[i for i in wanted if i in present],
        missing=[i for i in wanted if i not in present],
    )
    scope.joined = joined_by_links(conn, scope.selected)
    scope.held = count_held(conn, scope.ids)
    scope.backups = migration_backups(path) if path is not None else []
    scope.backup_memories = {b: memories_in_backup(b, scope.ids) for b in scope.backups}
    return scope


def erasure_scope(store: Door, ids: Sequence[int]) -> ErasureScope:
    with store.snapshot():
        return store.read(scope_in, store_file(store), ids)


def store_file(store: Door) -> Path | None:
    """The store's file, or None for a PostgreSQL store."""
    return store.path if store.url is None else None


def default_purge_file(store: Door, now: float, elsewhere: Path) -> Path | None:
    """Where a purge writes its file when no --out is given: beside an SQLite store; for a
    PostgreSQL store, which has no folder of its own on this machine, in `elsewhere` (the
    caller's: the user's data directory, made owner-only when it is created), named after the
    database. None when a thousand such names are taken for this second."""
    from memory_console.files import purge_file_beside

    path = store_file(store)
    if path is not None:
        return purge_file_beside(path, now)
    assert store.url is not None
    name = database_name(store.url)
    elsewhere.mkdir(mode=0o700, parents=True, exist_ok=True)
    return purge_file_beside(elsewhere / re.sub(r"[^A-Za-z0-9._-]", "_", name), now)


# -- purge ------------------------------------------------------------------------------


def write_purge_file(store: Door, out: Path, ids: Sequence[int]) -> None:
    """Every memory with its whole history (access events and their queries included) into
    a new owner-only file, synced with its directory; removed again if anything fails."""
    from memory_console.store.wire import export_record, json_line

    records = store.get_many(ids)
    try:
        fd = create_new(out)
    except OSError as error:
        raise StoreError(f"{out}: cannot create: {error.strerror}; nothing was purged") from error
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            for ident in ids:
                handle.write(json_line(export_record(records[ident], store.history(ident))))
            handle.flush()
            os.fsync(handle.fileno())
        sync_directory(out)
    except BaseException as error:
        out.unlink(missing_ok=True)
        if isinstance(error, OSError):
            full = error.errno == errno.ENOSPC
            reason = "the disk is full" if full else error.strerror or str(error)
            raise StoreError(f"{out}: cannot write: {reason}; nothing was purged") from error
        raise


def redact(conn: Connection, events: Sequence[int]) -> None:
    """Replace the query of these access events; the matched terms in their scores came
    from that query, so they go too (the scores themselves stay)."""
    for part, marks in chunks(events):
        rows = conn.execute(
            f"SELECT id, scores FROM memory_event WHERE id IN ({marks})", part
        ).fetchall()
        updates = []
        for event, scores in rows:
            if scores:
                try:
                    data = json.loads(scores)
                except ValueError:
                    data = None
                if isinstance(data, dict) and "matched" in data:
                    data["matched"] = []
                    scores = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
                elif not isinstance(data, dict):
                    scores = None
            updates.append((REDACTED, scores, event))
        conn.executemany("UPDATE memory_event SET query = ?, scores = ? WHERE id = ?", updates)


def audit_name(store_path: Path | None, out: Path) -> str:
    """The purge file as the audit row names it: its name when it lies beside the store,
    else (and always for a PostgreSQL store) its absolute path (the file is the only undo;
    a bare name could not find it)."""
    absolute = out.absolute()
    if store_path is not None and absolute.parent == store_path.absolute().parent:
        return out.name
    return str(absolute)


def purge(
    store: Door,
    ids: Sequence[int],
    out_path: str | os.PathLike[str],
    *,
    now: float | None,
    selection: str,
    wal_wait: float,
) -> PurgeResult:
    """See Store.purge."""
    moment = now_ts() if now is None else now
    out = Path(out_path)
    taken = not_new(out)
    if taken is not None:
        raise StoreError(f"{taken}; purge writes a new file, so nothing was purged")
    wanted = list(dict.fromkeys(int(i) for i in ids))
    path = store_file(store)
    with store.transaction(f"purging {len(wanted)} memories") as conn:
        scope = scope_in(conn, path, wanted)
        erased = scope.ids
        if not erased:
            return PurgeResult(missing=scope.missing, scope=scope, after=dict(scope.held))
        write_purge_file(store, out, erased)
        elsewhere = queries_elsewhere(conn, erased, logged_queries(conn, erased))
        for part, marks in chunks(erased):
            conn.execute(f"DELETE FROM memory WHERE id IN ({marks})", part)  # FTS by trigger
            conn.execute(f"DELETE FROM memory_event WHERE memory_id IN ({marks})", part)
            conn.execute(f"DELETE FROM embedding WHERE memory_id IN ({marks})", part)
        redact(conn, elsewhere)
        erasure_id = conn.execute(
            "INSERT INTO erasure (at, actor, memories, purge_file, selection) "
            "VALUES (?, ?, ?, ?, ?) RETURNING id",
            (moment, store.actor, len(erased), audit_name(path, out), selection),
        ).fetchone()[0]
        # The erasure's own transaction id: VACUUM can remove its rows once no session
        # reads the store as it was before (PostgreSQL only; SQLite has no such id).
        xid = store.dialect.erasure_xid(conn)
    store.notify("purged", erased)
    tables: str | None = None
    if path is not None:
        from memory_console.store.vector_file import erase_rows  # numpy: only to erase

        erase_rows(path, erased)  # the vector index file beside the store
        merge_text_index(store)
        wal = truncate_wal(store, wal_wait)
    else:
        with store.lock:
            tables, wal = scrub(store.connection, xid, wal_wait)
    with store.snapshot():
        after = store.read(count_held, erased)
    return PurgeResult(
        changed=erased,
        missing=scope.missing,
        scope=scope,
        after=after,
        wal=wal,
        tables=tables,
        erasure_id=erasure_id,
        purge_file=out,
    )


def merge_text_index(store: Door) -> None:
    """Merge the full-text index's segments into one: a delete only adds a marker beside
    the old segments (which still hold the text) until they are merged. SQLite 3.40 has no
    FTS5 'secure-delete' option (3.42+), so the merge is what removes the text."""
    with store.transaction("merging the text index") as conn:
        conn.execute("INSERT INTO memory_fts(memory_fts) VALUES ('optimize')")


def truncate_wal(store: Door, wait: float) -> str | None:
    """Copy the WAL into the store and truncate it to zero bytes; while another process
    reads an older state it cannot be reset: retry for up to `wait` seconds, then say what
    remains. None: the WAL is empty."""
    deadline = time.monotonic() + max(wait, 0.0)
    with store.lock:
        conn = store.connection
        conn.execute("PRAGMA busy_timeout = 0")  # our own bounded wait, not SQLite's 5 s
        try:
            while True:
                busy, frames, copied = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
                if not busy:
                    return None
                if time.monotonic() >= deadline:
                    break
                time.sleep(WAL_RETRY_SECONDS)
        finally:
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    return (
        f"the store's -wal file still holds {max(frames, 0)} pages written before and during "
        f"the erasure ({max(copied, 0)} copied into the store) because another process is "
        f"reading the store: they are removed when every other process closes it "
        f"(waited {wait:g} s)"
    )


def erasures(store: Door, limit: int) -> list[ErasureRecord]:
    def read(conn: Connection) -> list[ErasureRecord]:
        return [
            ErasureRecord(*row)
            for row in conn.execute(
                "SELECT id, at, actor, memories, purge_file, selection FROM erasure "
                "ORDER BY at DESC, id DESC LIMIT ?",
                (limit,),
            )
        ]

    return store.read(read)
