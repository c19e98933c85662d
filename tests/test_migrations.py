"""Schema migrations: an older store is backed up, migrated in one transaction, and a newer
one is refused by an older program."""

from __future__ import annotations

import os
import sqlite3
import stat
from pathlib import Path

import pytest

from memory_console.cli import main
from memory_console.store import Store, StoreError
from memory_console.store import migrations as migrations_module
from memory_console.store.db import SCHEMA_VERSION
from tests.helpers import NOW, db_rows, memory

INDEX = "ix_memory_status_owner_topic"


def schema_one_store(path: Path) -> None:
    """A store as schema 1 wrote it: everything but the (status, owner, topic) index."""
    with Store(path) as store:
        store.add_many([{"content": f"fact {i}", "owner": "alice"} for i in range(20)], now=NOW)
    conn = sqlite3.connect(path)
    conn.execute(f"DROP INDEX {INDEX}")
    conn.execute("PRAGMA user_version = 1")
    conn.commit()
    conn.close()


def indexes(path: Path) -> set[str]:
    conn = sqlite3.connect(path)
    try:
        return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='index'")}
    finally:
        conn.close()


def version(path: Path) -> int:
    conn = sqlite3.connect(path)
    try:
        return int(conn.execute("PRAGMA user_version").fetchone()[0])
    finally:
        conn.close()


def test_older_store_is_backed_up_then_migrated(db_path: Path) -> None:
    schema_one_store(db_path)
    with Store(db_path) as store:
        backup = store.migration_backup
        assert backup is not None and backup.name == "memories.db.schema1.bak"
        assert store.count() == 20
    assert version(db_path) == SCHEMA_VERSION and INDEX in indexes(db_path)
    assert version(backup) == 1 and INDEX not in indexes(backup)
    assert stat.S_IMODE(os.stat(backup).st_mode) == 0o600
    with Store(db_path) as again:
        assert again.migration_backup is None


