"""What `check` finds alike on both backends: one check's result, and the rows a store holds
about memories or runs that are gone (events, vectors) or of another size (vectors).
store/check.py runs SQLite's checks, store/postgres/check.py PostgreSQL's."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from memory_console.store.connection import Connection

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
