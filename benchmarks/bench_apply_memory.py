"""The peak memory of a decay apply at 1,000,000 memories beside the same updates done raw.

    python -m benchmarks.bench_apply_memory [--count 1000000] [--workdir DIR]

A demo store of --count memories (seed 7) is built in --workdir (reused when there) and copied
for each measurement. In a child process each, at the same `now`:
- memory-console: plan (relevance decay, the default passes' decay) and apply, as
  `maintain --apply` does: one transaction, one event per change, the run row;
- raw: sqlite3 alone finds the same changes with one SQL query (benchmarks/bench_maintenance.py's
  RAW_CHANGES), then in one transaction updates each memory's confidence, updated_at and
  revision and inserts one event per change.
Each figure is the child's peak resident set size (ru_maxrss, read through a wrapper process)
and its wall time; the target: memory-console's peak at most 2x the raw one's.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

from benchmarks.bench_import_memory import cpu_model
from benchmarks.bench_maintenance import NOW, RAW_CHANGES
from benchmarks.bench_reindex_memory import measured
from memory_console.demo import build_demo

TARGET = 2.0
OURS = """
import sys
from memory_console.maintenance import apply, plan
from memory_console.store import Store
with Store(sys.argv[1], actor="bench") as store:
    run = apply(store, plan(store, now=float(sys.argv[2])))
    print(f"{run.changed} memories changed")
"""
RAW = """
import json, sqlite3, sys, time
now = float(sys.argv[2])
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
rows = conn.execute(sys.argv[3], {"now": now}).fetchall()
at = time.time()
conn.execute("BEGIN IMMEDIATE")
conn.executemany(
    "UPDATE memory SET confidence = ?, updated_at = ?, revision = revision + 1 WHERE id = ?",
    ((after, at, ident) for ident, _, after, _ in rows),
)
conn.executemany(
    "INSERT INTO memory_event (memory_id, at, actor, kind, before, after, query, evaluated_at) "
    "VALUES (?, ?, 'decay', 'decayed', ?, ?, ?, ?)",
    (
        (ident, at, json.dumps({"confidence": before}), json.dumps({"confidence": after}),
         reason, now)
        for ident, before, after, reason in rows
    ),
)
conn.execute("COMMIT")
print(f"{len(rows)} memories changed")
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=1_000_000)
    parser.add_argument("--workdir", type=Path)
    args = parser.parse_args()
    print(f"CPU: {cpu_model()}")
    folder = args.workdir or Path(tempfile.mkdtemp(prefix="bench-apply-memory-"))
    folder.mkdir(parents=True, exist_ok=True)
    source = folder / f"demo-{args.count}.db"
    if not source.exists():
        report = build_demo(source, count=args.count, seed=7)
        print(f"built a {args.count:,}-memory demo store in {report.seconds:.1f} s")
    figures = {}
    for name, code, extra in (("raw sqlite3", RAW, [RAW_CHANGES]), ("memory-console", OURS, [])):
        copy = folder / "copy.db"
        for leftover in folder.glob("copy.db*"):
            leftover.unlink()
        shutil.copy(source, copy)
        figures[name] = measured([sys.executable, "-c", code, str(copy), str(NOW), *extra])
        peak, seconds, status, last = figures[name]
        if status != 0:
            print(f"{name} failed ({status}): {last}")
            return 1
        print(f"{name:16} {peak:7.0f} MB peak  {seconds:6.1f} s  ({last})")
    ratio = figures["memory-console"][0] / figures["raw sqlite3"][0]
    verdict = "met" if ratio <= TARGET else "MISSED"
    print(f"peak memory-console / raw: {ratio:.2f}x (target <= {TARGET:g}x: {verdict})")
    if args.workdir is None:
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