def test_cli_says_where_the_backup_is(db_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    schema_one_store(db_path)
    assert main(["stats", "--db", str(db_path), "--json"]) == 0
    err = capsys.readouterr().err
    assert f"migrated {db_path} to schema {SCHEMA_VERSION}" in err and "schema1.bak" in err


def test_a_failed_migration_leaves_the_old_schema(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    schema_one_store(db_path)

    def broken(conn: sqlite3.Connection) -> None:
        migrations_module.add_status_owner_topic_index(conn)
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setitem(migrations_module.MIGRATIONS, 1, broken)
    with pytest.raises(StoreError, match="damaged or unreadable|disk I/O"):
        Store(db_path)
    assert version(db_path) == 1 and INDEX not in indexes(db_path)


def test_read_only_does_not_migrate(db_path: Path) -> None:
    schema_one_store(db_path)
    with pytest.raises(StoreError, match="needs a migration"):
        Store(db_path, read_only=True)
    assert version(db_path) == 1


def test_newer_store_is_refused_by_this_program(
    db_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    Store(db_path).close()
    conn = sqlite3.connect(db_path)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    before = db_path.read_bytes()
    assert main(["list", "--db", str(db_path)]) == 1
    err = capsys.readouterr().err
    assert "written by a newer memory-console" in err and "upgrade memory-console" in err
    assert db_path.read_bytes() == before


def table_columns(path: Path) -> dict[str, list[tuple[str, bool, bool]]]:
    """table -> (name, not null, primary key) of each column, as the store file holds them."""
    from memory_console.store import schema

    conn = sqlite3.connect(path)
    try:
        return {
            table: [
                (row[1], bool(row[3]), bool(row[5]))
                for row in conn.execute(f"PRAGMA table_info('{table}')")
            ]
            for table in schema.declared_tables()
        }
    finally:
        conn.close()


def test_new_and_migrated_stores_hold_the_declared_columns(tmp_path: Path) -> None:
    from memory_console.store import schema

    declared = {
        table: [(c.name, not c.nullable, c.primary_key) for c in columns]
        for table, columns in schema.declared_tables().items()
    }
    fresh, migrated = tmp_path / "fresh.db", tmp_path / "migrated.db"
    Store(fresh).close()
    schema_one_store(migrated)
    Store(migrated).close()
    assert table_columns(fresh) == declared
    assert table_columns(migrated) == declared


def test_the_generated_tables_are_those_stores_already_hold() -> None:
    """Stores made by earlier releases hold this DDL: a change to the tables needs a
    migration (store/migrations.py) and a new SCHEMA_VERSION, then a new digest here."""
    import hashlib

    from memory_console.store.ddl import schema_statements

    tables = [s for s in schema_statements(with_indexes=False) if s.startswith("CREATE TABLE")]
    digest = hashlib.sha256("\n".join(tables).encode()).hexdigest()
    assert SCHEMA_VERSION == 11
    assert digest == "44c303bcd3e681b8a9424d60763c16ba66b09db86622dcf145e5e8f20c1be9fb"


def test_a_schema_seven_store_gets_partial_indexes(db_path: Path) -> None:
    """Schema 8: the indexes of columns NULL in almost every memory hold only the memories
    with a value, and lookups by value still go through them."""
    from memory_console.store.migrations import SCHEMA_EIGHT_PARTIAL as PARTIAL_INDEXES

    with Store(db_path) as store:
        first, second = store.add_many([{"content": "old"}, {"content": "new"}], now=NOW)
        store.supersede(first, second, now=NOW)
    conn = sqlite3.connect(db_path)
    for name in PARTIAL_INDEXES:
        column = name.removeprefix("ix_memory_")
        conn.execute(f"DROP INDEX {name}")
        conn.execute(f"CREATE INDEX {name} ON memory ({column})")  # as schema 7 made them
    conn.execute("PRAGMA user_version = 7")
    conn.commit()
    conn.close()
    with Store(db_path) as store:
        assert store.require(first).superseded_by == second
    conn = sqlite3.connect(db_path)
    try:
        made = dict(conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'index'"))
        for name in PARTIAL_INDEXES:
            assert made[name].endswith("IS NOT NULL"), made[name]
        plan = conn.execute(
            "EXPLAIN QUERY PLAN SELECT id FROM memory WHERE superseded_by IN (?, ?)", (1, 2)
        ).fetchall()
        assert "ix_memory_superseded_by" in plan[0][3]
    finally:
        conn.close()


def without_namespace(conn: sqlite3.Connection) -> None:
    """Take schema 10's namespace column and schema 11's due index away, with their indexes,
    as stores before them were."""
    without_due_index(conn)
    conn.execute("DROP INDEX ix_memory_namespace")
    conn.execute("ALTER TABLE memory DROP COLUMN namespace")


def without_due_index(conn: sqlite3.Connection) -> None:
    """Take schema 11's due_at column and its index away, as stores before it were."""
    conn.execute("DROP INDEX ix_memory_due")
    conn.execute("ALTER TABLE memory DROP COLUMN due_at")


def as_schema_eight(db_path: Path) -> None:
    """Make a store's key tables what schema 8 made them: INTEGER PRIMARY KEY without
    AUTOINCREMENT (SQLite then hands out max(id) + 1, reusing a deleted memory's id)."""
    conn = sqlite3.connect(db_path)
    try:
        conn.execute("BEGIN")
        without_namespace(conn)
        for table in ("memory", "memory_event", "maintenance_run"):
            (sql,) = conn.execute(
                "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)
            ).fetchone()
            indexes = [
                row[0]
                for row in conn.execute(
                    "SELECT sql FROM sqlite_master WHERE tbl_name = ? AND type IN "
                    "('index', 'trigger') AND sql IS NOT NULL",
                    (table,),
                )
            ]
            old = sql.replace(" AUTOINCREMENT", "").replace(
                f"CREATE TABLE {table} ", "CREATE TABLE old ", 1
            )
            conn.execute(old)
            conn.execute(f"INSERT INTO old SELECT * FROM {table}")
            conn.execute(f"DROP TABLE {table}")
            conn.execute(f"ALTER TABLE old RENAME TO {table}")
            for statement in indexes:
                conn.execute(statement)
        conn.execute("DELETE FROM sqlite_sequence")
        conn.execute("PRAGMA user_version = 8")
        conn.execute("COMMIT")
    finally:
        conn.close()


def test_a_schema_eight_store_hands_out_each_id_once_after_migrating(db_path: Path) -> None:
    """Schema 9: memories 3 and 4 were deleted (their history closed by `purged` events, as an
    undo leaves it), so a schema 8 store would give the next memory id 4 again, which would
    show the dead one's history. After the migration the next memory takes 5, the rows, the
    text index and check are as before."""
    with Store(db_path) as store:
        ids = store.add_many([{"content": f"memory {n}"} for n in range(4)], now=NOW)
        with store.transaction("as an undo of a consolidation") as conn:
            for ident in ids[2:]:
                conn.execute(
                    "INSERT INTO memory_event (memory_id, at, actor, kind) "
                    "VALUES (?, ?, 'undo', 'purged')",
                    (ident, NOW),
                )
                conn.execute("DELETE FROM memory WHERE id = ?", (ident,))
    as_schema_eight(db_path)
    conn = sqlite3.connect(db_path)
    assert conn.execute("SELECT max(id) FROM memory").fetchone()[0] == ids[1]
    conn.close()
    with Store(db_path) as store:
        (new,) = store.add_many([{"content": "a new memory"}], now=NOW)
        assert new == ids[3] + 1
    conn = sqlite3.connect(db_path)
    try:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        tables = dict(conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table'"))
        for table in ("memory", "memory_event", "maintenance_run"):
            assert "AUTOINCREMENT" in tables[table]
        triggers = {
            row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")
        }
        assert {"memory_fts_ai", "memory_fts_ad", "memory_fts_au"} <= triggers
        found = conn.execute("SELECT rowid FROM memory_fts WHERE memory_fts MATCH 'new'").fetchall()
        assert found == [(new,)]
    finally:
        conn.close()
    assert main(["--db", str(db_path), "check"]) == 0


def test_a_schema_nine_store_gets_namespaces(db_path: Path) -> None:
    """Schema 10: a memory may live in a namespace (a LangGraph item's). A schema 9 store
    gains the column, NULL in every memory it holds, and its partial index; the tree's
    counts and the namespace filter then work on it, and the index serves them."""
    from memory_console.store import MemoryFilter

    with Store(db_path) as store:
        store.add_many([{"content": f"fact {i}", "owner": "alice"} for i in range(3)], now=NOW)
    conn = sqlite3.connect(db_path)
    without_namespace(conn)
    conn.execute("PRAGMA user_version = 9")
    conn.commit()
    conn.close()
    with Store(db_path) as store:
        assert store.migration_backup is not None
        assert {r.namespace for r in store.page().rows} == {None}
        (new,) = store.add_many(
            [{"content": "a trip to Lisbon", "owner": "alice", "namespace": "memories.trips"}],
            now=NOW,
        )
        places = {
            (r.owner, r.namespace, r.topic): r.count
            for r in store.place_counts(MemoryFilter(status="active"))
        }
        assert places == {("alice", None, "general"): 3, ("alice", "memories.trips", "general"): 1}
        assert [r.id for r in store.page(MemoryFilter(namespace="memories.trips")).rows] == [new]
        assert len(store.page(MemoryFilter(namespace="")).rows) == 3
    assert version(db_path) == SCHEMA_VERSION and "ix_memory_namespace" in indexes(db_path)
    conn = sqlite3.connect(db_path)
    try:
        plan = conn.execute(
            "EXPLAIN QUERY PLAN SELECT owner, namespace, topic, count(*) FROM memory "
            "WHERE +status = 'active' AND namespace IS NOT NULL GROUP BY namespace, owner, topic"
        ).fetchall()
        assert "COVERING INDEX ix_memory_namespace" in plan[0][3]
    finally:
        conn.close()


def test_a_schema_ten_store_gets_the_due_index(db_path: Path) -> None:
    """Schema 11: each memory's next change by a time-driven pass (docs/ARCHITECTURE.md, "The
    due index"). A schema 10 store gains the column, unknown (so due) in every memory, and
    its index: the first plan reads every memory, its apply computes the times, and the next
    plan at the same time reads none, through the index."""
    from memory_console.maintenance import apply, plan

    with Store(db_path) as store:
        store.add_many([memory(f"fact {i}", days_old=40 + i) for i in range(6)], now=NOW)
    conn = sqlite3.connect(db_path)
    without_due_index(conn)
    conn.execute("PRAGMA user_version = 10")
    conn.commit()
    conn.close()
    with Store(db_path) as store:
        assert store.migration_backup is not None
        first = plan(store, ("decay", "cleanup"), now=NOW)
        assert first.read == "all" and first.rows_read == 6 and first.changed == 6
        apply(store, first)
        again = plan(store, ("decay", "cleanup"), now=NOW)
        assert again.read == "due" and again.rows_read == 0 and again.is_empty
    assert version(db_path) == SCHEMA_VERSION and "ix_memory_due" in indexes(db_path)
    assert db_rows(db_path, "SELECT count(*) FROM memory WHERE due_at IS NULL") == [(0,)]
    assert main(["--db", str(db_path), "check"]) == 0
