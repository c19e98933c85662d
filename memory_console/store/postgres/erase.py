"""What an erasure does on PostgreSQL after its commit: the tables it touched rewritten by
VACUUM FULL, so no byte of the erased text is left in their files, then a CHECKPOINT.

Deleted rows stay in a table's pages until VACUUM removes them, and plain VACUUM is not
enough: it leaves a B-tree's keys (an owner's name) and the GIN index's entries (the words of
the text) in place, and the space it frees keeps its bytes until reused. VACUUM FULL writes
each table and its indexes anew from the rows that remain and drops the old files. What
PostgreSQL keeps besides (the write-ahead log, backups, replicas) is said in the note the
purge returns and in docs/ARCHITECTURE.md, "Two backends".
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from memory_console.store.errors import StoreBusyError, StoreError

if TYPE_CHECKING:
    from memory_console.store.connection import Connection

# The tables a purge deletes from or redacts, rewritten by VACUUM FULL after (memory_search and
# embedding_vector lose their rows by memory's and embedding's triggers).
ERASED_TABLES = ("memory", "memory_search", "memory_event", "embedding", "embedding_vector")
POLL_SECONDS = 0.1
WAL_KEEPS = (
    "PostgreSQL's write-ahead log still holds the erased text until the server recycles its "
    "segments after later checkpoints (longer under wal_keep_size, a replication slot or WAL "
    "archiving), and WAL archives, base backups and replicas keep their own copies"
)


def scrub(
    conn: Connection, xid: str, wait: float, tables: Sequence[str] = ERASED_TABLES
) -> tuple[str | None, str]:
    """Rewrite `tables` without the rows transaction `xid` deleted, then checkpoint, on the
    store's connection (the caller holds the store's lock). Returns (what remains in the
    tables' files and why, None when nothing does; what the write-ahead log keeps). Waits up
    to `wait` seconds for sessions that read the store as it was before the erasure (VACUUM
    may not remove rows they can still see) and as long again for the tables' locks; a role
    that may not VACUUM or CHECKPOINT is told, never an error: the erasure itself is
    committed."""
    role = conn.execute("SELECT current_user").fetchone()[0]
    left = unvacuumable(conn, tables)
    if left:
        remains: str | None = (
            f"the role {role} may not VACUUM {', '.join(left)} (it must own them, or have "
            "MAINTAIN on them since PostgreSQL 17), so the erased text stays in the tables' "
            f"files until their owner runs: {vacuum_full(tables)}"
        )
    else:
        remains = vacuum(conn, tables, xid, wait)
    wal = WAL_KEEPS
    refused = checkpoint(conn)
    if refused:
        wal += (
            f"; CHECKPOINT was refused to the role {role} (it needs superuser or "
            "pg_checkpoint), so the server's next scheduled checkpoint flushes the erasure"
        )
    return remains, wal


def vacuum_full(tables: Sequence[str]) -> str:
    return f"VACUUM (FULL, ANALYZE) {', '.join(tables)}"


def unvacuumable(conn: Connection, tables: Sequence[str]) -> list[str]:
    """The tables this role may not VACUUM. PostgreSQL does not refuse them with an error:
    it warns and skips them, so the role's rights are read first."""
    version = int(conn.execute("SHOW server_version_num").fetchone()[0])
    maintain = " AND NOT has_table_privilege(c.oid, 'MAINTAIN')" if version >= 170000 else ""
    rows = conn.execute(
        "SELECT c.relname FROM pg_class AS c WHERE c.oid = ANY(?::regclass[]) "
        f"AND NOT pg_has_role(c.relowner, 'USAGE'){maintain} ORDER BY c.relname",
        (list(tables),),
    )
    return [row[0] for row in rows]


def older_readers(conn: Connection, xid: str) -> int:
    """Sessions of this database (and replication slots) whose snapshot is older than
    transaction `xid`: the rows it deleted may still be visible to them."""
    row = conn.execute(
        "SELECT (SELECT count(*) FROM pg_stat_activity WHERE pid <> pg_backend_pid() "
        "AND datname = current_database() AND backend_xmin IS NOT NULL "
        "AND age(backend_xmin) >= age(xid(?::xid8))) + "
        "(SELECT count(*) FROM pg_replication_slots WHERE xmin IS NOT NULL "
        "AND age(xmin) >= age(xid(?::xid8)))",
        (xid, xid),
    ).fetchone()
    return int(row[0])


def vacuum(conn: Connection, tables: Sequence[str], xid: str, wait: float) -> str | None:
    """VACUUM FULL each table once no older reader is left; what remains, or None."""
    deadline = time.monotonic() + max(wait, 0.0)
    readers = older_readers(conn, xid)
    while readers and time.monotonic() < deadline:
        time.sleep(POLL_SECONDS)
        readers = older_readers(conn, xid)
    if readers:
        return (
            f"{readers} other session{'s' if readers > 1 else ''} still read the store as it "
            f"was before the erasure (waited {wait:g} s), and VACUUM may not remove rows they "
            "can see, so the erased text stays in the tables' files until they end and this "
            f"runs: {vacuum_full(tables)}"
        )
    left: list[str] = []
    why = ""
    conn.execute(f"SET lock_timeout = {max(int(wait * 1000), 100)}")
    try:
        for table in tables:
            try:
                conn.execute(f"VACUUM (FULL, ANALYZE) {table}")
            except StoreBusyError:
                left.append(table)
                why = why or f"could not lock it within {wait:g} s (another session uses it)"
            except StoreError as error:
                left.append(table)
                why = why or f"failed ({error})"
    finally:
        conn.execute("RESET lock_timeout")
    if not left:
        return None
    return (
        f"VACUUM FULL of {', '.join(left)} {why}, so the erased text stays in the files of "
        f"{'them' if len(left) > 1 else 'it'} until this runs: {vacuum_full(left)}"
    )


def checkpoint(conn: Connection) -> bool:
    """CHECKPOINT, so the files and the erasure are on disk and the write-ahead log before
    it can be recycled at the server's next checkpoint; True when the role may not."""
    from psycopg import errors

    try:
        conn.execute("CHECKPOINT")
    except StoreError as error:
        if isinstance(error.__cause__, errors.InsufficientPrivilege):
            return True
        raise
    return False
