"""Due index benchmark: what a scheduled decay run costs after the last applied one, when it
reads only the memories due (the due index) and when it reads every one, against a raw
sqlite3 pass that computes the same decay changes, all on one demo store in one run.

    python -m benchmarks.bench_due [--count 1000000] [--due-share 0.01] [--workdir DIR]

Steps, on a copy of the demo store (built in --workdir and kept there):
1. the decay plan at T over every memory against the raw pass (target: <= 1.6x);
2. the time-driven passes (expire-banks, expire, decay, cleanup) applied at T, as a
   scheduled `maintain --due` applies them: the apply computes every memory's due time;
3. a decay dry run at T again: nothing is due (target <= 0.05 s at 1,000,000 memories), and
   at the time when --due-share of the memories are due (target <= 0.1 s), beside the same
   plan over every memory (--all), which it must equal change for change;
4. the next run applied, a dry run at that time again, and one at the next cron tick.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.bench_import_memory import cpu_model
from benchmarks.bench_maintenance import NOW, RAW_CHANGES, demo_store, working_copy
from memory_console.maintenance import apply, plan
from memory_console.maintenance.changes import Plan
from memory_console.maintenance.due import TIMED_SCOPE
from memory_console.store import Store, bulk

DECAY = ("decay", "cleanup")
TIMED = ("expire-banks", "expire", "decay", "cleanup")
HOUR = 3600.0
REPEATS = 7


def p50(action: Callable[[], Any], repeats: int = REPEATS) -> tuple[Any, float]:
    """The last result and the median wall seconds of `repeats` calls."""
    times = []
    result = None
    for _ in range(repeats):
        started = time.perf_counter()
        result = action()
        times.append(time.perf_counter() - started)
    return result, statistics.median(times)


def changes(made: Plan) -> list[tuple[Any, ...]]:
    return sorted((c.id, c.field, repr(c.after), c.reason) for c in made.changes())


def line(label: str, seconds: float, extra: str = "") -> None:
    print(f"{label:<52} {seconds * 1000:9.1f} ms  {extra}", flush=True)


def raw_pass(path: Path, now: float) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(RAW_CHANGES, {"now": now}).fetchall()
    finally:
        conn.close()


def time_for_share(store: Store, start: float, wanted: int) -> float:
    """The earliest time after `start` by which about `wanted` memories are due (the index)."""
    low, high = start, start + 400 * 86400.0
    for _ in range(40):
        middle = (low + high) / 2
        if store.read(bulk.due_count, TIMED_SCOPE, middle) < wanted:
            low = middle
        else:
            high = middle
    return high


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=1_000_000)
    parser.add_argument("--due-share", type=float, default=0.01)
    parser.add_argument("--workdir", help="where the demo store is built and kept")
    args = parser.parse_args()
    folder = Path(args.workdir or tempfile.mkdtemp(prefix="bench-due-"))
    folder.mkdir(parents=True, exist_ok=True)
    print(f"CPU: {cpu_model()}, {os.cpu_count()} cores; SQLite {sqlite3.sqlite_version}")
    print(f"load average at start: {os.getloadavg()[0]:.2f}")
    path = working_copy(demo_store(folder, args.count), "due-work.db")
    store = Store(path, actor="bench")
    memories = store.count()

    # 1. The full plan against the raw pass, on the store as built (no due times yet).
    full, full_seconds = p50(lambda: plan(store, DECAY, now=NOW, every=True), 3)
    rows, raw_seconds = p50(lambda: raw_pass(path, NOW), 3)
    decayed = sorted(c.id for c in full.changes() if c.kind == "decayed")
    line("decay plan at T over every memory (--all)", full_seconds, f"{full.changed:,} changes")
    line(
        "raw sqlite3 pass computing the same decay changes",
        raw_seconds,
        f"{len(rows):,} changes; same ids: {decayed == sorted(r[0] for r in rows)}",
    )
    print(f"  full plan / raw: {full_seconds / raw_seconds:.2f} (target <= 1.6)")

    # 2. The last applied run: the time-driven passes at T, as `maintain --due` runs them.
    first = plan(store, TIMED, now=NOW)
    _, seconds = p50(lambda: apply(store, first), 1)
    line(
        "maintain (time-driven passes) at T, applied",
        seconds,
        f"{first.changed:,} changes; computes every memory's due time",
    )

    # 3. A dry run at T again, and at the time when --due-share of the memories are due.
    again, seconds = p50(lambda: plan(store, DECAY, now=NOW))
    assert again.is_empty and again.read == "due"
    line("decay dry run at T again (target <= 50 ms)", seconds, f"read {again.rows_read:,} due")
    moment = time_for_share(store, NOW, max(1, round(args.due_share * memories)))
    due_plan, due_seconds = p50(lambda: plan(store, DECAY, now=moment))
    assert due_plan.read == "due"
    share = (due_plan.rows_read or 0) / memories
    line(
        f"decay dry run at T + {(moment - NOW) / HOUR:.1f} h (target <= 100 ms)",
        due_seconds,
        f"read {due_plan.rows_read:,} due ({share:.2%}), {due_plan.changed:,} changes",
    )
    every, every_seconds = p50(lambda: plan(store, DECAY, now=moment, every=True), 3)
    same = changes(every) == changes(due_plan)
    line(
        "the same plan over every memory (--all)",
        every_seconds,
        f"read {every.rows_read:,}, {every.changed:,} changes; equal: {same}",
    )
    print(f"  due plan / full plan: {due_seconds / every_seconds:.3f}")
    assert same, "the due plan differs from the full plan"

    # 4. The next run applied, then the same time again and the next cron tick.
    timed_plan = plan(store, TIMED, now=moment)
    _, seconds = p50(lambda: apply(store, timed_plan), 1)
    line(
        "maintain (time-driven passes) then, applied",
        seconds,
        f"{timed_plan.changed:,} changes, read {timed_plan.rows_read:,} due",
    )
    after, seconds = p50(lambda: plan(store, DECAY, now=moment))
    line("decay dry run at that time again", seconds, f"read {after.rows_read:,} due")
    tick, seconds = p50(lambda: plan(store, TIMED, now=moment + 6 * HOUR))
    line(
        "maintain dry run at the next cron tick (+6 h)",
        seconds,
        f"read {tick.rows_read:,} due, {tick.changed:,} changes",
    )
    store.close()
    print(f"load average at end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
