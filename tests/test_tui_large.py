"""A 100,000-memory store opens and pages a page at a time (keyset paging, no full load).

How long that takes against a tiny store is measured by benchmarks/bench_console_paging.py,
not asserted here: wall-clock ratios depend on the machine's load.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from memory_console.demo import DemoReport
from memory_console.store import Store
from tests.helpers import console, settle

LARGE_COUNT = 100_000
SIZE = (120, 36)
PAGE_SIZE = 50
PAGE_KEYS = 8  # page-downs: a screenful each; at 36 rows this crosses two 50-row pages


@pytest.fixture(scope="session")
def large_file(large_demo: DemoReport) -> Path:
    assert large_demo.memories == LARGE_COUNT
    return large_demo.path


@pytest.mark.slow
async def test_a_large_store_opens_and_pages_one_page_at_a_time(large_file: Path) -> None:
    with Store(large_file, read_only=True, actor="tui") as store:
        app = console(store, page_size=PAGE_SIZE)
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            screen: Any = app.screen
            first_page = screen.page
            assert 0 < len(screen.table.records) <= PAGE_SIZE  # one page, not the store
            for _ in range(PAGE_KEYS):
                # Each page-down settles before the next: under load a key pressed while the
                # next page is still being read could land before it, and the count below
                # is of pages read, one at a time.
                await pilot.press("pagedown")
                await settle(pilot)
            assert screen.page is not first_page
            assert screen.page.number - 1 == 2
            assert 0 < len(screen.table.records) <= PAGE_SIZE
            assert screen.table.current is not None
