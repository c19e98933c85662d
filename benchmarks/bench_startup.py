"""Start-up time of `memory-console --version` and `--help` against a bare interpreter.

Run from the repository: python -m benchmarks.bench_startup [--runs N]. Each figure is the median
wall time of N fresh interpreters; `python -c pass` in the same run is the floor they stand on.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

from benchmarks.bench_import_memory import cpu_model

COMMANDS = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "memory-console --version": [sys.executable, "-m", "memory_console.cli", "--version"],
    "memory-console --help": [sys.executable, "-m", "memory_console.cli", "--help"],
}


def median_seconds(argv: list[str], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, check=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=21, help="interpreters per command")
    runs = parser.parse_args().runs
    print(f"CPU: {cpu_model()}")
    print(f"median of {runs} runs each")
    for label, argv in COMMANDS.items():
        print(f"{label:28} {median_seconds(argv, runs) * 1000:7.1f} ms")


if __name__ == "__main__":
    main()
