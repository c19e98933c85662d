"""Forward migrations: MIGRATIONS[v] takes a store from schema v to v + 1 (one transaction).

PostgreSQL's are store/postgres/migrations.py; make_partial_indexes serves both."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Any

from memory_console.store import ddl, ids
from memory_console.store.schema import column_names
from memory_console.store.vector_log import VECTOR_LOG_TRIGGERS, new_store_id


def add_status_owner_topic_index(conn: sqlite3.Connection) -> None:
    """Schema 2: the topics tree counts active memories per owner and topic; without this
    index that count reads every row (360 ms at 100,000 memories, 64 ms with it at 300,000)."""
    conn.execute(
        "CREATE INDEX IF NOT EXISTS ix_memory_status_owner_topic ON memory (status, owner, topic)"
    )


def add_store_settings(conn: sqlite3.Connection) -> None:
    """Schema 3: the store keeps its settings (policy, intervals, TTLs, thresholds) and the
    history of their changes, so every process reads the same ones."""
    conn.execute(
        "CREATE TABLE IF NOT EXISTS store_setting ("
        '"key" VARCHAR NOT NULL, value VARCHAR NOT NULL, changed_at FLOAT NOT NULL, '
        'changed_by VARCHAR NOT NULL, PRIMARY KEY ("key"))'
    )
    conn.execute(
        "CREATE TABLE IF NOT EXISTS store_setting_change ("
        'id INTEGER NOT NULL, "key" VARCHAR NOT NULL, "before" VARCHAR, "after" VARCHAR, '
        "at FLOAT NOT NULL, actor VARCHAR NOT NULL, PRIMARY KEY (id))"
    )
    conn.execute(
        "CREATE INDEX IF NOT EXISTS ix_store_setting_change_at ON store_setting_change (at)"
    )
    conn.execute(
        'CREATE INDEX IF NOT EXISTS ix_store_setting_change_key ON store_setting_change ("key")'
    )


def add_erasure_audit(conn: sqlite3.Connection) -> None:
    """Schema 4: an erasure (purge) leaves one audit row saying that it happened, instead of
    a `purged` event per memory (events of erased memories are deleted with them)."""
    conn.execute(
        "CREATE TABLE IF NOT EXISTS erasure ("
        "id INTEGER NOT NULL, at FLOAT NOT NULL, actor VARCHAR NOT NULL, "
        "memories INTEGER NOT NULL, purge_file VARCHAR NOT NULL, selection VARCHAR NOT NULL, "
        "PRIMARY KEY (id))"
    )
    conn.execute("CREATE INDEX IF NOT EXISTS ix_erasure_at ON erasure (at)")


def add_superseded_by(conn: sqlite3.Connection) -> None:
    """Schema 5: a memory whose fact a newer memory restates with another value links to it
    (archived, superseded_by the newer one's id), so recall and the story can tell."""
    names = {row[1] for row in conn.execute("PRAGMA table_info('memory')")}
    if "superseded_by" not in names:  # like IF NOT EXISTS: a migration may meet it done
        conn.execute("ALTER TABLE memory ADD COLUMN superseded_by INTEGER")
    conn.execute("CREATE INDEX IF NOT EXISTS ix_memory_superseded_by ON memory (superseded_by)")


def add_evaluated_at(conn: sqlite3.Connection) -> None:
    """Schema 6: an event keeps the clock time it was written (`at`) apart from the time its
    run was evaluated at (`evaluated_at`). Runs before it stamped their events with the
    evaluated time; those move to evaluated_at and `at` becomes the run's start (the clock)."""
    names = {row[1] for row in conn.execute("PRAGMA table_info('memory_event')")}
    if "evaluated_at" in names:  # like IF NOT EXISTS: a migration may meet it done
        return
    conn.execute("ALTER TABLE memory_event ADD COLUMN evaluated_at FLOAT")
    # Undo events were always stamped with the clock; only a run's own changes move.
    conn.execute(
        "UPDATE memory_event SET evaluated_at = at, at = ("
        "SELECT r.started_at FROM maintenance_run AS r WHERE r.id = memory_event.run_id) "
        "WHERE run_id IS NOT NULL AND actor != 'undo' "
        "AND EXISTS (SELECT 1 FROM maintenance_run AS r WHERE r.id = memory_event.run_id)"
    )


def add_vector_log(conn: sqlite3.Connection) -> None:
    """Schema 7: the vector index file beside the store stays in step through vector_log,
    filled by triggers, and names the store by a random identity kept in console_meta."""
    conn.execute(
        "CREATE TABLE IF NOT EXISTS vector_log ("
        "seq INTEGER NOT NULL, memory_id INTEGER NOT NULL, PRIMARY KEY (seq))"
    )
    for statement in VECTOR_LOG_TRIGGERS:
        conn.execute(statement.replace("CREATE TRIGGER", "CREATE TRIGGER IF NOT EXISTS", 1))
    conn.execute(
        "INSERT OR IGNORE INTO console_meta(key, value) VALUES ('store_id', ?)",
        (new_store_id(),),
    )


def make_partial_indexes(conn: Any) -> None:
    """Schema 8 (both backends): the indexes of consolidated_into, external_id and
    superseded_by, columns NULL in almost every memory, hold only the memories that have a
    value (store/tables.py, EXTRA_INDEXES), so most writes no longer touch them."""
    from memory_console.store.tables import extra_index_statements

    for name in SCHEMA_EIGHT_PARTIAL:
        conn.execute(f"DROP INDEX IF EXISTS {name}")
    for statement in extra_index_statements(SCHEMA_EIGHT_PARTIAL):
        conn.execute(statement)


# The indexes schema 8 made partial (later schemas add their own, on columns it had not).
SCHEMA_EIGHT_PARTIAL = (
    "ix_memory_consolidated_into",
    "ix_memory_external_id",
    "ix_memory_superseded_by",
)


def make_ids_live_once(conn: sqlite3.Connection) -> None:
    """Schema 9: memory, memory_event and maintenance_run become AUTOINCREMENT tables, so an id
    is handed out once for the life of the store (an id freed by an undo was given to the next
    memory, which then showed the dead one's history). SQLite cannot add AUTOINCREMENT to a
    table: each is made again under its declared DDL, its rows copied with their ids, its
    indexes and triggers made again; then the sequences start above every id any event, link
    or run names (store/ids.py)."""
    created = {
        statement.split("(", 1)[0].split()[-1]: statement
        for statement in ddl.schema_statements(with_indexes=False)
        if statement.startswith("CREATE TABLE ")
    }
    indexes = ddl.index_statements()
    for table in ids.FLOORS:
        done = conn.execute(
            "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)
        ).fetchone()
        if done is not None and "AUTOINCREMENT" in done[0]:
            continue  # like IF NOT EXISTS: a migration may meet it done
        # The columns the table has now: a later schema's columns are made by the new DDL
        # and keep their defaults (their own migration then finds them made).
        held = {row[1] for row in conn.execute(f"PRAGMA table_info('{table}')")}
        names = ", ".join(f'"{name}"' for name in column_names(table) if name in held)
        conn.execute(
            created[table].replace(f"CREATE TABLE {table} ", f"CREATE TABLE {table}_9 ", 1)
        )
        conn.execute(f"INSERT INTO {table}_9 ({names}) SELECT {names} FROM {table}")
        conn.execute(f"DROP TABLE {table}")
        conn.execute(f"ALTER TABLE {table}_9 RENAME TO {table}")
        for statement in indexes:
            if f" ON {table} (" in statement:
                conn.execute(statement)
    names_of_triggers = {
        row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")
    }
    for statement in (*ddl.FTS_TRIGGERS, *VECTOR_LOG_TRIGGERS):
        if statement.split()[2] not in names_of_triggers:
            conn.execute(statement)
    ids.raise_sqlite_sequences(conn)


def add_namespace(conn: Any, *, made: bool = False) -> None:
    """Schema 10 (both backends): a memory may live in a namespace of its agent's own (a
    LangGraph item's, without the owner's label), which the topics tree and the filters show;
    a partial index holds only the memories in one. made: schema 9's rebuild of an older
    SQLite store already made the column."""
    from memory_console.store.tables import extra_index_statements

    if not made:
        conn.execute("ALTER TABLE memory ADD COLUMN namespace VARCHAR")
    conn.execute("DROP INDEX IF EXISTS ix_memory_namespace")
    for statement in extra_index_statements(("ix_memory_namespace",)):
        conn.execute(statement)


def add_namespace_sqlite(conn: sqlite3.Connection) -> None:
    """Schema 10 on SQLite: add_namespace, knowing whether schema 9 made the column."""
    held = {row[1] for row in conn.execute("PRAGMA table_info('memory')")}
    add_namespace(conn, made="namespace" in held)


def add_due_index(conn: Any, *, made: bool = False) -> None:
    """Schema 11 (both backends): memory.due_at, the earliest time a time-driven pass could
    change each memory, and its index. Every memory starts unknown (NULL), so due: the next
    plan reads them all, and the next apply computes their times. made: schema 9's rebuild
    of an older SQLite store already made the column."""
    from memory_console.store.tables import extra_index_statements

    if not made:
        conn.execute("ALTER TABLE memory ADD COLUMN due_at FLOAT")
    conn.execute("DROP INDEX IF EXISTS ix_memory_due")
    for statement in extra_index_statements(("ix_memory_due",)):
        conn.execute(statement)


def add_due_index_sqlite(conn: sqlite3.Connection) -> None:
    """Schema 11 on SQLite: add_due_index, knowing whether schema 9 made the column."""
    held = {row[1] for row in conn.execute("PRAGMA table_info('memory')")}
    add_due_index(conn, made="due_at" in held)


MIGRATIONS: dict[int, Callable[[sqlite3.Connection], None]] = {
    1: add_status_owner_topic_index,
    2: add_store_settings,
    3: add_erasure_audit,
    4: add_superseded_by,
    5: add_evaluated_at,
    6: add_vector_log,
    7: make_partial_indexes,
    8: make_ids_live_once,
    9: add_namespace_sqlite,
    10: add_due_index_sqlite,
}
