"""A store's full check: SQLite's integrity check, the text index, and rows left dangling
(store/check_rows.py); on PostgreSQL, the schema the SQLModel tables declare, its indexes, and
the same rows (store/postgres/check.py)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from memory_console.store.check_rows import (
    MAX_PROBLEMS,
    CheckResult,
    check_events,
    check_orphan_vectors,
    check_vector_sizes,
)
from memory_console.store.connection import Connection
from memory_console.store.db import APPLICATION_ID
from memory_console.store.ddl import FTS_TRIGGER_NAMES
from memory_console.store.errors import StoreError
from memory_console.store.postgres.check import POSTGRES_CHECKS
from memory_console.store.schema import OUR_TABLES, SCHEMA_VERSION
from memory_console.store.store import Store
from memory_console.store.vector_log import VECTOR_LOG_TRIGGER_NAMES


@dataclass
class CheckReport:
    """Every check of one store, in the order they ran."""

    db: str
    checks: list[CheckResult]

    @property
    def ok(self) -> bool:
        return all(check.ok for check in self.checks)

    def as_json(self) -> dict[str, Any]:
        return {"db": self.db, "ok": self.ok, "checks": [c.as_json() for c in self.checks]}


def check_header(conn: Connection, result: CheckResult) -> None:
    app_id = conn.execute("PRAGMA application_id").fetchone()[0]
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    if app_id != APPLICATION_ID:
        result.add(f"application_id is {app_id:#x}, not {APPLICATION_ID:#x} (memory-console)")
    if version != SCHEMA_VERSION:
        result.add(f"schema version is {version}, not {SCHEMA_VERSION}")


def check_schema(conn: Connection, result: CheckResult) -> None:
    names = {(kind, name) for kind, name in conn.execute("SELECT type, name FROM sqlite_master")}
    for table in sorted(OUR_TABLES | {"memory_fts"}):
        if ("table", table) not in names:
            result.add(f"table {table} is missing")
    for trigger in FTS_TRIGGER_NAMES:
        if ("trigger", trigger) not in names:
            result.add(f"trigger {trigger} is missing: the text index no longer follows edits")
    for trigger in VECTOR_LOG_TRIGGER_NAMES:
        if ("trigger", trigger) not in names:
            result.add(
                f"trigger {trigger} is missing: the vector index file no longer learns of changes"
            )


def check_integrity(conn: Connection, result: CheckResult) -> None:
    # SQLite stops after MAX_PROBLEMS errors and may join several in one row.
    rows = conn.execute(f"PRAGMA integrity_check({MAX_PROBLEMS})").fetchall()
    for (message,) in rows:
        for line in str(message).splitlines():
            if line not in ("ok", "*** in database main ***"):
                result.add(line)


def check_text_index(store: Store, result: CheckResult) -> None:
    if store.read_only:
        # FTS5 takes its check as an INSERT, which SQLite refuses on a read-only connection.
        result.skipped = "needs a writable store (FTS5 runs its check as an INSERT)"
        return
    try:
        # rank 1: the index is also compared with the memory table it indexes.
        store.connection.execute(
            "INSERT INTO memory_fts(memory_fts, rank) VALUES ('integrity-check', 1)"
        )
    except sqlite3.DatabaseError as error:
        if "malformed" not in str(error) and "corrupt" not in str(error):
            raise
        result.add(f"the text index does not match the memories ({error})")


def check_vectors(conn: Connection, result: CheckResult) -> None:
    check_orphan_vectors(conn, result)
    check_vector_sizes(conn, result)


CHECKS: tuple[tuple[str, str, Callable[[Store, CheckResult], None]], ...] = (
    ("header", "application id and schema version", lambda s, r: check_header(s.connection, r)),
    ("schema", "tables and the text index's triggers", lambda s, r: check_schema(s.connection, r)),
    ("integrity", "SQLite's PRAGMA integrity_check", lambda s, r: check_integrity(s.connection, r)),
    ("text_index", "the FTS5 index against the memories", check_text_index),
    ("events", "events whose memory or run is gone", lambda s, r: check_events(s.connection, r)),
    (
        "vectors",
        "vectors whose memory is gone, vector sizes",
        lambda s, r: check_vectors(s.connection, r),
    ),
)


def check_store(store: Store) -> CheckReport:
    """Run every check; a check that the database cannot finish (a damaged page) reports
    that as its problem, and the others still run. Nothing is written, nothing repaired."""
    if store.backend == "postgresql":
        return run_checks(store, POSTGRES_CHECKS, snapshot=True)
    report = run_checks(store, CHECKS, snapshot=False)
    checked = {result.name: result for result in report.checks}
    text_index = checked["text_index"]
    if checked["integrity"].ok and text_index.problems:
        # Only over sound tables does rebuilding the index from the memories repair it.
        text_index.problems[0] += (
            "; the tables are intact, so rebuilding repairs it: "
            "INSERT INTO memory_fts(memory_fts) VALUES ('rebuild')"
        )
    return report


def run_checks(
    store: Store,
    checks: tuple[tuple[str, str, Callable[[Store, CheckResult], None]], ...],
    *,
    snapshot: bool,
) -> CheckReport:
    """Each check in turn (each in its own read-only snapshot when `snapshot`: a statement
    that fails ends the transaction it runs in, and the next check starts afresh)."""
    results = []
    with store.lock:
        for name, description, run in checks:
            result = CheckResult(name, description)
            try:
                if snapshot:
                    with store.snapshot():
                        run(store, result)
                else:
                    run(store, result)
            except (sqlite3.DatabaseError, StoreError) as error:
                result.add(f"could not run: {error}")
            results.append(result)
    return CheckReport(store.location, results)
