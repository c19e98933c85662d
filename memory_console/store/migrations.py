"""Forward migrations: MIGRATIONS[v] takes a store from schema v to v + 1 (one transaction)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable


def add_status_owner_topic_index(conn: sqlite3.Connection) -> None:
    """Schema 2: the topics tree counts active memories per owner and topic; without this
    index that count reads every row (360 ms at 100,000 memories, 64 ms with it at 300,000)."""
    conn.execute(
        "CREATE INDEX IF NOT EXISTS ix_memory_status_owner_topic ON memory (status, owner, topic)"
    )


MIGRATIONS: dict[int, Callable[[sqlite3.Connection], None]] = {
    1: add_status_owner_topic_index,
}
