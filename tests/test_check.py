"""`memory-console check` on healthy and damaged stores, the one sentence a damaged store gets
from the CLI and the console, and the exit code of a console that crashed."""

from __future__ import annotations

import hashlib
import json
import os
import pty
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from memory_console.cli import main
from memory_console.demo import build_demo
from memory_console.store import Store
from memory_console.store.ddl import FTS_TRIGGERS
from memory_console.store.errors import StoreDamaged
from memory_console.store.postgres import shown_url
from tests.helpers import NOW, console, db_rows, invoke, notes, settle

if TYPE_CHECKING:
    from memory_console.embed.embedder import Embedder

CHECK_NAMES = ["header", "schema", "integrity", "text_index", "events", "vectors"]  # both backends
ROOT = Path(__file__).resolve().parent.parent


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def demo(tmp_path: Path) -> Path:
    path = tmp_path / "demo.db"
    build_demo(path, count=60, seed=3, now=NOW)
    return path


def overwrite_page(path: Path, name: str, data: bytes, offset: int = 0) -> None:
    """Write `data` into the root page of table or index `name` (no connection is open)."""
    with sqlite3.connect(path) as conn:
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
        (root,) = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = ?", (name,))
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    with path.open("r+b") as handle:
        handle.seek((root[0] - 1) * page_size + offset)
        handle.write(data)


def checks_of(capsys: pytest.CaptureFixture[str], path: Path, *extra: str) -> dict[str, Any]:
    code, out, _ = run(capsys, "check", "--db", str(path), "--json", *extra)
    report: dict[str, Any] = json.loads(out)
    assert code == (0 if report["ok"] else 1)
    return {check["name"]: check for check in report["checks"]}


@pytest.fixture
def pg_demo(pg_url: str, tmp_path: Path, embedder: Embedder) -> str:
    """The demo's memories and history imported into a new PostgreSQL store, and two memories
    remembered through the agent API (their vectors in pgvector's column)."""
    from memory_console.api import MemoryAPI

    build_demo(tmp_path / "source.db", count=60, seed=3, now=NOW)
    out = tmp_path / "demo.jsonl"
    argv = ["export", "--all", "--history", "--reveal", "--out", str(out)]
    assert invoke([*argv, "--db", str(tmp_path / "source.db")]).code == 0
    made = invoke(["import", str(out), "--db", pg_url, "--allow-secrets", "--allow-health"])
    assert made.code == 0, made
    with MemoryAPI(pg_url, owner="alice", embedder=embedder) as api:
        for text in ("I take the night train to Vienna", "My sister lives in Porto"):
            assert api.remember(text, now=NOW).action == "stored"
    assert db_rows(pg_url, "SELECT count(*) FROM embedding WHERE embedding IS NOT NULL")[0][0]
    return pg_url


def state(db: str) -> list[Any]:
    """What a store holds, to show that check changed nothing: an SQLite file's bytes, a
    PostgreSQL store's rows."""
    if not db.startswith("postgresql://"):
        return [hashlib.sha256(Path(db).read_bytes()).hexdigest()]
    return [
        db_rows(db, f"SELECT * FROM {table} ORDER BY 1")
        for table in ("memory", "memory_event", "embedding", "console_meta")
    ]


def test_a_healthy_store_passes_every_check(
    backend: str, request: pytest.FixtureRequest, capsys: pytest.CaptureFixture[str]
) -> None:
    demo = str(request.getfixturevalue("demo" if backend == "sqlite" else "pg_demo"))
    before = state(demo)
    code, out, err = run(capsys, "check", "--db", demo)
    assert code == 0 and err == ""
    assert state(demo) == before, "check writes nothing"
    # PostgreSQL has no integrity check without amcheck, which the test server lacks.
    skipped = {"integrity"} if backend == "postgresql" else set()
    assert [line.split()[:2] for line in out.splitlines() if not line.startswith(" ")] == [
        ["skipped" if n in skipped else "ok", n] for n in CHECK_NAMES
    ]
    code, out, _ = run(capsys, "check", "--db", demo, "--json")
    report = json.loads(out)
    assert code == 0 and report["ok"] is True and report["db"] == shown_url(demo)
    assert [c["name"] for c in report["checks"]] == CHECK_NAMES
    for check in report["checks"]:
        assert check == {
            "name": check["name"],
            "ok": True,
            "problems": [],
            "count": 0,
            "skipped": check["skipped"] if check["name"] in skipped else None,
        }
        if check["name"] in skipped:
            assert "CREATE EXTENSION amcheck" in check["skipped"]


