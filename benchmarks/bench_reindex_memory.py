"""The peak memory of `memory-console reindex` on a store of 100,000 memories, against its bound.

    python -m benchmarks.bench_reindex_memory --db STORE [--bound-mb 400]

A copy of STORE (the file alone; the original is never changed) has its vectors and vector
index file taken away, then `memory-console reindex` runs on it in a child process: every
active memory is embedded again (each distinct text once) and the index file written. The
figure is that child's peak resident set size (ru_maxrss, read through a wrapper process so
that it is the reindex's own), printed beside the bound README states (400 MB at 100,000
memories) and the embedder's own footprint: a child that only loads the model.
"""

from __future__ import annotations

import argparse
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks.bench_import_memory import cpu_model

WRAPPER = (
    "import resource, subprocess, sys, time;"
    "started = time.perf_counter();"
    "done = subprocess.run(sys.argv[1:], capture_output=True, text=True);"
    "seconds = time.perf_counter() - started;"
    "peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss;"
    "last = (done.stdout.strip() or done.stderr.strip()).splitlines()[-1:] or [''];"
    "print(peak, seconds, done.returncode, last[0][:160], sep='\\n')"
)


def measured(command: list[str]) -> tuple[float, float, int, str]:
    """(peak MB, wall seconds, exit code, last line) of one command in a child process."""
    done = subprocess.run(
        [sys.executable, "-c", WRAPPER, *command], capture_output=True, text=True, check=True
    )
    peak, seconds, code, last = done.stdout.split("\n", 3)
    return int(peak) / 1024, float(seconds), int(code), last.strip()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", type=Path, required=True, help="a store to copy")
    parser.add_argument("--bound-mb", type=float, default=400.0)
    args = parser.parse_args()
    print(f"CPU: {cpu_model()}")
    with tempfile.TemporaryDirectory(prefix="bench-reindex-memory-") as folder:
        copy = Path(folder) / "memories.db"
        shutil.copy(args.db, copy)
        conn = sqlite3.connect(copy)
        conn.execute("DELETE FROM embedding")
        count = conn.execute("SELECT count(*) FROM memory WHERE status = 'active'").fetchone()[0]
        conn.commit()
        conn.close()
        model, _, _, _ = measured(
            [sys.executable, "-c", "from memory_console.embed import Embedder; Embedder.load()"]
        )
        cli = [sys.executable, "-m", "memory_console.cli"]
        peak, seconds, code, last = measured([*cli, "reindex", "--db", str(copy)])
        if code != 0:
            print(f"reindex failed ({code}): {last}")
            return 1
    verdict = "met" if peak <= args.bound_mb else "MISSED"
    print(f"{count:,} active memories: {last}")
    print(f"the embedder alone (model loaded): {model:.0f} MB peak")
    print(
        f"reindex: {peak:.0f} MB peak in {seconds:.1f} s "
        f"(bound {args.bound_mb:.0f} MB: {verdict}; {peak - model:.0f} MB beyond the embedder)"
    )
    return 0 if peak <= args.bound_mb else 1


if __name__ == "__main__":
    raise SystemExit(main())
