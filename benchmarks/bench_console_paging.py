"""Console benchmark: seconds to the first screen and for page-downs, large store against tiny.

    python benchmarks/bench_console_paging.py [--count 100000] [--tiny 300] [--workdir DIR]
        [--url postgresql://...]

--url: the large store is that PostgreSQL store (e.g. a million memories made with
`memory-console demo --db URL --count 1000000`), measured beside the tiny SQLite one.

Keyset paging reads one page at a time, so the large store should cost about what the tiny one
does; the suite checks that structurally (the table holds one page), and this prints the times.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.bench_import_memory import cpu_model  # noqa: E402
from memory_console.demo import build_demo  # noqa: E402
from memory_console.settings import Settings  # noqa: E402
from memory_console.store import Store  # noqa: E402
from memory_console.tui.app import make_app  # noqa: E402
from tests.harness.console import settle  # noqa: E402

NOW = 1_795_000_000.0  # a fixed `now`, so both stores age alike
SIZE = (120, 36)
PAGE_SIZE = 50
PAGE_KEYS = 8  # page-downs: a screenful each; at 36 rows this crosses two 50-row pages


async def measure(path: Path | str, keys: int = PAGE_KEYS) -> tuple[float, float, int]:
    """Seconds to the first screen of memories, seconds for the page-downs, pages crossed."""
    with Store(path, read_only=True, actor="tui") as store:
        started = time.perf_counter()
        settings = Settings(db=path, page_size=PAGE_SIZE)
        app = make_app(settings, store, now=NOW, semantic=False)
        async with app.run_test(size=SIZE) as pilot:
            screen: Any = app.screen
            while not screen.table.records:
                await pilot.pause()
            opened = time.perf_counter() - started
            await settle(pilot)
            started = time.perf_counter()
            for _ in range(keys):
                await pilot.press("pagedown")
            await settle(pilot)
            moved = time.perf_counter() - started
            pages = screen.page.number - 1
    return opened, moved, pages


async def run(tiny: Path, large: Path | str, count: int) -> None:
    await measure(tiny, keys=0)  # warm-up: one-time imports and caches count for neither
    large_open, large_moves, pages = await measure(large)
    tiny_open, tiny_moves, _ = await measure(tiny)
    kind = "PostgreSQL" if isinstance(large, str) else "SQLite"
    print(
        f"first screen: tiny {tiny_open:.3f}s, {count:,} memories ({kind}) {large_open:.3f}s "
        f"(ratio {large_open / tiny_open:.2f}); {PAGE_KEYS} page-downs ({pages} pages): "
        f"tiny {tiny_moves:.3f}s, large {large_moves:.3f}s (ratio {large_moves / tiny_moves:.2f})"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=100_000, help="memories in the large store")
    parser.add_argument("--tiny", type=int, default=300, help="memories in the tiny store")
    parser.add_argument("--workdir", type=Path, help="where to build the stores (default: temp)")
    parser.add_argument("--url", help="a PostgreSQL store to measure as the large one")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as temporary:
        folder = args.workdir or Path(temporary)
        tiny, large_file = folder / "tiny.db", folder / "large.db"
        builds = [(tiny, args.tiny, 7)] + ([] if args.url else [(large_file, args.count, 11)])
        for path, count, seed in builds:
            if not path.exists():
                build_demo(path, count=count, seed=seed, now=NOW)
        large: Path | str = large_file
        count = args.count
        if args.url:
            large = args.url
            with Store(args.url, read_only=True) as store:
                count = store.count()
        print(
            f"CPU: {cpu_model()}; python {platform.python_version()}; "
            f"load average {os.getloadavg()[0]:.2f}"
        )
        asyncio.run(run(tiny, large, count))
    return 0


if __name__ == "__main__":
    sys.exit(main())