def test_a_damaged_postgresql_store_is_reported_and_left_as_it_is(
    pg_demo: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Damage written past the Store with a raw connection: dropped indexes and a column, an
    index left invalid, events and a vector of a memory that is gone, pgvector's column
    emptied or disagreeing with the bytes. check names each and repairs none."""
    import psycopg

    from memory_console.store.postgres.dialect import vector_literal

    ((first, second),) = db_rows(pg_demo, "SELECT min(memory_id), max(memory_id) FROM embedding")
    with psycopg.connect(pg_demo, autocommit=True) as conn:
        for index in ("ix_memory_search", "ix_embedding_vector_hnsw", "ix_memory_owner"):
            conn.execute(f"DROP INDEX {index}")
        conn.execute("ALTER TABLE erasure DROP COLUMN selection")
        conn.execute(
            "UPDATE pg_index SET indisvalid = false WHERE indexrelid = 'ix_memory_topic'::regclass"
        )
        conn.execute(
            "INSERT INTO memory_event (memory_id, at, actor, kind) "
            "VALUES (9001, 1, 'x', 'accessed'), (9001, 2, 'x', 'accessed')"
        )
        import numpy as np

        vector = np.linspace(-1, 1, 384, dtype=np.float32).tobytes()
        conn.execute(
            "INSERT INTO embedding (memory_id, model_id, content_hash, vector, embedding) "
            "SELECT 9002, model_id, 'h', %s, %s::vector FROM embedding LIMIT 1",
            (vector, vector_literal(vector)),
        )
        conn.execute("UPDATE embedding SET embedding = NULL WHERE memory_id = %s", (first,))
        conn.execute(
            "UPDATE embedding SET embedding = %s::vector WHERE memory_id = %s",
            (vector_literal([0.5] * 384), second),
        )
        # The keyword index's table: an entry gone, one of other words, a trigger off.
        conn.execute("DELETE FROM memory_search WHERE memory_id = %s", (first,))
        conn.execute(
            "UPDATE memory_search SET search = to_tsvector('simple', 'elsewhere') "
            "WHERE memory_id = %s",
            (second,),
        )
        conn.execute("ALTER TABLE memory DISABLE TRIGGER memory_search_au")
    before = state(pg_demo)
    code, out, err = run(capsys, "check", "--db", pg_demo, "--json")
    report = json.loads(out)
    assert code == 1 and report["ok"] is False
    checks = {check["name"]: check for check in report["checks"]}
    assert checks["header"]["ok"] and checks["integrity"]["skipped"]
    assert checks["schema"]["problems"] == [
        "column erasure.selection is missing",
        "index ix_embedding_vector_hnsw on embedding_vector is missing",
        "index ix_memory_owner on memory is missing",
        "index ix_memory_search on memory_search is missing",
        "index ix_memory_topic is invalid: no query uses it; REINDEX INDEX ix_memory_topic",
    ]
    assert checks["text_index"]["problems"] == [
        "trigger memory_search_au on memory is missing or disabled: keyword search misses "
        "new, edited or erased memories",
        "1 memories have no entry in the keyword index: keyword search misses them",
        "1 keyword index entries differ from their memory's text: found by old words",
        "index ix_memory_search is missing: keyword search scans every memory",
    ]
    assert checks["events"]["problems"] == [
        "2 events of memory 9001, which is gone without a purge"
    ]
    assert checks["vectors"]["problems"] == [
        "a vector for memory 9002, which is gone",
        "1 vectors have no value in pgvector's column: semantic search skips them",
        "index ix_embedding_vector_hnsw is missing: semantic search scans every vector",
        "1 texts' vectors in the HNSW table differ from their memories' vectors",
        f"memory {second}: pgvector's column differs from its float32 bytes",
    ]
    assert "4 of 6 checks found problems (schema, text_index, events, vectors)" in err
    assert state(pg_demo) == before  # nothing repaired
    assert db_rows(pg_demo, "SELECT to_regclass('ix_memory_search')") == [(None,)]


def test_a_damaged_index_page_is_found(demo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    overwrite_page(demo, "ix_memory_owner", bytes(200), offset=8)
    code, out, err = run(capsys, "list", "--owner", "alice", "--db", str(demo))
    assert code == 0, "a damaged index can answer wrongly without an error: only check sees it"
    code, out, err = run(capsys, "check", "--db", str(demo))
    assert code == 1
    assert out.splitlines()[2].startswith("PROBLEM  integrity")
    assert "On tree page" in out
    assert err.count("\n") == 1 and "checks found problems (integrity)" in err
    integrity = checks_of(capsys, demo)["integrity"]
    assert not integrity["ok"] and integrity["count"] == len(integrity["problems"]) > 10


def test_dangling_events_and_vectors_are_found_but_purged_history_is_not(
    demo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with Store(demo) as store:
        with store.transaction() as conn:
            # A purge before schema 4 kept the memory's history, closed by a `purged` event.
            conn.execute("DELETE FROM memory WHERE id = 5")
            conn.execute(
                "INSERT INTO memory_event (memory_id, at, actor, kind) VALUES (5, 1, 'x', 'purged')"
            )
            conn.execute(
                "INSERT INTO memory_event (memory_id, at, actor, kind) "
                "VALUES (9001, 1, 'x', 'accessed'), (9001, 2, 'x', 'accessed')"
            )
            conn.execute(
                "INSERT INTO memory_event (memory_id, at, actor, kind, run_id) "
                "VALUES (1, 3, 'x', 'decayed', 777)"
            )
            conn.execute(
                "INSERT INTO embedding (memory_id, model_id, content_hash, vector) "
                "VALUES (9002, 'm', 'h', zeroblob(8)), (1, 'm', 'h', zeroblob(8)), "
                "(2, 'm', 'h', zeroblob(8)), (3, 'm', 'h', zeroblob(4))"
            )
    checks = checks_of(capsys, demo)
    assert checks["events"]["problems"] == [
        "2 events of memory 9001, which is gone without a purge",
        "1 events name maintenance run 777, which does not exist",
    ]
    assert checks["vectors"]["problems"] == [
        "a vector for memory 9002, which is gone",
        "1 vectors of model m have 4 bytes, not 8",
    ]
    assert [n for n, c in checks.items() if not c["ok"]] == ["events", "vectors"]


def test_a_text_index_out_of_step_is_found_on_a_writable_store(
    demo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with sqlite3.connect(demo, isolation_level=None) as conn:
        conn.execute("DROP TRIGGER memory_fts_au")
        conn.execute("UPDATE memory SET content = 'zebra quagga okapi' WHERE id = 3")
        conn.execute(FTS_TRIGGERS[2])
    conn.close()
    text_index = checks_of(capsys, demo)["text_index"]
    assert text_index["count"] == 1
    assert "does not match the memories" in text_index["problems"][0]
    assert "rebuild" in text_index["problems"][0]
    read_only = checks_of(capsys, demo, "--read-only")
    assert read_only["text_index"]["skipped"] and read_only["text_index"]["ok"]


def test_a_damaged_table_gets_one_sentence_naming_check(
    demo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    overwrite_page(demo, "memory", b"\x0d" + b"\xff" * 200)
    sentence = (
        f"memory-console: error: {demo}: the database is damaged (database disk image is "
        f"malformed); nothing was written; run `memory-console check --db {demo}` for details\n"
    )
    for command in (["list"], ["stats"], ["show", "3"], ["protect", "3"], ["export"]):
        code, out, err = run(capsys, *command, "--db", str(demo))
        assert (code, out, err) == (1, "", sentence), command
    checks = checks_of(capsys, demo)
    assert "malformed" in checks["integrity"]["problems"][0]


def test_the_store_raises_its_own_damage_error_on_reads_writes_and_opens(demo: Path) -> None:
    """A driver's exception never crosses the store's door: a damaged page read, written or
    met at open is a StoreDamaged, which carries the one sentence and the store's location."""
    with Store(demo, actor="cli") as store:
        overwrite_page(demo, "memory", b"\x0d" + b"\xff" * 200)
        for attempt in (
            lambda: store.get(3),
            lambda: store.get_many([3, 4]),
            lambda: store.existing_ids([1, 2, 3]),
            lambda: store.protect([3], now=NOW),
        ):
            with pytest.raises(StoreDamaged) as raised:
                attempt()
            assert str(raised.value.location) == str(demo)
            assert "the database is damaged" in str(raised.value)
            assert f"memory-console check --db {demo}" in str(raised.value)
    with sqlite3.connect(demo) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    with demo.open("r+b") as handle:  # the schema table: the store cannot even open
        handle.seek(100)
        handle.write(b"\x0d" + b"\xff" * 200)
    with pytest.raises(StoreDamaged):
        Store(demo, actor="cli")


def test_no_module_outside_the_store_handles_the_drivers_errors() -> None:
    """The console and the CLI learn of damage from StoreDamaged, never by inspecting sqlite3
    or psycopg exceptions themselves (the demo builder writes a new file of its own)."""
    import ast

    package = ROOT / "memory_console"
    crossing: list[str] = []
    for path in sorted(package.rglob("*.py")):
        relative = path.relative_to(package)
        if relative.parts[0] == "store" or relative == Path("demo/build.py"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""] + [f"{node.module}.{a.name}" for a in node.names]
            else:
                continue
            if any(
                n.split(".")[0] in {"sqlite3", "psycopg"} or n.endswith("is_damage") for n in names
            ):
                crossing.append(f"{relative}:{node.lineno}")
    assert crossing == []


def test_a_damaged_schema_is_refused_at_open_with_that_sentence(
    demo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with sqlite3.connect(demo) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    with demo.open("r+b") as handle:  # page 1 past the file header: the schema table
        handle.seek(100)
        handle.write(b"\x0d" + b"\xff" * 200)
    code, out, err = run(capsys, "stats", "--db", str(demo))
    assert code == 1 and out == ""
    assert "the database is damaged" in err and f"memory-console check --db {demo}" in err
    code, out, err = run(capsys, "check", "--db", str(demo), "--json")
    report = json.loads(out)
    assert code == 1 and [c["name"] for c in report["checks"]] == ["open"]
    assert "the database is damaged" in report["checks"][0]["problems"][0]


async def test_the_console_names_check_for_a_damaged_store(demo: Path) -> None:
    with Store(demo, actor="tui") as store:
        overwrite_page(demo, "memory", b"\x0d" + b"\xff" * 200)
        app = console(store)
        seen = notes(app)
        async with app.run_test(size=(120, 36)) as pilot:
            await settle(pilot)
    assert any(
        "the database is damaged" in note and f"memory-console check --db {demo}" in note
        for note in seen
    ), seen


CRASHING_CONSOLE = """
import sys
from memory_console.cli import main
from memory_console.tui.app import MemoryConsoleApp

def crash(self):
    raise RuntimeError("deliberate crash in on_mount")

MemoryConsoleApp.on_mount = crash
sys.exit(main(["--db", sys.argv[1]]))
"""


def test_a_console_that_crashes_exits_non_zero(demo: Path) -> None:
    primary, secondary = pty.openpty()
    env = dict(os.environ, PYTHONPATH=str(ROOT), TERM="xterm-256color")
    child = subprocess.Popen(
        [sys.executable, "-c", CRASHING_CONSOLE, str(demo)],
        stdin=secondary,
        stdout=secondary,
        stderr=secondary,
        cwd=ROOT,
        env=env,
    )
    os.close(secondary)
    shown = b""
    while True:
        try:
            chunk = os.read(primary, 65536)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        shown += chunk
    os.close(primary)
    assert child.wait(timeout=60) == 1
    text = shown.decode(errors="replace")
    assert "deliberate crash in on_mount" in text
    assert "memory-console: error: the console stopped on an unexpected error" in text
