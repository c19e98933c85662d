"""The vector index's exact top-k scan beside plain numpy, at 100,000 and 1,000,000 vectors.

    python -m benchmarks.bench_vector_scan [--sizes 100000 1000000] [--rounds 50]
                                           [--budget-mb 64]

For each size: random unit vectors (384 dimensions, seed 40) are written as the store's vector
index file (store/vector_file.py) and read back into memory as one float32 array. Then, for
the same queries:
- numpy: `X @ q`, then argpartition for the k best and a sort of those (the baseline);
- MappedIndex over the mapped file with no budget (the default: pages stay mapped);
- MappedIndex under --budget-mb (each chunk's pages dropped after it is scored), beside it.
Each prints p50 and p95 of top-10 over --rounds queries after one warm-up query, the ratio of
its p50 to numpy's, and whether its top-10 ids equal numpy's for every query (they must). The
target: the default scan <= 1.2x numpy's at both sizes.
"""

from __future__ import annotations

import argparse
import functools
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.bench_import_memory import cpu_model
from memory_console.embed.mapped_index import MappedIndex
from memory_console.store import vector_file

DIM = 384
K = 10
TARGET = 1.2


def write_file(path: Path, vectors: np.ndarray) -> vector_file.VectorFile:
    writer = vector_file._Writer(path, len(vectors), DIM)
    ids = np.arange(1, len(vectors) + 1, dtype=np.int64)
    step = 65_536
    for start in range(0, len(vectors), step):
        stop = min(start + step, len(vectors))
        writer.add(ids[start:stop], vectors[start:stop], [("owner", "general")] * (stop - start))
    writer.finish("bench-store", "bench-model", 0)
    return vector_file.read_file(path)


def numpy_top(matrix: np.ndarray, query: np.ndarray) -> np.ndarray:
    scores = matrix @ query
    best = np.argpartition(-scores, K)[:K]
    return best[np.argsort(-scores[best], kind="stable")] + 1  # ids are rows + 1


def timed(
    call: Callable[[np.ndarray], Any], queries: np.ndarray
) -> tuple[list[float], list[np.ndarray]]:
    call(queries[0])  # warm-up: the first touch of the file's pages
    took: list[float] = []
    found: list[np.ndarray] = []
    for query in queries:
        started = time.perf_counter()
        ids = call(query)
        took.append((time.perf_counter() - started) * 1000)
        found.append(np.asarray(ids))
    return took, found


def p50_p95(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--rounds", type=int, default=50)
    parser.add_argument("--budget-mb", type=int, default=64)
    args = parser.parse_args()
    print(f"CPU: {cpu_model()}")
    rng = np.random.default_rng(40)
    queries = rng.standard_normal((args.rounds, DIM)).astype(np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    print(f"{'vectors':>10} {'scan':<28} {'p50 / p95 ms':>18} {'x numpy':>8}  same top-10")
    for size in args.sizes:
        vectors = rng.standard_normal((size, DIM)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        with tempfile.TemporaryDirectory(prefix="bench-vector-scan-") as folder:
            file = write_file(Path(folder) / "memories.db.vectors", vectors)
            matrix = np.array(file.vectors)  # what numpy holds: the same floats, in memory
            del vectors
            base, expected = timed(functools.partial(numpy_top, matrix), queries)
            b50, b95 = p50_p95(base)
            print(f"{size:>10,} {'numpy X @ q + argpartition':<28} {b50:8.2f} / {b95:7.2f}")
            for name, budget in (
                ("mapped (no budget)", None),
                (f"mapped ({args.budget_mb} MB budget)", args.budget_mb * 2**20),
            ):
                index = MappedIndex(file, labels=2, budget=budget)
                took, found = timed(lambda query: index.search(query, K)[0], queries)  # noqa: B023
                same = all(np.array_equal(a, b) for a, b in zip(found, expected, strict=True))
                p50, p95 = p50_p95(took)
                verdict = ""
                if budget is None:
                    verdict = f"  target <= {TARGET}x: {'met' if p50 <= TARGET * b50 else 'MISSED'}"
                print(
                    f"{size:>10,} {name:<28} {p50:8.2f} / {p95:7.2f} {p50 / b50:7.2f}x  "
                    f"{'yes' if same else 'NO'}{verdict}"
                )
            del matrix, file


if __name__ == "__main__":
    main()
