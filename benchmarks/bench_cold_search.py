"""A CLI search in a fresh process, as a user runs it: wall time and peak memory, with the
vector index file beside the store and without it (every vector read from SQLite).

    python benchmarks/bench_cold_search.py --cache DIR [--sizes 100000 1000000] [--rounds 3]

Stores of each size are built once under DIR (a demo store with one random unit vector per
active memory, written through the Store as stored embeddings of the real model; the cost of
a search does not depend on the values) and reused by later runs. The query is embedded by the
real model in every process. "Without the file" runs with --read-only while the file is moved
aside: a read-only store never writes one, so each process reads every vector from SQLite, as
every search did before the file existed. The page cache is warm: each figure is the median
of the rounds after one untimed run.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.bench_import_memory import cpu_model  # noqa: E402
from memory_console.store import vector_file  # noqa: E402

QUERIES = ("what editor colours does the user like", "when is the weekly team meeting")
NOW = "2026-06-01T00:00:00Z"
VECTOR_BATCH = 20_000


def build_store(path: Path, count: int) -> None:
    """A demo store of `count` memories with a random unit vector for every active memory."""
    from memory_console.demo import build_demo
    from memory_console.embed.embedder import Embedder, content_hash
    from memory_console.embed.semantic import memory_text
    from memory_console.store import Store
    from memory_console.store import embeddings as table
    from memory_console.timeutil import parse_iso

    started = time.perf_counter()
    build_demo(path, count=count, seed=1, now=parse_iso(NOW))
    embedder = Embedder.load()
    rng = np.random.default_rng(7)
    with Store(path, actor="bench") as store:
        # Each vector carries its text's real hash, so that the console finds nothing to embed.
        texts = [
            (row[0], content_hash(memory_text(row[1], row[2], row[3])))
            for row in table.memories_to_embed(store)
        ]
        for start in range(0, len(texts), VECTOR_BATCH):
            part = texts[start : start + VECTOR_BATCH]
            vectors = rng.standard_normal((len(part), embedder.dim), dtype=np.float32)
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
            table.write_vectors(
                store,
                embedder.model_id,
                [(i, h, v.tobytes()) for (i, h), v in zip(part, vectors, strict=True)],
            )
    print(f"  built {path.name}: {count:,} memories in {time.perf_counter() - started:.0f} s")


def child_environment(cache: Path) -> dict[str, str]:
    """The environment of each search process: bytecode cached (under the cache directory)
    as in an installed package, even where the caller's environment turns it off."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(cache / "pycache")
    return env


ENV: dict[str, str] = {}


def search(path: Path, query: str, *flags: str) -> tuple[float, float]:
    """(wall seconds, peak RSS in MB) of one `memory-console search` process."""
    command = [sys.executable, "-m", "memory_console.cli", "--db", str(path), *flags]
    command += ["search", query, "--k", "10", "--now", NOW]
    timer = ["/usr/bin/time", "-f", "%M"] if Path("/usr/bin/time").exists() else []
    started = time.perf_counter()
    done = subprocess.run([*timer, *command], capture_output=True, text=True, env=ENV or None)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"search failed: {done.stderr}")
    peak = float(done.stderr.strip().splitlines()[-1]) / 1024 if timer else float("nan")
    return seconds, peak


CONSOLE = """
import sys, time
started = time.perf_counter()
from memory_console.embed.search import SearchEngine
from memory_console.store import Store
store = Store(sys.argv[1], actor="tui")
engine = SearchEngine(store)
engine.prepare_semantic()
engine.search(sys.argv[2], mode="hybrid", k=20)
print(f"{time.perf_counter() - started:.3f}")
"""


def console_search(path: Path) -> float:
    """Seconds from a fresh process's start to its first hybrid search as the console makes
    it (the embedder loaded, the stored vectors checked and loaded: prepare_semantic)."""
    command = [sys.executable, "-c", CONSOLE, str(path), QUERIES[1]]
    done = subprocess.run(command, capture_output=True, text=True, env=ENV or None)
    if done.returncode != 0:
        raise SystemExit(f"console search failed: {done.stderr}")
    return float(done.stdout.strip().splitlines()[-1])


def measure(path: Path, rounds: int, *flags: str) -> tuple[float, float]:
    search(path, QUERIES[0], *flags)  # warm the page cache
    runs = [search(path, QUERIES[r % len(QUERIES)], *flags) for r in range(rounds)]
    return statistics.median(s for s, _ in runs), max(m for _, m in runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, required=True, help="where the stores are kept")
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    args.cache.mkdir(parents=True, exist_ok=True)
    ENV.update(child_environment(args.cache))
    print(f"CPU: {cpu_model()}; {os.cpu_count()} cores")
    print(f"load average at start: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    for count in args.sizes:
        path = args.cache / f"cold-{count}.db"
        built = not path.exists()
        if built:
            build_store(path, count)
        index = vector_file.vector_path(path)
        if not index.exists():
            started = time.perf_counter()
            search(path, QUERIES[0])  # a writable store writes the file at its first search
            print(
                f"  index file written by the first search in {time.perf_counter() - started:.1f} s"
            )
        with_file = measure(path, args.rounds)
        aside = index.with_name(index.name + ".aside")
        index.rename(aside)
        try:
            without = measure(path, args.rounds, "--read-only")
        finally:
            aside.rename(index)
        first = console_search(path)
        later = statistics.median(console_search(path) for _ in range(args.rounds))
        print(f"{count:>9,} memories  console's first search after open: {later:.2f} s")
        if built:
            print(f"  (the first console start on the new store checks every text: {first:.2f} s)")
        print(
            f"{count:>9,} memories  hybrid search, fresh process: "
            f"with the index file {with_file[0]:.2f} s, {with_file[1]:.0f} MB peak; "
            f"without it {without[0]:.2f} s, {without[1]:.0f} MB peak"
        )
    print(f"load average at end: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
