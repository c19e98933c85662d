"""A schedule without a daemon: which passes are due, from their intervals and the last runs.

A pass is due when no applied (not undone) run included it, or when its interval (the store's
`interval.<pass>` setting) has passed between that run's evaluation time and `now`. Run from
cron every hour, `maintain --due --apply` runs each pass at its own pace, and a second call at
the same time applies nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from memory_console.maintenance.runs import list_runs
from memory_console.store import Store
from memory_console.store.settings import duration_text
from memory_console.timeutil import to_iso

RUNS_READ = 10_000  # an hourly schedule's runs for more than a year


@dataclass(frozen=True)
class Verdict:
    """Whether one pass is due at `now`, and why."""

    name: str
    due: bool
    why: str
    interval: float | None
    last_run: int | None
    last_at: float | None

    def to_json(self) -> dict[str, Any]:
        return {
            "pass": self.name,
            "due": self.due,
            "why": self.why,
            "interval_seconds": self.interval,
            "last_run": self.last_run,
            "last_at": to_iso(self.last_at),
        }


def due_passes(store: Store, now: float, names: Sequence[str]) -> list[Verdict]:
    """A verdict for each of `names`, in that order."""
    from memory_console.maintenance.registry import registered_passes

    settings = store.settings()
    last: dict[str, tuple[int, float]] = {}
    for run in list_runs(store, RUNS_READ):  # newest first
        if run.undone_at is None:
            for name in run.passes:
                last.setdefault(name, (run.id, run.now))
    known = registered_passes()
    verdicts = []
    for name in names:
        interval = settings.interval(name)
        run_id, at = last.get(name, (None, None))
        if name not in known:
            verdicts.append(
                Verdict(name, False, "not available in this build", interval, None, None)
            )
            continue
        if interval is None:
            verdicts.append(Verdict(name, False, "no interval setting", None, run_id, at))
            continue
        every = duration_text(interval)
        if run_id is None or at is None:
            why = f"due: never applied (every {every})"
            verdicts.append(Verdict(name, True, why, interval, None, None))
            continue
        elapsed = now - at
        due = elapsed >= interval
        ago = duration_text(max(round(elapsed / 60) * 60, 0))  # to the minute
        since = f"last applied in run {run_id} at {to_iso(at)}, {ago} ago"
        why = f"{'due' if due else 'not due'}: {since} (every {every})"
        verdicts.append(Verdict(name, due, why, interval, run_id, at))
    return verdicts
