"""Shared fixtures and helpers of the console tests (this module holds no tests)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.worker import WorkerFailed

from memory_console.settings import Settings
from memory_console.store import Store
from memory_console.tui.app import MemoryConsoleApp, make_app

NOW = 1_795_000_000.0  # the fixed `now` of every console test and snapshot
DEMO_COUNT = 300
DEMO_SEED = 7


@pytest.fixture(scope="session")
def demo_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small demo store, built once; tests work on copies of it."""
    from memory_console.ingest.demo import build_demo

    path = tmp_path_factory.mktemp("console-demo") / "demo.db"
    build_demo(path, count=DEMO_COUNT, seed=DEMO_SEED, now=NOW)
    return path


@pytest.fixture
def demo_store(demo_file: Path, tmp_path: Path) -> Iterator[Store]:
    """A fresh copy of the demo store, opened as the console opens it."""
    path = tmp_path / "memories.db"
    shutil.copy(demo_file, path)
    with Store(path, actor="tui") as store:
        yield store


PAGE_SIZE = 30  # enough rows to fill the test terminals, and cheap to redraw


def console(store: Store, **settings: Any) -> MemoryConsoleApp:
    """The app as the CLI builds it, at the fixed `now`, without the background embedder."""
    settings.setdefault("page_size", PAGE_SIZE)
    return make_app(Settings(db=store.path, **settings), store, now=NOW, semantic=False)


async def settle(pilot: Pilot[Any]) -> None:
    """Wait until every worker has finished and its messages have been handled."""
    app = pilot.app
    for _ in range(20):
        await pilot.pause()
        try:
            await app.workers.wait_for_complete()
        except WorkerFailed:
            pass  # the screens turn failures into notifications; tests check those
        await pilot.pause()
        if not any(worker.is_running for worker in app.workers):
            return
