"""The vector log: which memories changed in ways that alter the vector index, in order.

Triggers fill vector_log in the transaction of every such change, so the index file kept beside
the store (store/vector_file.py) learns what it misses since it was written; nothing that writes
can forget to tell it.
"""

from __future__ import annotations

import secrets

from memory_console.store.connection import Connection

# Only what can change the indexed set, or a memory's embedded text, is logged (not decay's
# confidence updates).
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
    # A new text needs a new vector: SemanticIndex.sync checks only these memories' hashes.
    "CREATE TRIGGER vector_log_memory_text_au AFTER UPDATE OF title, content, keywords ON memory "
    "WHEN old.title IS NOT new.title OR old.content IS NOT new.content "
    "OR old.keywords IS NOT new.keywords BEGIN "
    "INSERT INTO vector_log(memory_id) VALUES (new.id); END",
)
CHECKED_KEY = "vectors_checked"  # console_meta: "MODEL POSITION", see checked_position()
VECTOR_LOG_TRIGGER_NAMES = tuple(statement.split()[2] for statement in VECTOR_LOG_TRIGGERS)


def new_store_id() -> str:
    """A random identity for a new store: files kept beside it (the vector index) name it,
    so that one left by another store is never taken for this one's."""
    return secrets.token_hex(16)


def log_bounds(conn: Connection) -> tuple[int, int]:
    """(lowest, highest) sequence number held; (0, 0) for an empty log. Numbers are
    consecutive between them: only trim_log deletes, and always from the low end."""
    low, high = conn.execute("SELECT min(seq), max(seq) FROM vector_log").fetchone()
    return (int(low or 0), int(high or 0))


def changed_since(conn: Connection, position: int) -> list[int]:
    """The distinct memory ids logged after `position`."""
    rows = conn.execute(
        "SELECT DISTINCT memory_id FROM vector_log WHERE seq > ?", (position,)
    ).fetchall()
    return [row[0] for row in rows]


def checked_position(conn: Connection, model_id: str) -> int | None:
    """The log position at which every active memory's stored vector of this model was last
    found current (its hash that of its text), while the log still holds every entry after
    it; None when no such check is known."""
    row = conn.execute("SELECT value FROM console_meta WHERE key = ?", (CHECKED_KEY,)).fetchone()
    if row is None:
        return None
    model, _, position = str(row[0]).rpartition(" ")
    if model != model_id or not position.isdigit():
        return None
    low, high = log_bounds(conn)
    checked = int(position)
    if checked > high or (low and checked < low - 1):
        return None
    return checked


def set_checked_position(conn: Connection, model_id: str, position: int) -> None:
    conn.execute(
        "INSERT INTO console_meta(key, value) VALUES (?, ?) "
        "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        (CHECKED_KEY, f"{model_id} {position}"),
    )


def trim_log(conn: Connection, position: int) -> None:
    """Forget the entries a file at `position` no longer needs (nor the last check of the
    stored vectors, when one is known). The entry at the position kept stays, so the numbering
    (SQLite's next rowid is one above the highest) never starts again below a file's position."""
    row = conn.execute("SELECT value FROM console_meta WHERE key = ?", (CHECKED_KEY,)).fetchone()
    checked = str(row[0]).rpartition(" ")[2] if row is not None else ""
    if checked.isdigit():
        position = min(position, int(checked))
    conn.execute("DELETE FROM vector_log WHERE seq < ?", (position,))
