"""Opening a store file safely: refusing foreign or corrupt files, creating, migrating."""

from __future__ import annotations

import os
import shutil
import sqlite3
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

from memory_console.store import held
from memory_console.store.ddl import FTS_TRIGGERS, schema_statements
from memory_console.store.dialect import WRITE_WAIT_MS
from memory_console.store.errors import StoreDamaged, StoreError, damaged, is_damage
from memory_console.store.migrations import MIGRATIONS
from memory_console.store.schema import SCHEMA_VERSION
from memory_console.store.vector_log import VECTOR_LOG_TRIGGERS, new_store_id

APPLICATION_ID = 0x4D434F4E  # "MCON", written in the file header of every store we create
SQLITE_MAGIC = b"SQLite format 3\x00"
BUSY_TIMEOUT_MS = WRITE_WAIT_MS  # a writer's wait for the write lock, per attempt
LOW_DISK_BYTES = 64 * 1024  # less free space than this: an open that fails blames the disk


def create_new_file(path: Path) -> None:
    """Create an empty file readable by its owner only, before SQLite writes to it."""
    for folder in reversed([path.parent, *path.parent.parents]):
        if not folder.exists():
            folder.mkdir(mode=0o700, exist_ok=True)  # new folders: owner only
    fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    os.close(fd)


def check_header(path: Path) -> None:
    """Refuse a file that is not SQLite before SQLite gets a chance to touch it.

    It opens and closes the file, so it runs only while this process holds no connection to
    it (see open_store_connection)."""
    try:
        with path.open("rb") as handle:
            head = handle.read(100)
    except OSError as error:
        raise StoreError(f"{path}: cannot read: {error.strerror}") from error
    if head and not head.startswith(SQLITE_MAGIC):
        raise StoreError(f"{path}: not an SQLite database; memory-console will not touch it")
    if head and len(head) < 100:
        raise StoreError(f"{path}: truncated SQLite file; memory-console will not touch it")
    wal = Path(f"{path}-wal")
    settled = not wal.exists() or wal.stat().st_size == 0  # no checkpoint can be under way
    if head and settled and path.stat().st_size < header_size(head):
        raise StoreError(
            f"{path}: truncated SQLite file (shorter than its header says); "
            "memory-console will not touch it"
        )


