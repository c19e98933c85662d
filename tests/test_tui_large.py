"""A 100,000-memory store opens and pages as fast as a tiny one (keyset paging, no full load)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from memory_console.ingest.demo import DemoReport
from memory_console.store import Store
from tests import test_tui_support as support
from tests.test_tui_support import console, settle

demo_file = support.demo_file

LARGE_COUNT = 100_000
SIZE = (120, 36)
PAGE_SIZE = 50
PAGE_KEYS = 8  # page-downs: a screenful each; at 36 rows this crosses two 50-row pages
RATIO = 3.0  # what the large store may cost over the tiny one, with room for a busy machine


@pytest.fixture(scope="session")
def large_file(large_demo: DemoReport) -> Path:
    assert large_demo.memories == LARGE_COUNT
    return large_demo.path


async def measure(path: Path, keys: int = PAGE_KEYS) -> tuple[float, float, int]:
    """Seconds to the first screen of memories, seconds for the page-downs, pages crossed."""
    with Store(path, read_only=True, actor="tui") as store:
        started = time.perf_counter()
        app = console(store, page_size=PAGE_SIZE)
        async with app.run_test(size=SIZE) as pilot:
            screen: Any = app.screen
            while not screen.table.records:
                await pilot.pause()
            opened = time.perf_counter() - started
            await settle(pilot)
            first_page = screen.page
            started = time.perf_counter()
            for _ in range(keys):
                await pilot.press("pagedown")
            await settle(pilot)
            moved = time.perf_counter() - started
            assert keys == 0 or screen.page is not first_page
            pages = screen.page.number - 1
            assert screen.table.current is not None
    return opened, moved, pages


@pytest.mark.slow
async def test_large_store_opens_and_pages_like_a_tiny_one(
    demo_file: Path, large_file: Path
) -> None:
    await measure(demo_file, keys=0)  # warm-up: one-time imports and caches count for neither
    large_open, large_moves, pages = await measure(large_file)
    tiny_open, tiny_moves, _ = await measure(demo_file)
    print(
        f"\nfirst screen: tiny {tiny_open:.3f}s, {LARGE_COUNT:,} memories {large_open:.3f}s;"
        f" {PAGE_KEYS} page-downs ({pages} pages): tiny {tiny_moves:.3f}s,"
        f" large {large_moves:.3f}s (ratio {large_moves / tiny_moves:.2f})"
    )
    assert pages == 2
    assert large_open < RATIO * tiny_open
    assert large_moves < RATIO * tiny_moves
