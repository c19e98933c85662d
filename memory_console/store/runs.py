"""The maintenance_run table: one row per applied plan, written inside apply's transaction."""

from __future__ import annotations

from typing import Any

from memory_console.store.connection import Connection
from memory_console.store.schema import column_names

RUN_FIELDS = column_names("maintenance_run")
RUN_COLUMNS = ", ".join(RUN_FIELDS)


def insert_run(conn: Connection, values: dict[str, Any]) -> int:
    names = list(values)
    cursor = conn.execute(
        f"INSERT INTO maintenance_run ({', '.join(names)}) "
        f"VALUES ({', '.join('?' * len(names))}) RETURNING id",
        [values[name] for name in names],
    )
    return int(cursor.fetchone()[0])


def update_run(conn: Connection, run_id: int, values: dict[str, Any]) -> None:
    assignments = ", ".join(f"{name} = ?" for name in values)
    conn.execute(
        f"UPDATE maintenance_run SET {assignments} WHERE id = ?", [*values.values(), run_id]
    )


def latest_runs(conn: Connection, limit: int) -> list[tuple[Any, ...]]:
    return conn.execute(
        f"SELECT {RUN_COLUMNS} FROM maintenance_run ORDER BY id DESC LIMIT ?", (limit,)
    ).fetchall()


def run_row(conn: Connection, run_id: int) -> tuple[Any, ...] | None:
    return conn.execute(
        f"SELECT {RUN_COLUMNS} FROM maintenance_run WHERE id = ?", (run_id,)
    ).fetchone()


def undone_runs_after(conn: Connection, run_id: int) -> set[int]:
    """The ids of runs later than `run_id` that were undone."""
    rows = conn.execute(
        "SELECT id FROM maintenance_run WHERE id > ? AND undone_at IS NOT NULL", (run_id,)
    ).fetchall()
    return {row[0] for row in rows}
