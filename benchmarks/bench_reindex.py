"""Reindex benchmark: `reindex` throughput beside the embedder's own on the same texts, same run.

    python benchmarks/bench_reindex.py [--count 5000] [--seed 7] [--repeat 3] [--workdir DIR]

Builds a demo store of --count memories, then, in one process with one loaded model, times in
turn, --repeat times: the embedder alone on the distinct texts reindex would embed (one
`Embedder.embed` call, the embedder at its best), and a full reindex of a fresh copy of the
store (SemanticIndex.sync: hashing, embedding, writing the vectors and the index file). Taking
turns spreads another process's load over both; the best of each is compared. Reindex's
overhead is its time beyond the embedder's; the time spent inside `embed` during reindex is
shown too. The model's load is not counted.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.bench_import_memory import cpu_model  # noqa: E402
from memory_console.demo import build_demo  # noqa: E402
from memory_console.embed import Embedder  # noqa: E402
from memory_console.embed.semantic import SemanticIndex, memory_text  # noqa: E402
from memory_console.store import Store  # noqa: E402
from memory_console.store import embeddings as table  # noqa: E402


def distinct_texts(path: Path) -> tuple[int, list[str]]:
    """How many active memories the store holds, and their distinct embedding texts."""
    with Store(path, read_only=True) as store:
        rows = table.active_texts_checked(store)[1]
    texts = dict.fromkeys(memory_text(row[1], row[2], row[3]) for row in rows)
    return len(rows), list(texts)


def embedder_alone(embedder: Embedder, texts: list[str]) -> float:
    started = time.perf_counter()
    embedder.embed(texts)
    return time.perf_counter() - started


class TimedEmbedder:
    """The embedder, with the time spent inside embed() added up."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self.seconds = 0.0
        self.texts = 0

    def embed(self, texts: Any, *args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return self.embedder.embed(texts, *args, **kwargs)
        finally:
            self.seconds += time.perf_counter() - started
            self.texts += len(texts)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.embedder, name)


def reindex(path: Path, embedder: Embedder) -> tuple[float, float, int]:
    """(seconds of the whole sync, seconds inside embed, texts embedded) on the store."""
    timed = TimedEmbedder(embedder)
    started = time.perf_counter()
    with Store(path) as store:
        SemanticIndex(store, timed).sync()  # type: ignore[arg-type]
    return time.perf_counter() - started, timed.seconds, timed.texts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=5000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--workdir", type=Path)
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(dir=args.workdir, prefix="bench-reindex-"))
    try:
        path = workdir / "demo.db"
        build_demo(path, count=args.count, seed=args.seed)
        memories, texts = distinct_texts(path)
        embedder = Embedder.load()
        embedder.embed(texts[:64])  # the first run's allocations are not the embedder's pace
        print(
            f"{cpu_model()}; {os.cpu_count()} CPUs; python {platform.python_version()}; "
            f"model {embedder.model_id}"
        )
        print(f"demo store: {memories:,} active memories, {len(texts):,} distinct texts")
        alone: list[float] = []
        runs: list[tuple[float, float, int]] = []
        for _ in range(args.repeat):
            alone.append(embedder_alone(embedder, texts))
            copy = workdir / "run.db"
            shutil.copy(path, copy)
            runs.append(reindex(copy, embedder))
            for leftover in workdir.glob("run.db*"):
                leftover.unlink()
        best = min(alone)
        whole, inside, embedded = min(runs)
        print(
            f"embedder alone: {best:6.1f} s ({len(texts) / best:,.0f} texts/s; "
            f"runs {', '.join(f'{seconds:.1f}' for seconds in alone)} s)"
        )
        print(
            f"reindex:        {whole:6.1f} s ({len(texts) / whole:,.0f} distinct texts/s; "
            f"runs {', '.join(f'{run[0]:.1f}' for run in runs)} s); best run: {inside:.1f} s "
            f"in embed ({embedded:,} texts), {whole - inside:.1f} s besides"
        )
        print(f"reindex overhead beyond the embedder alone: {(whole / best - 1) * 100:+.0f}%")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
