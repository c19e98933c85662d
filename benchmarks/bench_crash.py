"""Crash benchmark: SIGKILL at random moments of apply, undo, import, purge and migration.

    python benchmarks/bench_crash.py [--trials 50] [--count 3000] [--seed 1] [--workdir DIR]
        [--operations apply,undo,import,purge,migrate]

Each operation runs once uninterrupted (its state after, and the times of its BEGIN, COMMIT
and return), then --trials times in a forked child on a fresh copy of its prepared store,
killed after a random delay: a third of the trials draw it over the whole operation and a
little beyond (up to 1.2 times its duration), a third over its write transaction (BEGIN to
COMMIT), a third around its commit (COMMIT to the return, widened by 15% of the
transaction's length each side). Times are those of the median uninterrupted run. After
each kill: PRAGMA integrity_check and the text index's check pass, the
store is exactly as before or exactly as after, a purge that happened left every memory in
its JSONL file, a migration left a sound backup and a store that opens. Prints, per
operation, where the kills landed and what they left; exit status 1 on any problem, or when
an operation never ended both before and after.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.harness.crash_child import (  # noqa: E402
    OPERATIONS,
    Operation,
    Trial,
    calibrate,
    prepare_operations,
    run_trial,
)

PHASES = ("before transaction", "in transaction", "in commit", "after return")


def delays(operation: Operation, trials: int, rng: random.Random) -> list[float]:
    """A third over the whole operation and a little past its end, a third over its write
    transaction, a third around its commit (the moment that decides before or after)."""
    begin, commit, done = operation.begin_s, operation.commit_s, operation.done_s
    margin = 0.15 * (commit - begin)
    windows = [(0.0, 1.2 * done), (begin, commit), (commit - margin, done + margin)]
    chosen = [rng.uniform(*windows[trial % 3]) for trial in range(trials)]
    rng.shuffle(chosen)
    return chosen


def summary(name: str, operation: Operation, trials: list[Trial], seconds: float) -> str:
    outcomes = Counter(trial.outcome for trial in trials)
    phases = Counter(trial.phase for trial in trials)
    landed = ", ".join(f"{phase} {phases[phase]}" for phase in PHASES if phases[phase])
    return (
        f"{name:8} {len(trials):3} kills in {seconds:5.1f} s | op {operation.done_s * 1000:6.1f} ms"
        f" (BEGIN {operation.begin_s * 1000:.1f}, COMMIT {operation.commit_s * 1000:.1f}) | "
        f"before {outcomes['before']:3}, after {outcomes['after']:3}, torn {outcomes['torn']} | "
        f"{landed}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=50, help="random kills per operation")
    parser.add_argument("--count", type=int, default=3000, help="memories in the demo store")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--operations", default=",".join(OPERATIONS))
    parser.add_argument("--workdir", type=Path, default=None)
    args = parser.parse_args()
    folder = args.workdir or Path(tempfile.mkdtemp(prefix="crash-"))
    names = [name.strip() for name in args.operations.split(",") if name.strip()]
    unknown = set(names) - set(OPERATIONS)
    if unknown:
        parser.error(f"unknown operations: {', '.join(sorted(unknown))}")
    started = time.perf_counter()
    operations = prepare_operations(folder, args.count)
    print(
        f"prepared {args.count:,} memories in {folder} in {time.perf_counter() - started:.1f} s;"
        f" {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}"
    )
    rng = random.Random(args.seed)
    failures: list[str] = []
    for name in names:
        operation = operations[name]
        clock = time.perf_counter()
        calibration = calibrate(operation)
        failures += [f"{name} uninterrupted: {text}" for text in calibration.problems]
        trials = [
            run_trial(operation, delay=delay) for delay in delays(operation, args.trials, rng)
        ]
        print(summary(name, operation, trials, time.perf_counter() - clock), flush=True)
        for trial in trials:
            failures += [
                f"{name} killed at {trial.moment} ({trial.phase}): {text}"
                for text in trial.problems
            ]
        outcomes = {trial.outcome for trial in trials}
        for wanted in ("before", "after"):
            if wanted not in outcomes:
                failures.append(f"{name}: no kill left the store {wanted} the operation")
    for failure in failures:
        print(f"PROBLEM: {failure}")
    total = len(names) * args.trials
    print(
        f"{total} kills in {time.perf_counter() - started:.0f} s: "
        + ("every store sound and all or nothing" if not failures else f"{len(failures)} problems")
    )
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
