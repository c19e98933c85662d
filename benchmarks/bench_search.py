"""Hybrid search latency on a demo store: query embedding, FTS5, vector top-k, fusion, records.

    python benchmarks/bench_search.py [--count 100000] [--big] [--db PATH]

The store is a real demo store; the vector index holds one vector per active memory, loaded as
every search loads it (the mapped vector index file beside the store). Embedding a million
memories takes the model about an hour on two cores, so by default each memory gets a random
unit vector, stored under its text's content hash (the cost of an exact scan does not depend
on the values); the query is embedded by the real model on every search. --real embeds the
store's distinct texts instead (slow above 100,000 memories).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from memory_console.demo import build_demo
from memory_console.embed.embedder import Embedder, content_hash
from memory_console.embed.search import SearchEngine
from memory_console.embed.semantic import SemanticIndex
from memory_console.store import MemoryFilter, Store
from memory_console.store import embeddings as table

QUERIES = (
    "what editor colours does the user like",
    "when is the weekly team meeting",
    "which database did they choose for billing",
    "is she allergic to anything",
    "how does she deploy a release",
    "minecraft farm project",
    "who is the manager",
    "favourite recipe",
    "time zone and city",
    "preferred answer length",
)


def percentile(samples: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(samples), q))


def fill_index(store: Store, semantic: SemanticIndex, real: bool) -> float:
    """Give every active memory a stored vector and load the index as every search loads it
    (the vector index file beside the store, mapped); returns seconds spent. Random unit
    vectors are stored under each text's own content hash, so they are current."""
    started = time.perf_counter()
    if real:
        semantic.sync()
        return time.perf_counter() - started
    items = semantic.pending()
    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((len(items), semantic.embedder.dim), dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    for start in range(0, len(items), 20_000):
        rows = [
            (ident, content_hash(text), vector.tobytes())
            for (ident, text), vector in zip(
                items[start : start + 20_000], vectors[start : start + 20_000], strict=True
            )
        ]
        table.write_vectors(store, semantic.model_id, rows)
    semantic.load()
    return time.perf_counter() - started


def bench(path: Path, real: bool, rounds: int) -> None:
    with Store(path, actor="bench") as store:
        count = store.count()
        embedder = Embedder.load()
        semantic = SemanticIndex(store, embedder)
        seconds = fill_index(store, semantic, real)
        engine = SearchEngine(store)
        engine.semantic = semantic
        print(
            f"{count:,} memories; index of {len(semantic.index):,} vectors "
            f"({type(semantic.index).__name__}, {semantic.source}) filled in {seconds:.1f} s"
            f" ({'real embeddings' if real else 'random unit vectors'})"
        )
        for mode in ("keyword", "semantic", "hybrid"):
            engine.search(QUERIES[0], mode=mode, k=10)  # warm caches
            samples = []
            for _ in range(rounds):
                for query in QUERIES:
                    started = time.perf_counter()
                    engine.search(query, mode=mode, k=10)
                    samples.append((time.perf_counter() - started) * 1000)
            print(
                f"  {mode:<8} p50 {statistics.median(samples):7.2f} ms   "
                f"p95 {percentile(samples, 95):7.2f} ms   ({len(samples)} searches)"
            )
        # Agents recall within one owner; the console filters by topic.
        for label, memory_filter in (
            ("owner", MemoryFilter(status="active", owner="alice")),
            ("topic", MemoryFilter(status="active", topic="preferences")),
            ("owner+topic", MemoryFilter(status="active", owner="alice", topic="preferences")),
        ):
            allowed = len(store.ids_matching(memory_filter))
            samples = []
            for _ in range(rounds):
                for query in QUERIES:
                    started = time.perf_counter()
                    engine.search(query, mode="hybrid", k=10, memory_filter=memory_filter)
                    samples.append((time.perf_counter() - started) * 1000)
            print(
                f"  hybrid, {label} filter ({allowed:,} memories) p50 "
                f"{statistics.median(samples):7.2f} ms   p95 {percentile(samples, 95):7.2f} ms"
            )
        samples = []
        for _ in range(rounds):
            for query in QUERIES:
                started = time.perf_counter()
                embedder.embed_query(query)
                samples.append((time.perf_counter() - started) * 1000)
        print(f"  query embedding alone p50 {statistics.median(samples):.2f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=100_000)
    parser.add_argument("--big", action="store_true", help="also 1,000,000 memories")
    parser.add_argument("--db", help="use this demo store (built if missing)")
    parser.add_argument("--real", action="store_true", help="embed the texts for real")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    counts = [args.count] + ([1_000_000] if args.big else [])
    for count in counts:
        path = (
            Path(args.db)
            if args.db and count == args.count
            else (Path(tempfile.mkdtemp(prefix="bench-search-")) / f"demo-{count}.db")
        )
        if not path.exists():
            report = build_demo(path, count=count, seed=7)
            print(f"built a {count:,}-memory demo store in {report.seconds:.1f} s")
        bench(path, args.real, args.rounds)
    print("targets: hybrid p50 <= 20 ms at 100,000 and <= 80 ms at 1,000,000 memories")


if __name__ == "__main__":
    main()
