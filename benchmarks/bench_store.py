"""Store benchmark: build a demo store, open it, page it (keyset against OFFSET), search it.

    python benchmarks/bench_store.py [--count 1000000] [--db PATH] [--keep]

Prints each figure; paging is given as a ratio of OFFSET to keyset time measured in this run.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from memory_console.demo import build_demo
from memory_console.store import Cursor, MemoryFilter, Store

PAGE = 50


def timed(action: Callable[[], object], repeat: int = 5) -> float:
    """Median seconds of `repeat` runs."""
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        action()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


def cursor_before_page(store: Store, sort: str, page_number: int) -> Cursor:
    """The cursor keyset paging would hold after reading page_number - 1 pages."""
    offset = PAGE * (page_number - 1) - 1
    order = "id" if sort == "id" else f"{sort}, id"
    value, ident = store._query(
        f"SELECT {sort}, id FROM memory ORDER BY {order} LIMIT 1 OFFSET ?", (offset,)
    )[0]
    return Cursor(value, ident)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=1_000_000)
    parser.add_argument("--db", help="reuse (or build) the store here")
    parser.add_argument("--keep", action="store_true", help="keep the store file afterwards")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="bench-store-"))
    path = Path(args.db) if args.db else folder / "bench.db"
    print(f"memories: {args.count:,}")
    if not path.exists():
        report = build_demo(path, count=args.count, seed=7)
        print(f"build:            {report.seconds:8.2f} s  ({report.events:,} events)")
    started = time.perf_counter()
    store = Store(path, actor="bench")
    print(f"open:             {(time.perf_counter() - started) * 1000:8.2f} ms")
    first = timed(lambda: store.page(limit=PAGE))
    print(f"first page:       {first * 1000:8.2f} ms")
    for sort in ("id", "confidence", "last_accessed_at", "title"):
        cursor = cursor_before_page(store, sort, 1000)
        keyset = timed(lambda: store.page(sort=sort, after=cursor, limit=PAGE))  # noqa: B023
        offset = timed(
            lambda: store.page_with_offset(sort=sort, offset=PAGE * 999, limit=PAGE),  # noqa: B023
            repeat=3,
        )
        print(
            f"page 1,000 by {sort:<16} keyset {keyset * 1000:7.2f} ms, "
            f"OFFSET {offset * 1000:8.2f} ms"
            f"  -> keyset {offset / keyset:6.1f}x faster"
        )
    filtered = MemoryFilter(topic="preferences", status="active")
    second = store.page(filtered, sort="confidence", limit=PAGE).next_cursor
    keyset = timed(lambda: store.page(filtered, sort="confidence", after=second, limit=PAGE))
    print(f"page 2 of a topic by confidence: {keyset * 1000:7.2f} ms")
    for query in ("iron farm", "editor theme dark", "password", "meeting"):
        seconds = timed(lambda: store.keyword_search(query, limit=20))  # noqa: B023
        print(f"keyword search {query!r:<22} {seconds * 1000:8.2f} ms")
    store.close()
    if not args.keep and not args.db:
        for file in folder.iterdir():
            file.unlink()
        folder.rmdir()


if __name__ == "__main__":
    main()
