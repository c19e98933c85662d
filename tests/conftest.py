"""Shared fixtures: every test runs with its own config and data directories; stores to test on."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from memory_console.ingest.demo import DemoReport, build_demo
from memory_console.store import Store
from tests.helpers import DEMO_COUNT, DEMO_SEED, NOW

if TYPE_CHECKING:
    from memory_console.api import MemoryAPI
    from memory_console.embed.embedder import Embedder


@pytest.fixture(scope="session", autouse=True)
def model_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The rewritten embedding model is kept in a cache directory: the tests (and the
    processes they start, which inherit the variables) use one of their own, not the user's,
    kept with pytest's other temporary directories. Kernels are not measured (a test of
    something else would spend seconds on it, and its choice would vary by machine): the
    defaults run, and tests/test_calibration.py turns measuring on where it tests it."""
    folder = tmp_path_factory.mktemp("model-cache")
    os.environ["MEMORY_CONSOLE_CACHE_DIR"] = str(folder)
    os.environ["MEMORY_CONSOLE_CALIBRATE"] = "0"
    return folder


@pytest.fixture(autouse=True)
def isolated_dirs(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Keep the developer's own config, data directory and store out of every test."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("MEMORY_CONSOLE_CONFIG_DIR", str(home / "config"))
    monkeypatch.setenv("MEMORY_CONSOLE_DATA_DIR", str(home / "data"))
    for name in ("MEMORY_CONSOLE_DB", "MEMORY_CONSOLE_READ_ONLY", "MEMORY_CONSOLE_THEME"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "memories.db"


@pytest.fixture
def store(db_path: Path) -> Iterator[Store]:
    with Store(db_path, actor="test") as opened:
        yield opened


@pytest.fixture(scope="session")
def embedder() -> Embedder:
    """The real embedder, loaded once for the whole run (a module may load its own)."""
    from memory_console.embed.embedder import Embedder

    return Embedder.load()


@pytest.fixture
def api(db_path: Path, embedder: Embedder) -> Iterator[MemoryAPI]:
    """The agent API on a fresh store for owner alice, with semantic search."""
    from memory_console.api import MemoryAPI

    with MemoryAPI(db_path, owner="alice", embedder=embedder) as opened:
        yield opened


@pytest.fixture(scope="session")
def large_demo(tmp_path_factory: pytest.TempPathFactory) -> DemoReport:
    """A 100,000-memory demo store built once per run; tests only read it."""
    path = tmp_path_factory.mktemp("large-demo") / "large.db"
    return build_demo(path, count=100_000, seed=11, now=NOW)


@pytest.fixture(scope="session")
def demo_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small demo store for the console tests, built once; tests work on copies of it."""
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
