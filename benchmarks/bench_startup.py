"""Start-up time of `memory-console --version`, `--help` and a keyword search against a bare
interpreter.

Run from the repository: python -m benchmarks.bench_startup [--runs N] [--db STORE]. Each
figure is the median wall time of N fresh interpreters; `python -c pass` in the same run is
the floor they stand on. The interpreters may write and read their bytecode caches, as an
installed program's do (PYTHONDONTWRITEBYTECODE is cleared for them), and each command runs
once before it is timed. With --db (a store of 100,000 memories, say; a copy is searched,
the original never changed), `search --mode keyword` is timed too, and its distance from
`--version` is checked against the target: at most 0.1 s more.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.bench_import_memory import cpu_model

COMMANDS = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "memory-console --version": [sys.executable, "-m", "memory_console.cli", "--version"],
    "memory-console --help": [sys.executable, "-m", "memory_console.cli", "--help"],
}
QUERIES = ("coffee", "weekly team meeting", "deploy release", "allergic")
TARGET = 0.1  # seconds a keyword search may take beyond --version


def median_seconds(argv: list[str], runs: int, environment: dict[str, str]) -> float:
    subprocess.run(argv, stdout=subprocess.DEVNULL, check=True, env=environment)  # warm-up
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, check=True, env=environment)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=21, help="interpreters per command")
    parser.add_argument("--db", type=Path, help="a store to run a keyword search on (copied)")
    args = parser.parse_args()
    environment = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    print(f"CPU: {cpu_model()}")
    print(f"median of {args.runs} runs each")
    commands = dict(COMMANDS)
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as folder:
        if args.db is not None:
            copy = Path(folder) / args.db.name
            shutil.copy(args.db, copy)
            for query in QUERIES:
                commands[f"search {query!r} --mode keyword"] = [
                    sys.executable, "-m", "memory_console.cli", "search", query,
                    "--mode", "keyword", "--db", str(copy),
                ]  # fmt: skip
        figures = {}
        for label, argv in commands.items():
            figures[label] = median_seconds(argv, args.runs, environment)
            print(f"{label:44} {figures[label] * 1000:7.1f} ms")
    searches = [seconds for label, seconds in figures.items() if label.startswith("search")]
    if searches:
        beyond = statistics.median(searches) - figures["memory-console --version"]
        verdict = "met" if beyond <= TARGET else "MISSED"
        print(
            f"keyword search beyond --version: {beyond * 1000:.1f} ms "
            f"(target <= {TARGET * 1000:.0f} ms: {verdict})"
        )


if __name__ == "__main__":
    main()
