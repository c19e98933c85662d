"""Live agent benchmark: writes per second each side holds while they share one store.

    python benchmarks/bench_live_agent.py [--seconds 30] [--count 5000] [--adds 20]
        [--accesses 40] [--cli-every 5] [--workdir DIR]

An agent process adds memories (MemoryAPI.remember) and records accesses (Store.record_access)
on a fixed schedule while this process plans and applies decay at a simulated `now` months
ahead, keyword consolidation, protect/archive of hundreds of memories and undo, and runs the
real CLI (decay --apply, protect) now and then as a third writer. Every third decay plan waits
until the agent has reinforced one of its memories, and must be refused as stale. Afterwards
every write of the agent is counted in the store, the events are replayed to find any write
applied over a newer one, and PRAGMA integrity_check runs. Exit status 1 if any check fails.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from memory_console.demo import build_demo  # noqa: E402
from tests.harness.live_agent import run_live  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--count", type=int, default=5000, help="memories in the demo store")
    parser.add_argument("--adds", type=float, default=20.0, help="agent adds per second")
    parser.add_argument(
        "--accesses",
        type=float,
        default=40.0,
        help="agent access transactions per second (1-3 memories each)",
    )
    parser.add_argument(
        "--cli-every", type=float, default=5.0, help="seconds between CLI runs (0: none)"
    )
    parser.add_argument("--workdir", type=Path, default=None)
    args = parser.parse_args()
    folder = args.workdir or Path(tempfile.mkdtemp(prefix="live-agent-"))
    folder.mkdir(parents=True, exist_ok=True)
    db = folder / "live.db"
    for leftover in (db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")):
        leftover.unlink(missing_ok=True)
    build_demo(db, count=args.count, seed=5, now=time.time())
    print(
        f"store: {db} ({args.count:,} demo memories); {os.cpu_count()} CPUs, "
        f"load {os.getloadavg()[0]:.2f}; agent asks {args.adds:g} adds/s and "
        f"{args.accesses:g} accesses/s for {args.seconds:g} s"
    )
    result = run_live(
        db,
        folder / "agent.log",
        args.seconds,
        adds=args.adds,
        accesses=args.accesses,
        cli_every=args.cli_every or None,
    )
    for name, value in result.figures().items():
        print(f"{name:32} {value}")
    problems = result.problems()
    for problem in problems:
        print(f"PROBLEM: {problem}")
    print("all checks passed" if not problems else f"{len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