def header_size(head: bytes) -> int:
    """The file size an SQLite header promises: page size x page count, or 0 when the page
    count in the header is not valid (written by an old SQLite)."""
    page_size = int.from_bytes(head[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    pages = int.from_bytes(head[28:32], "big")
    if head[24:28] != head[92:96]:  # change counter != version-valid-for: count not valid
        return 0
    return page_size * pages


def connect(path: Path, *, read_only: bool = False) -> sqlite3.Connection:
    """A connection in autocommit mode (transactions are explicit), WAL and a busy timeout,
    counted among the files this process holds until it is closed.

    Read-only, in a directory where SQLite cannot create the -shm file and with no -wal file
    (so nothing is pending), the file is read as immutable: WAL mode could not open it."""
    options: dict[str, Any] = {
        "isolation_level": None,
        "check_same_thread": False,
        "factory": held.HeldConnection,
    }
    with held.LOCK:
        if read_only:
            uri = f"file:{quote(str(path))}?mode=ro"
            wal = Path(f"{path}-wal")
            if not wal.exists() and not os.access(path.parent, os.W_OK | os.X_OK):
                uri += "&immutable=1"
            conn = sqlite3.connect(uri, uri=True, **options)
        else:
            conn = sqlite3.connect(path, **options)
        assert isinstance(conn, held.HeldConnection)
        conn.hold(path)
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    if not read_only:
        # Deleted cells and freed pages are zeroed, so an erasure leaves no text behind; some
        # SQLite builds default to it, others do not, so it is never left to the build.
        conn.execute("PRAGMA secure_delete = ON")
    return conn


def open_store_connection(
    path: Path, *, read_only: bool = False, create: bool = True
) -> tuple[sqlite3.Connection, Path | None]:
    """Open (creating or migrating when allowed) a memory-console store, or raise StoreError;
    also returns the backup a migration made (None when none ran)."""
    path = Path(path)
    created = False
    is_new = not path.exists() or path.stat().st_size == 0
    if path.is_dir():
        raise StoreError(f"{path}: is a directory, not a database file")
    if path.exists() and not path.is_file():
        raise StoreError(f"{path}: not a regular file, not a database file")
    if is_new:
        if read_only:
            raise StoreError(f"{path}: no such store (read-only mode does not create one)")
        if not create:
            raise StoreError(
                f"{path}: no such store; create one with: memory-console demo --db {path}"
            )
        if not path.exists():
            try:
                create_new_file(path)
            except OSError as error:
                raise StoreError(f"{path}: cannot create: {error.strerror}") from error
            created = True
    with held.LOCK:  # no other thread connects between the header check and this connection
        if not is_new and not held.holds(path):
            check_header(path)  # a file this process holds was checked when first opened
        try:
            conn = connect(path, read_only=read_only)
        except sqlite3.Error as error:
            raise StoreError(f"{path}: cannot open: {error}") from error
    try:
        backup = prepare(conn, path, read_only=read_only)
    except BaseException as error:
        conn.close()
        if created:  # a store that could not be set up is not left behind half made
            for suffix in ("", "-wal", "-shm"):
                Path(f"{path}{suffix}").unlink(missing_ok=True)
        if isinstance(error, OSError):
            raise StoreError(f"{path}: cannot back up before migrating: {error}") from error
        if isinstance(error, sqlite3.DatabaseError):
            if is_damage(error) and not disk_full(path, error):
                raise StoreDamaged(path, error) from error
            raise StoreError(open_failure(path, error, read_only=read_only)) from error
        raise
    return conn, backup


def disk_full(path: Path, error: sqlite3.DatabaseError) -> bool:
    """Whether a failure to read a store file is the disk's being full, not damage."""
    try:
        free = shutil.disk_usage(path.parent).free
    except OSError:
        free = None
    return "full" in str(error) or (free is not None and free < LOW_DISK_BYTES)


def open_failure(path: Path, error: sqlite3.DatabaseError, *, read_only: bool) -> str:
    """What went wrong when a store file could not be read: a full disk and a read-only
    directory are told apart from damage."""
    if disk_full(path, error):
        return f"{path}: the disk is full ({error}); nothing was written"
    if not read_only and not os.access(path.parent, os.W_OK | os.X_OK):
        return (
            f"{path}: its directory {path.parent} is read-only, and SQLite needs to create "
            f"{path.name}-wal and -shm there; open it with --read-only"
        )
    if is_damage(error):
        return damaged(path, error)
    return f"{path}: damaged or unreadable database ({error}); left untouched"


def prepare(conn: sqlite3.Connection, path: Path, *, read_only: bool) -> Path | None:
    """Identify the file, then create, migrate or accept it; returns the backup a migration
    made, if any."""
    app_id = conn.execute("PRAGMA application_id").fetchone()[0]
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    tables = {
        row[0]
        for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        if not row[0].startswith("sqlite_")
    }
    if app_id != APPLICATION_ID:
        if tables or app_id != 0:
            listed = ", ".join(sorted(tables)[:5]) or "none"
            raise StoreError(
                f"{path}: an SQLite database of another application (tables: {listed}); "
                "memory-console will not touch it"
            )
        if read_only:
            raise StoreError(f"{path}: empty database; read-only mode does not create a store")
        set_pragmas(conn)
        create_schema(conn)
        return None
    if version > SCHEMA_VERSION:
        raise StoreError(
            f"{path}: written by a newer memory-console (schema {version}; this program knows "
            f"up to {SCHEMA_VERSION}); upgrade memory-console to open it"
        )
    if version < SCHEMA_VERSION:
        if read_only:
            raise StoreError(
                f"{path}: schema {version} needs a migration to {SCHEMA_VERSION}; "
                "open it once without --read-only"
            )
        backup = migrate(conn, path, version)
        set_pragmas(conn)
        return backup
    if not read_only:
        set_pragmas(conn)
    return None


def set_pragmas(conn: sqlite3.Connection) -> None:
    """WAL lets a live agent keep writing while the console reads; NORMAL sync is WAL-safe."""
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")


def create_schema(conn: sqlite3.Connection, *, with_indexes: bool = True) -> None:
    """Create every table, index, the FTS index and its triggers in one transaction."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        for statement in schema_statements(with_indexes=with_indexes):
            conn.execute(statement)
        for statement in (*FTS_TRIGGERS, *VECTOR_LOG_TRIGGERS):
            conn.execute(statement)
        conn.execute(
            "INSERT INTO console_meta(key, value) VALUES ('application', 'memory-console'),"
            " ('created_at', ?), ('store_id', ?)",
            (str(time.time()), new_store_id()),
        )
        conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:  # SQLite rolls back by itself on some errors (a full disk)
            conn.execute("ROLLBACK")
        raise


def backup_path(path: Path, version: int) -> Path:
    """A free name beside the store for its copy before migrating it from `version`."""
    candidate = path.with_name(f"{path.name}.schema{version}.bak")
    number = 1
    while candidate.exists():
        candidate = path.with_name(f"{path.name}.schema{version}.bak{number}")
        number += 1
    return candidate


def migrate(conn: sqlite3.Connection, path: Path, version: int) -> Path:
    """Copy the file aside (complete, or not at all), then run every forward migration in one
    transaction: a crash leaves the store at its old schema or fully migrated. Returns the
    backup's path."""
    backup = backup_path(path, version)
    partial = backup.with_name(backup.name + ".partial")
    partial.unlink(missing_ok=True)
    create_new_file(partial)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    target = sqlite3.connect(partial)
    try:
        conn.backup(target)
    finally:
        target.close()
    os.replace(partial, backup)
    conn.execute("BEGIN IMMEDIATE")
    try:
        for step in range(version, SCHEMA_VERSION):
            if step not in MIGRATIONS:
                raise StoreError(f"{path}: no migration from schema {step}; backup at {backup}")
            MIGRATIONS[step](conn)
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:  # SQLite rolls back by itself on some errors (a full disk)
            conn.execute("ROLLBACK")
        raise
    return backup


def in_use(path: Path) -> bool:
    """Whether a connection (of this process or another) has the store at `path` open.

    A WAL database leaves WAL mode only when no other connection has it open, so the attempt
    tells; it is made only on a file about to be replaced, and only when this process holds
    no connection to it (opening and closing a held file would drop this process's locks)."""
    if held.holds(path):
        return True
    conn = sqlite3.connect(path, timeout=0, isolation_level=None)
    try:
        mode = conn.execute("PRAGMA journal_mode = DELETE").fetchone()[0]
    except sqlite3.OperationalError:  # busy or locked: somebody is writing
        return True
    except sqlite3.DatabaseError:  # not a database at all: nobody has it open as one
        return False
    finally:
        conn.close()
    return str(mode).lower() != "delete"
