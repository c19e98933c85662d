"""`memory-console copy SRC DST`: a whole store between the backends, verified, all or nothing."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memory_console.demo import build_demo
from memory_console.store import Store, copy
from memory_console.store.embeddings import write_vectors
from tests.helpers import NOW, invoke, one_error_line, server_rows

REPOSITORY = Path(__file__).resolve().parent.parent


def table_rows(target: str) -> dict[str, list[tuple[Any, ...]]]:
    """Every row a copy carries, per table, in key order, as the store's driver reads them."""
    with Store(target, read_only=True) as store:
        return store.read(
            lambda conn: {table: list(copy.read_rows(conn, table)) for table in copy.TABLES}
        )


def filled_store(path: Path) -> Path:
    """A demo store with a vector for some memories, a changed setting and its history."""
    build_demo(path, count=400, seed=3, now=NOW)
    rng = np.random.default_rng(5)
    with Store(path, actor="test") as store:
        vectors = rng.normal(size=(40, 384)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        write_vectors(
            store, "test-model", [(i + 1, f"h{i}", vectors[i].tobytes()) for i in range(40)]
        )
        store.set_setting("decay_enabled", False, actor="test")
        store.set_meta("clear_token_secret", "kept-secret")
    return path


def copied(source: str, target: str) -> dict[str, Any]:
    result = invoke(["copy", source, target, "--json"])
    assert result.code == 0, result.err
    return dict(json.loads(result.out))


def test_round_trip_sqlite_postgresql_sqlite_keeps_every_row(tmp_path: Path, pg_url: str) -> None:
    source = filled_store(tmp_path / "source.db")
    back = tmp_path / "back.db"
    there = copied(str(source), pg_url)
    again = copied(pg_url, str(back))
    assert there["hash"] == again["hash"]
    assert there["counts"] == again["counts"]
    assert there["counts"]["memory"] == 400 and there["counts"]["embedding"] == 40
    original = table_rows(str(source))
    assert table_rows(pg_url) == original
    assert table_rows(str(back)) == original
    # pgvector's column holds every vector; the sequences continue past the copied ids.
    assert server_rows(pg_url, "SELECT count(*) FROM embedding WHERE embedding IS NULL") == [(0,)]
    # The keyword entries and the distinct vectors came with the rows, by their triggers,
    # and every check holds (the indexes built after the rows).
    assert server_rows(pg_url, "SELECT count(*) FROM memory_search") == [(400,)]
    assert server_rows(pg_url, "SELECT count(*) FROM embedding_vector") == [(40,)]
    checked = invoke(["check", "--db", pg_url])
    assert checked.code == 0, checked.out
    with Store(pg_url, actor="test") as store:
        assert store.add({"content": "after the copy"}) == 401
        assert store.meta("store_id") != Store(str(source)).meta("store_id")
        assert store.meta("clear_token_secret") == "kept-secret"
        assert store.settings().decay_enabled is False


def answers(target: str, *, search: bool = True) -> list[str]:
    """What list, show, stats, config and (with `search`) a keyword search print."""
    outputs = []
    for argv in (
        ["list", "--json", "--limit", "50", "--sort", "confidence", "--desc"],
        ["list", "--json", "--owner", "alice", "--text", "dark mode"],
        ["show", "7", "--json"],
        ["stats", "--json"],
        ["config", "--json"],
        *([["search", "dark mode", "--mode", "keyword", "--json"]] if search else []),
    ):
        result = invoke([*argv, "--db", target, "--now", "2026-11-20T00:00:00Z"])
        assert result.code == 0, result.err
        outputs.append(result.out.replace(target, "STORE"))
    return outputs


def test_the_copies_answer_as_the_source(tmp_path: Path, pg_url: str) -> None:
    source = str(filled_store(tmp_path / "source.db"))
    back = str(tmp_path / "back.db")
    copied(source, pg_url)
    copied(pg_url, back)
    # Keyword ranking is each database's own (FTS5's bm25, ts_rank): searches are compared
    # between the two files, the rest on all three.
    assert answers(pg_url, search=False) == answers(source, search=False)
    assert answers(back) == answers(source)


def test_a_copy_within_one_backend(tmp_path: Path, db: str, pg_server: Any) -> None:
    source = filled_store(tmp_path / "source.db")
    first = copied(str(source), db)
    second_target = str(tmp_path / "second.db")
    second = copied(db, second_target)
    assert first["hash"] == second["hash"]
    assert table_rows(second_target) == table_rows(str(source))


def test_a_non_empty_destination_is_refused_and_unchanged(tmp_path: Path, db: str) -> None:
    source = filled_store(tmp_path / "source.db")
    with Store(db, actor="test") as store:
        store.add({"content": "already here"})
    before = table_rows(db)
    error = one_error_line(invoke(["copy", str(source), db]))
    assert "not empty" in error
    assert table_rows(db) == before


def test_an_empty_store_takes_a_copy(tmp_path: Path, db: str) -> None:
    source = filled_store(tmp_path / "source.db")
    if db.startswith("postgresql"):
        Store(db).close()  # an empty store, made by a first open
    else:
        Path(db).touch()  # an empty file
    copied(str(source), db)
    assert table_rows(db) == table_rows(str(source))


def test_a_row_the_destination_refuses_leaves_it_as_it_was(tmp_path: Path, pg_url: str) -> None:
    source = filled_store(tmp_path / "source.db")
    with sqlite3.connect(source) as conn:  # SQLite keeps text in an integer column
        conn.execute("UPDATE memory SET retrieval_count = 'many' WHERE id = 399")
    error = one_error_line(invoke(["copy", str(source), pg_url]))
    assert "nothing was written" in error or "invalid input syntax" in error
    assert server_rows(
        pg_url, "SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public'"
    ) == [(0,)]


def killed_while(argv: list[str], started: Any) -> None:
    """Run `memory-console ARGV` and SIGKILL it as soon as `started()` holds."""
    env = {**os.environ, "PYTHONPATH": str(REPOSITORY)}
    child = subprocess.Popen(
        [sys.executable, "-m", "memory_console", *argv],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while not started() and child.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    assert child.poll() is None, "the copy ended before it could be killed"
    os.kill(child.pid, signal.SIGKILL)
    child.wait()


@pytest.fixture(scope="module")
def big_source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store large enough that a copy of it is still running when it is killed."""
    path = tmp_path_factory.mktemp("big") / "big.db"
    build_demo(path, count=60_000, seed=4, now=NOW)
    return path


def test_a_killed_copy_into_a_file_leaves_no_store(tmp_path: Path, big_source: Path) -> None:
    target = tmp_path / "copy.db"
    killed_while(
        ["copy", str(big_source), str(target)],
        lambda: any(tmp_path.glob(".copy.db.building-*")),
    )
    assert not target.exists()
    # What a crash leaves is the private file only, which no store opens.
    result = invoke(["copy", str(big_source), str(target)])
    assert result.code == 0, result.err


def test_a_killed_copy_into_postgresql_leaves_the_database_empty(
    big_source: Path, pg_url: str
) -> None:
    def copying() -> bool:
        return bool(
            server_rows(
                pg_url,
                "SELECT 1 FROM pg_stat_activity WHERE application_name = 'memory-console' "
                "AND query LIKE 'COPY memory_event%'",
            )
        )

    killed_while(["copy", str(big_source), pg_url], copying)
    deadline = time.monotonic() + 30  # the server notices the lost client, then rolls back
    while time.monotonic() < deadline and copying():
        time.sleep(0.05)
    assert server_rows(
        pg_url, "SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public'"
    ) == [(0,)]


def test_copy_through_the_entry_point(tmp_path: Path, pg_url: str) -> None:
    source = filled_store(tmp_path / "source.db")
    env = {**os.environ, "PYTHONPATH": str(REPOSITORY)}
    done = subprocess.run(
        [sys.executable, "-m", "memory_console", "copy", str(source), pg_url],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith(f"copied {source} to postgresql://")
    assert any(line.split() == ["memory", "400"] for line in lines)
    digest = lines[-1].rsplit(" ", 1)[-1]
    with Store(pg_url, read_only=True) as store:
        assert store.count() == 400
    assert copied(pg_url, str(tmp_path / "back.db"))["hash"] == digest
    help_text = subprocess.run(
        [sys.executable, "-m", "memory_console", "--help"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout
    assert "copy" in help_text


def test_the_demo_builds_into_postgresql_as_into_a_file(tmp_path: Path, pg_url: str) -> None:
    file = tmp_path / "demo.db"
    for target in (str(file), pg_url):
        result = invoke(["demo", "--db", target, "--count", "300", "--now", "2026-11-20"])
        assert result.code == 0, result.err
    assert table_rows(pg_url)["memory"] == table_rows(str(file))["memory"]
    assert table_rows(pg_url)["memory_event"] == table_rows(str(file))["memory_event"]
    error = one_error_line(invoke(["demo", "--db", pg_url, "--count", "10"]))
    assert "not empty" in error
    with Store(pg_url, actor="test") as store:
        assert store.add({"content": "one more"}) == 301
