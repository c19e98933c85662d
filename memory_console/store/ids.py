"""Ids live once: the highest memory, event and run id a store has ever named, and the
floors its id sequences are raised to (SQLite's AUTOINCREMENT record here; PostgreSQL's
sequences by store/postgres/schema.py).

A memory deleted by an undo keeps its history, closed by a `purged` event (a tombstone), so
an id is named by events after its memory is gone. A new memory must never take such an id:
it would inherit the dead one's history. SQLite's INTEGER PRIMARY KEY without AUTOINCREMENT
hands out max(id) + 1 again, so the key tables are AUTOINCREMENT (schema 9) and every load or
copy raises their sequences to the floor computed here.
"""

from __future__ import annotations

from typing import Any

# Every id a memory was ever known by: its own, the events' and the links of other memories.
MEMORY_FLOOR = (
    "SELECT max(named) FROM ("
    "SELECT max(id) AS named FROM memory "
    "UNION ALL SELECT max(memory_id) FROM memory_event "
    "UNION ALL SELECT max(consolidated_into) FROM memory "
    "UNION ALL SELECT max(superseded_by) FROM memory) AS ids"
)
EVENT_FLOOR = "SELECT max(id) FROM memory_event"
RUN_FLOOR = (
    "SELECT max(named) FROM (SELECT max(id) AS named FROM maintenance_run "
    "UNION ALL SELECT max(run_id) FROM memory_event) AS ids"
)
# The key tables whose ids are never handed out twice, with the query of their floor.
FLOORS = {"memory": MEMORY_FLOOR, "memory_event": EVENT_FLOOR, "maintenance_run": RUN_FLOOR}


def floors(conn: Any) -> dict[str, int]:
    """The highest id each key table has named (0 for none)."""
    return {table: int(conn.execute(sql).fetchone()[0] or 0) for table, sql in FLOORS.items()}


def raise_sqlite_sequences(conn: Any, given: dict[str, int] | None = None) -> None:
    """Raise each AUTOINCREMENT table's sequence to its floor (or the floor given, if higher);
    never lowers one."""
    found = floors(conn)
    for table, floor in found.items():
        floor = max(floor, (given or {}).get(table, 0))
        row = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = ?", (table,)).fetchone()
        if row is None:
            conn.execute("INSERT INTO sqlite_sequence (name, seq) VALUES (?, ?)", (table, floor))
        elif int(row[0]) < floor:
            conn.execute("UPDATE sqlite_sequence SET seq = ? WHERE name = ?", (floor, table))


def sqlite_sequences(conn: Any) -> dict[str, int]:
    """The sequences of an SQLite store (what its next ids are above)."""
    rows = conn.execute("SELECT name, seq FROM sqlite_sequence").fetchall()
    return {str(name): int(seq) for name, seq in rows if name in FLOORS}
