"""Applied runs as records: what ran, with which parameters, what it changed, if undone."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from memory_console.store import NotFoundError, Store, bulk
from memory_console.timeutil import to_iso

SKIPPED_KEY = "skipped"  # in the undo_report column of a run that is not undone


def skipped_record(ids: dict[str, list[int]]) -> dict[str, Any]:
    """What a skip-stale apply keeps in the run row about the memories it left out. It goes
    in the undo_report column, free until the run is undone, so the schema stays as it is;
    undo replaces it with its own report (the counts stay)."""
    return {SKIPPED_KEY: ids}


@dataclass(frozen=True)
class Run:
    """One row of maintenance_run."""

    id: int
    started_at: float
    now: float
    passes: list[str]
    policy: str
    params: dict[str, Any]
    counts: dict[str, int]
    changed: int
    duration_ms: int
    actor: str
    undone_at: float | None = None
    undo_report: dict[str, Any] | None = None
    skipped: dict[str, list[int]] = field(default_factory=dict)

    @classmethod
    def from_row(cls, row: tuple[Any, ...]) -> Run:
        ident, started, now, passes, policy, params, counts, changed, duration, actor = row[:10]
        undone_at = row[10]
        report = json.loads(row[11]) if row[11] else None
        skipped: dict[str, list[int]] = {}
        if undone_at is None and isinstance(report, dict) and SKIPPED_KEY in report:
            skipped, report = report[SKIPPED_KEY], None
        return cls(
            id=ident,
            started_at=started,
            now=now,
            passes=json.loads(passes),
            policy=policy,
            params=json.loads(params),
            counts=json.loads(counts),
            changed=changed,
            duration_ms=duration,
            actor=actor,
            undone_at=undone_at,
            undo_report=report,
            skipped=skipped,
        )

    @property
    def undone(self) -> bool:
        return self.undone_at is not None

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "started_at": to_iso(self.started_at),
            "now": to_iso(self.now),
            "passes": self.passes,
            "policy": self.policy,
            "counts": self.counts,
            "changed": self.changed,
            "skipped_stale": self.counts.get("skipped_stale", 0),
            "skipped": self.skipped,
            "duration_ms": self.duration_ms,
            "actor": self.actor,
            "undone": self.undone,
            "undone_at": to_iso(self.undone_at),
            "undo_report": self.undo_report,
            "params": self.params,
        }


def list_runs(store: Store, limit: int = 50) -> list[Run]:
    """The latest applied runs, newest first."""
    with store.lock:
        return [Run.from_row(row) for row in bulk.run_rows(store.connection, limit)]


def get_run(store: Store, run_id: int) -> Run:
    with store.lock:
        row = bulk.run_row(store.connection, run_id)
    if row is None:
        raise NotFoundError(f"no maintenance run with id {run_id}")
    return Run.from_row(row)
