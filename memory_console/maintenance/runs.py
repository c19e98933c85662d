"""Applied runs as records: what ran, with which parameters, what it changed, if undone."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from memory_console.store import NotFoundError, Store
from memory_console.store.runs import RUN_FIELDS, latest_runs, run_row
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
        values = dict(zip(RUN_FIELDS, row, strict=True))
        undone_at = values["undone_at"]
        report = json.loads(values["undo_report"]) if values["undo_report"] else None
        skipped: dict[str, list[int]] = {}
        if undone_at is None and isinstance(report, dict) and SKIPPED_KEY in report:
            skipped, report = report[SKIPPED_KEY], None
        return cls(
            id=values["id"],
            started_at=values["started_at"],
            now=values["now"],
            passes=json.loads(values["passes"]),
            policy=values["policy"],
            params=json.loads(values["params"]),
            counts=json.loads(values["counts"]),
            changed=values["changed"],
            duration_ms=values["duration_ms"],
            actor=values["actor"],
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
    return [Run.from_row(row) for row in store.read(latest_runs, limit)]


def get_run(store: Store, run_id: int) -> Run:
    row = store.read(run_row, run_id)
    if row is None:
        raise NotFoundError(f"no maintenance run with id {run_id}")
    return Run.from_row(row)
