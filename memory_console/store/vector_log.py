"""The vector log: which memories changed in ways that alter the vector index, in order.

Triggers fill vector_log in the transaction of every such change, so the index file kept beside
the store (store/vector_file.py) learns what it misses since it was written; nothing that writes
can forget to tell it.
"""

from __future__ import annotations

import secrets
import sqlite3

# The vector index file beside the store learns what changed since it was written from
# vector_log, filled here in the writing transaction itself: no code path can forget it. Only
# what can change the indexed set is logged (not decay's confidence updates).
VECTOR_LOG_TRIGGERS = (
    "CREATE TRIGGER vector_log_embedding_ai AFTER INSERT ON embedding BEGIN "
    "INSERT INTO vector_log(memory_id) VALUES (new.memory_id); END",
    "CREATE TRIGGER vector_log_embedding_au AFTER UPDATE ON embedding BEGIN "
    "INSERT INTO vector_log(memory_id) VALUES (new.memory_id); "
    "INSERT INTO vector_log(memory_id) SELECT old.memory_id "
    "WHERE old.memory_id != new.memory_id; END",
    "CREATE TRIGGER vector_log_embedding_ad AFTER DELETE ON embedding BEGIN "
    "INSERT INTO vector_log(memory_id) VALUES (old.memory_id); END",
    "CREATE TRIGGER vector_log_memory_au AFTER UPDATE OF status, owner, topic ON memory "
    "WHEN old.status IS NOT new.status OR old.owner IS NOT new.owner "
    "OR old.topic IS NOT new.topic BEGIN "
    "INSERT INTO vector_log(memory_id) VALUES (new.id); END",
    "CREATE TRIGGER vector_log_memory_ad AFTER DELETE ON memory BEGIN "
    "INSERT INTO vector_log(memory_id) VALUES (old.id); END",
)
VECTOR_LOG_TRIGGER_NAMES = tuple(statement.split()[2] for statement in VECTOR_LOG_TRIGGERS)


def new_store_id() -> str:
    """A random identity for a new store: files kept beside it (the vector index) name it,
    so that one left by another store is never taken for this one's."""
    return secrets.token_hex(16)


def log_bounds(conn: sqlite3.Connection) -> tuple[int, int]:
    """(lowest, highest) sequence number held; (0, 0) for an empty log. Numbers are
    consecutive between them: only trim_log deletes, and always from the low end."""
    low, high = conn.execute("SELECT min(seq), max(seq) FROM vector_log").fetchone()
    return (int(low or 0), int(high or 0))


def changed_since(conn: sqlite3.Connection, position: int) -> list[int]:
    """The distinct memory ids logged after `position`."""
    rows = conn.execute(
        "SELECT DISTINCT memory_id FROM vector_log WHERE seq > ?", (position,)
    ).fetchall()
    return [row[0] for row in rows]


def trim_log(conn: sqlite3.Connection, position: int) -> None:
    """Forget the entries a file at `position` no longer needs. The entry at `position` stays,
    so the numbering (SQLite's next rowid is one above the highest) never starts again below
    a file's position."""
    conn.execute("DELETE FROM vector_log WHERE seq < ?", (position,))
