"""A store's full check: SQLite's integrity check, the text index, and rows left dangling;
on PostgreSQL, the schema the SQLModel tables declare, its indexes, and the same rows
(store/postgres_check.py)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from memory_console.store.connection import Connection
from memory_console.store.db import (
    APPLICATION_ID,
    FTS_TRIGGER_NAMES,
    OUR_TABLES,
    SCHEMA_VERSION,
)
from memory_console.store.errors import StoreError
from memory_console.store.store import Store
from memory_console.store.vector_log import VECTOR_LOG_TRIGGER_NAMES

MAX_PROBLEMS = 100  # problems listed per check; `count` still tells how many there are


@dataclass
class CheckResult:
    """One check: its problems (at most MAX_PROBLEMS listed), how many there are in all, and
    why it did not run when it was skipped."""

    name: str
    description: str
    problems: list[str] = field(default_factory=list)
    count: int = 0
    skipped: str | None = None

    @property
    def ok(self) -> bool:
        return self.count == 0

    def add(self, problem: str) -> None:
        self.count += 1
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append(problem)

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "ok": self.ok,
            "problems": self.problems,
            "count": self.count,
            "skipped": self.skipped,
        }


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


def check_events(conn: Connection, result: CheckResult) -> None:
    # A purge before schema 4 (and undo of a consolidation) deleted the memory but kept its
    # history, closed by a `purged` event: only events of memories that vanished without one
    # are dangling. An erasure now deletes the history with the memory.
    rows = conn.execute(
        "SELECT e.memory_id, count(*) FROM memory_event AS e "
        "WHERE NOT EXISTS (SELECT 1 FROM memory AS m WHERE m.id = e.memory_id) "
        "AND NOT EXISTS (SELECT 1 FROM memory_event AS p "
        "WHERE p.memory_id = e.memory_id AND p.kind = 'purged') "
        "GROUP BY e.memory_id ORDER BY e.memory_id"
    )
    for memory_id, count in rows:
        result.add(f"{count} events of memory {memory_id}, which is gone without a purge")
    # An id lives once: a `purged` event ends a memory's life, so an event after it, or a
    # memory of that id still there, is another memory that was given the dead one's id.
    rows = conn.execute(
        "SELECT p.memory_id, count(*) FROM memory_event AS p JOIN memory_event AS e "
        "ON e.memory_id = p.memory_id AND e.id > p.id WHERE p.kind = 'purged' "
        "GROUP BY p.memory_id ORDER BY p.memory_id"
    )
    for memory_id, count in rows:
        result.add(
            f"{count} events of memory {memory_id} come after its purge (its id was used again)"
        )
    rows = conn.execute(
        "SELECT DISTINCT p.memory_id FROM memory_event AS p JOIN memory AS m "
        "ON m.id = p.memory_id WHERE p.kind = 'purged' ORDER BY p.memory_id"
    )
    for (memory_id,) in rows:
        result.add(f"memory {memory_id} exists after its purge (its id was used again)")
    rows = conn.execute(
        "SELECT e.run_id, count(*) FROM memory_event AS e WHERE e.run_id IS NOT NULL "
        "AND NOT EXISTS (SELECT 1 FROM maintenance_run AS r WHERE r.id = e.run_id) "
        "GROUP BY e.run_id ORDER BY e.run_id"
    )
    for run_id, count in rows:
        result.add(f"{count} events name maintenance run {run_id}, which does not exist")


def check_vectors(conn: Connection, result: CheckResult) -> None:
    check_orphan_vectors(conn, result)
    check_vector_sizes(conn, result)


def check_orphan_vectors(conn: Connection, result: CheckResult) -> None:
    rows = conn.execute(
        "SELECT v.memory_id FROM embedding AS v "
        "WHERE NOT EXISTS (SELECT 1 FROM memory AS m WHERE m.id = v.memory_id) "
        "ORDER BY v.memory_id"
    )
    for (memory_id,) in rows:
        result.add(f"a vector for memory {memory_id}, which is gone")


def check_vector_sizes(conn: Connection, result: CheckResult) -> None:
    sizes: dict[str, list[tuple[int, int]]] = {}
    for model, size, count in conn.execute(
        "SELECT model_id, length(vector), count(*) FROM embedding GROUP BY 1, 2"
    ):
        sizes.setdefault(model, []).append((count, size))
    for model, seen in sorted(sizes.items()):
        usual = max(seen)[1]
        for count, size in sorted(seen):
            if size != usual:
                result.add(f"{count} vectors of model {model} have {size} bytes, not {usual}")


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
        from memory_console.store.postgres_check import POSTGRES_CHECKS

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
