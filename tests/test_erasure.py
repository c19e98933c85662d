"""Erasure: a purge leaves no byte of the erased text in the store's files, takes in what
consolidation linked, keeps one audit row without text, and is undone only by its file."""

from __future__ import annotations

import contextlib
import json
import shlex
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

import pytest

from memory_console.api import MemoryAPI
from memory_console.demo import build_demo
from memory_console.store import MemoryFilter, Store
from memory_console.tui.screens.story import StoryScreen
from tests.helpers import (
    ISO_NOW,
    NOW,
    SNAPSHOT_COLUMNS,
    console,
    db_rows,
    invoke,
    open_on,
    scan_pg_files,
    scan_store_files,
    settle,
)

if TYPE_CHECKING:
    from memory_console.embed.embedder import Embedder

SUBJECT = "quentinvdz"  # the owner whose memories are erased
TOKENS = [
    "QX7781234",
    "Zanzibarstraat",
    "Quokkafeather",
    "Marzipanvault",
    "Xylophonequeue",  # only ever in a query
    SUBJECT,
]
QUERY = "passport QX7781234 Xylophonequeue"  # recalled on the subject and on another owner
SUBJECT_MEMORIES = [
    {
        "title": "Passport details",
        "content": "The user passport is QX7781234 kept at Zanzibarstraat 12",
        "keywords": ["passport", "documents"],
    },
    {
        "title": "Quokkafeather travel plan",
        "content": "Flight to Lisbon booked for May, window seat",
        "keywords": ["Marzipanvault", "travel"],
    },
    {
        "title": "Spare key",
        "content": "The spare key is under the mat at Zanzibarstraat 12",
        "keywords": ["home"],
    },
]
# Another owner's memory that the same query recalls (its logged query must be redacted).
BYSTANDER = {"owner": "alice", "title": "Passport renewal", "content": "Alice renews her passport"}
SIZE = (120, 36)
# A child that opens the store and stays idle, or holds a read transaction, until told.
HOLDER = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
if sys.argv[2] == "read":
    conn.execute("BEGIN")
    conn.execute("SELECT count(*) FROM memory").fetchone()
else:
    conn.execute("SELECT count(*) FROM memory").fetchone()
print("ready", flush=True)
sys.stdin.readline()
"""


@pytest.fixture(scope="module")
def demo_20k(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("erasure-demo") / "demo.db"
    build_demo(path, count=20_000, seed=7, now=NOW)
    return path


@pytest.fixture
def demo(demo_20k: Path, tmp_path: Path) -> Path:
    path = tmp_path / "store" / "memories.db"
    path.parent.mkdir()
    shutil.copy(demo_20k, path)
    return path


# The tables a purge erases from, whose files a PostgreSQL scan reads.
ERASED_TABLES = ("memory", "memory_event", "embedding")
FILLER = 300  # other people's memories in a PostgreSQL store (the demo cannot build one)


@pytest.fixture(scope="module")
def filler_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small demo store's memories with their history, as export writes them."""
    folder = tmp_path_factory.mktemp("erasure-filler")
    build_demo(folder / "demo.db", count=FILLER, seed=7, now=NOW)
    out = folder / "filler.jsonl"
    argv = ["export", "--all", "--history", "--reveal", "--out", str(out)]
    made = invoke([*argv, "--db", str(folder / "demo.db")])
    assert made.code == 0, made
    return out


@pytest.fixture
def filled(backend: str, request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A store of other people's memories on the test's backend: a copy of the 20,000-memory
    demo (SQLite), or the small demo imported into a new PostgreSQL database."""
    if backend == "sqlite":
        return str(request.getfixturevalue("demo"))
    url = str(request.getfixturevalue("pg_url"))
    source = request.getfixturevalue("filler_file")
    made = invoke(["import", str(source), "--db", url, "--allow-secrets", "--allow-health"])
    assert made.code == 0, made
    return url


@contextlib.contextmanager
def holder(path: Path, mode: str) -> Iterator[None]:
    """Another process with the store open: idle, or holding a read transaction."""
    child = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(path), mode],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None and child.stdin is not None
    try:
        assert child.stdout.readline().strip() == "ready"
        yield
    finally:
        child.stdin.write("\n")
        child.stdin.close()
        child.wait(timeout=30)


def import_memories(
    db: Path | str, folder: Path, memories: list[dict[str, Any]], *flags: str
) -> list[int]:
    """Import memories through the CLI; returns their new ids."""
    source = folder / "incoming.jsonl"
    source.write_text("".join(json.dumps(m) + "\n" for m in memories))
    result = invoke(["import", str(source), "--db", str(db), "--now", ISO_NOW, *flags])
    assert result.code == 0, result
    source.unlink()
    with Store(db, read_only=True) as store:
        return sorted(int(i) for i in store.ids_matching(MemoryFilter(owner=memories[0]["owner"])))


def add_subject(db: Path | str, folder: Path) -> list[int]:
    """The subject's memories, recalled, shown, searched and consolidated; returns every id
    the subject has (the consolidated memory last)."""
    ids = import_memories(db, folder, [{"owner": SUBJECT, **m} for m in SUBJECT_MEMORIES])
    import_memories(db, folder, [BYSTANDER])
    for owner, queries in ((SUBJECT, [QUERY, "Zanzibarstraat spare key"]), ("alice", [QUERY])):
        api = MemoryAPI(db, owner=owner, semantic=False)
        try:
            for minute, query in enumerate(queries):
                assert api.recall(query, now=NOW + 60 * minute)
        finally:
            api.close()
    for ident in ids:
        assert invoke(["show", str(ident), "--db", str(db), "--now", ISO_NOW]).code == 0
    assert invoke(["search", "QX7781234", "--db", str(db), "--now", ISO_NOW]).code == 0
    with Store(db, actor="test") as store:
        merged = store.add(
            {
                "owner": SUBJECT,
                "title": "Passport and key",
                "content": "Passport QX7781234; spare key at Zanzibarstraat 12",
                "created_at": NOW,
            },
            now=NOW,
        )
        members = [ids[0], ids[2]]
        store.change_fields(
            members, {"status": "consolidated", "consolidated_into": merged}, "consolidated"
        )
    return [*ids, merged]


def others(db: Path | str) -> tuple[dict[int, Any], list[tuple[Any, ...]]]:
    """Every other owner's memories and their history, as the database holds them."""
    rows = db_rows(db, "SELECT * FROM memory WHERE owner != ? ORDER BY id", (SUBJECT,))
    events = db_rows(
        db,
        "SELECT e.* FROM memory_event AS e JOIN memory AS m ON m.id = e.memory_id "
        "WHERE m.owner != ? ORDER BY e.id",
        (SUBJECT,),
    )
    return {row[0]: row for row in rows}, events


def searches(db: Path | str) -> dict[str, list[int]]:
    with Store(db, read_only=True) as store:
        return {
            word: [ident for ident, _ in store.keyword_ranking(word, limit=50)]
            for word in ("passport", "coffee", "meeting", "python", "flight")
        }


def text_index_matches(db: Path) -> None:
    """The full-text index holds exactly the memories' text (every memory still found)."""
    with sqlite3.connect(db) as conn:
        conn.execute("INSERT INTO memory_fts(memory_fts, rank) VALUES ('integrity-check', 1)")
    conn.close()


# -- no trace -------------------------------------------------------------------------------


async def test_a_purge_leaves_no_trace_and_every_other_memory_as_it_was(
    demo: Path, tmp_path: Path
) -> None:
    subject = add_subject(demo, tmp_path)
    with Store(demo, actor="tui") as store:
        app = console(store)
        async with app.run_test(size=SIZE) as pilot:
            await open_on(app, pilot, subject[:1])
            await pilot.press("enter")
            await settle(pilot)
            assert isinstance(app.screen, StoryScreen)
    assert scan_store_files(demo, TOKENS)  # the tokens are there to be found
    rows_before, events_before = others(demo)
    found_before = searches(demo)
    out = tmp_path / "erased.jsonl"
    with holder(demo, "idle"), Store(demo, actor="cli") as store:
        result = store.purge(subject, out, now=NOW, selection="owner")
        erasures = store.erasures()
    assert sorted(result.changed) == sorted(subject) and not result.missing
    assert result.wal is None, result.wal
    assert result.scope.held["memory"] == len(subject)
    assert result.scope.held["accessed"] >= 3 and result.scope.held["memory_fts"] == len(subject)
    assert result.scope.held["queries_elsewhere"] >= 1
    assert set(result.after.values()) == {0}
    assert scan_store_files(demo, TOKENS) == {}
    # The audit row says that it happened, never what.
    (record,) = erasures
    assert (record.id, record.memories, record.actor) == (result.erasure_id, len(subject), "cli")
    assert record.selection == "owner" and record.purge_file == str(out)
    # Every other memory, its history and the search results are as they were, but for the
    # query the subject's recall shared with alice's memory, redacted there.
    rows_after, events_after = others(demo)
    assert rows_after == rows_before
    redacted = [b for b, a in zip(events_before, events_after, strict=True) if a != b]
    assert redacted and {e[8] for e in redacted} == {QUERY}
    for event in redacted:
        after = events_after[events_before.index(event)]
        assert after[8] == "[redacted]" and json.loads(after[9])["matched"] == []
    text_index_matches(demo)
    gone = set(subject)
    assert searches(demo) == {
        word: [i for i in ids if i not in gone] for word, ids in found_before.items()
    }


def test_a_purge_on_postgresql_leaves_no_byte_in_the_table_and_index_files(
    pg_url: str, filler_file: Path, tmp_path: Path, embedder: Embedder
) -> None:
    """The test above on PostgreSQL: VACUUM FULL rewrote the tables and their indexes (the
    B-trees, the GIN index of the tsvector, pgvector's HNSW) without the erased rows."""
    made = invoke(["import", str(filler_file), "--db", pg_url, "--allow-secrets", "--allow-health"])
    assert made.code == 0, made
    subject = add_subject(pg_url, tmp_path)
    with MemoryAPI(pg_url, owner=SUBJECT, embedder=embedder) as api:
        remembered = api.remember("I keep my Marzipanvault diary in the attic", now=NOW)
        api.recall("Marzipanvault diary", now=NOW)
    assert remembered.id is not None
    subject.append(remembered.id)
    vectors = "SELECT count(*) FROM embedding WHERE embedding IS NOT NULL AND memory_id = ANY(?)"
    ((embedded,),) = db_rows(pg_url, vectors, (subject,))
    assert embedded >= 1  # pgvector's column too
    assert scan_pg_files(pg_url, TOKENS, ERASED_TABLES)  # the tokens are there to be found
    rows_before, events_before = others(pg_url)
    found_before = searches(pg_url)
    out = tmp_path / "erased.jsonl"
    with Store(pg_url, actor="cli") as store:
        result = store.purge(subject, out, now=NOW, selection="owner")
        erasures = store.erasures()
    assert sorted(result.changed) == sorted(subject) and not result.missing
    assert result.tables is None, result.tables
    assert result.wal is not None and "write-ahead log still holds" in result.wal
    assert "CHECKPOINT was refused" not in result.wal  # the tests' role is a superuser
    assert result.scope.held["memory"] == len(subject) == result.scope.held["memory_fts"]
    assert result.scope.held["embedding"] == embedded and result.scope.held["accessed"] >= 3
    assert result.scope.held["queries_elsewhere"] >= 1
    assert set(result.after.values()) == {0}
    assert scan_pg_files(pg_url, TOKENS, ERASED_TABLES) == {}
    left = "SELECT count(*) FROM embedding WHERE memory_id = ANY(?)"
    assert db_rows(pg_url, left, (subject,)) == [(0,)]
    (record,) = erasures
    assert (record.id, record.memories, record.actor) == (result.erasure_id, len(subject), "cli")
    assert record.selection == "owner" and record.purge_file == str(out)
    rows_after, events_after = others(pg_url)
    assert rows_after == rows_before
    redacted = [b for b, a in zip(events_before, events_after, strict=True) if a != b]
    assert redacted and {e[8] for e in redacted} == {QUERY}
    gone = set(subject)
    assert searches(pg_url) == {
        word: [i for i in ids if i not in gone] for word, ids in found_before.items()
    }


def test_a_snapshot_older_than_the_erasure_is_waited_for_then_named(
    pg_url: str, tmp_path: Path
) -> None:
    """VACUUM may not remove rows an older snapshot can still see: the purge waits for it,
    then says what remains and the statement that removes it, which does."""
    import psycopg

    subject = add_subject(pg_url, tmp_path)
    with psycopg.connect(pg_url, autocommit=True) as reader:
        reader.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
        assert reader.execute("SELECT count(*) FROM memory").fetchone() == (len(subject) + 1,)
        with Store(pg_url) as store:
            result = store.purge(subject, tmp_path / "erased.jsonl", wal_wait=0.3)
        assert result.tables is not None and "still read the store as it was" in result.tables
        # The reader still sees every erased memory: that is why they stay.
        assert reader.execute("SELECT count(*) FROM memory").fetchone() == (len(subject) + 1,)
        reader.execute("COMMIT")
    assert scan_pg_files(pg_url, TOKENS, ERASED_TABLES)
    statement = result.tables.rsplit("runs: ", 1)[1]
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(statement)
    assert scan_pg_files(pg_url, TOKENS, ERASED_TABLES) == {}


def test_a_role_that_may_not_vacuum_or_checkpoint_erases_and_is_told(
    pg_url: str, tmp_path: Path
) -> None:
    """A fleet's agent role holds SELECT, INSERT, UPDATE and DELETE only: the purge is
    committed and the result names what the role may not do and what its owner runs."""
    import psycopg

    subject = add_subject(pg_url, tmp_path)
    role = f"mc_agent_{urlsplit(pg_url).path.lstrip('/')}"
    with psycopg.connect(pg_url, autocommit=True) as admin:
        admin.execute(f"CREATE ROLE {role} LOGIN PASSWORD 'agent-secret'")
        admin.execute(
            f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {role}"
        )
        admin.execute(f"GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO {role}")
    parts = urlsplit(pg_url)
    as_agent = urlunsplit(
        (parts.scheme, f"{role}:agent-secret@{parts.netloc.rsplit('@', 1)[-1]}", *parts[2:])
    )
    try:
        result = invoke(
            ["purge", *map(str, subject), "--db", as_agent, "--out", str(tmp_path / "e.jsonl")]
            + ["--json"]
        )
        assert result.code == 0, result
        data = json.loads(result.out)
        assert sorted(data["purged"]) == sorted(subject)
        assert (
            f"the role {role} may not VACUUM embedding, embedding_vector, memory, memory_event, "
            "memory_search" in data["tables"]
        )
        assert data["tables"].endswith(
            "VACUUM (FULL, ANALYZE) memory, memory_search, memory_event, embedding, "
            "embedding_vector"
        )
        assert f"CHECKPOINT was refused to the role {role}" in data["wal"]
        assert "agent-secret" not in result.out + result.err
        restore = shlex.split(data["restore"])
        assert restore[restore.index("--db") + 1] == as_agent.replace(":agent-secret@", "@")
        assert db_rows(pg_url, "SELECT count(*) FROM memory WHERE owner = ?", (SUBJECT,)) == [(0,)]
        assert db_rows(pg_url, "SELECT memories FROM erasure") == [(len(subject),)]
        assert scan_pg_files(pg_url, TOKENS, ERASED_TABLES)  # until an owner vacuums
    finally:
        with psycopg.connect(pg_url, autocommit=True) as admin:
            admin.execute(f"DROP OWNED BY {role}")
            admin.execute(f"DROP ROLE {role}")


def test_the_wal_note_says_what_remains_while_another_process_reads(
    demo: Path, tmp_path: Path
) -> None:
    subject = add_subject(demo, tmp_path)
    with holder(demo, "read"), Store(demo) as store:
        result = store.purge(subject, tmp_path / "erased.jsonl", wal_wait=0.3)
        assert result.wal is not None and "another process is reading" in result.wal
    # The reader gone and the last connection closed, SQLite checkpoints and deletes the WAL.
    Store(demo).close()
    assert scan_store_files(demo, TOKENS) == {}


# -- scope --------------------------------------------------------------------------------


def test_the_scope_takes_in_what_consolidation_linked(filled: str, tmp_path: Path) -> None:
    passport, plan, key, merged = add_subject(filled, tmp_path)
    with Store(filled) as store:
        count = store.count()
        store.restore([key])  # the link now lives only in the `consolidated` event
        scope = store.erasure_scope([plan, passport, 999_999])
        assert (scope.selected, scope.missing) == ([plan, passport], [999_999])
        assert [(j.id, j.via, j.why) for j in scope.joined] == [
            (merged, passport, f"absorbed #{passport}"),
            (key, merged, f"consolidated into #{merged}"),
        ]
        assert scope.ids == [plan, passport, merged, key]
        assert store.count() == count  # reading the scope wrote nothing
        result = store.purge([passport], tmp_path / "erased.jsonl")
        assert result.changed == [passport, merged, key]
        assert store.get(plan) is not None


def test_migration_backups_are_named_with_what_they_hold(tmp_path: Path) -> None:
    db = tmp_path / "memories.db"
    with Store(db) as store:
        first = store.add({"content": "The user passport is QX7781234", "created_at": NOW})
    conn = sqlite3.connect(db)
    conn.execute("DROP TABLE erasure")
    conn.execute("PRAGMA user_version = 3")
    conn.close()
    with Store(db) as store:  # migrates, leaving a backup beside the store
        backup = store.migration_backup
        assert backup is not None and backup.name == "memories.db.schema3.bak"
        scope = store.erasure_scope([first])
        assert scope.backups == [backup] and scope.backup_memories == {backup: 1}
        store.purge([first], tmp_path / "erased.jsonl")
    assert list(scan_store_files(db, TOKENS)) == [backup.name]


# -- undo -----------------------------------------------------------------------------------


def test_importing_the_purge_file_restores_the_memories_whole(filled: str, tmp_path: Path) -> None:
    subject = add_subject(filled, tmp_path)
    secret = import_memories(
        filled,
        tmp_path,
        [{"owner": "zoe", "content": "My password = hunter2 for the router"}],
        "--allow-secrets",
    )
    erased = [*subject, *secret]

    def held() -> tuple[list[Any], list[Any]]:
        marks = ",".join("?" * len(erased))
        listed = f"SELECT {SNAPSHOT_COLUMNS} FROM memory WHERE id IN ({marks}) ORDER BY id"
        rows = db_rows(filled, listed, erased)
        events = db_rows(
            filled,
            "SELECT memory_id, at, actor, kind, before, after, run_id, query, scores "
            f"FROM memory_event WHERE memory_id IN ({marks}) ORDER BY memory_id, at, id",
            erased,
        )
        return rows, events

    before = held()
    out = tmp_path / "erased.jsonl"
    with Store(filled) as store:
        store.purge(erased, out)
    assert held() == ([], [])
    restore = ["import", str(out), "--allow-secrets", "--allow-health", "--db", filled]
    result = invoke(restore)
    assert result.code == 0, result
    assert alike(held()) == alike(before)


def alike(rows: tuple[list[Any], list[Any]]) -> list[list[Any]]:
    """Rows as values: JSON text parsed (an import writes it with other spacing) and times
    to the microsecond (the file's ISO 8601 precision)."""

    def value(cell: Any) -> Any:
        if isinstance(cell, float):
            return round(cell, 6)
        if isinstance(cell, str) and cell[:1] in "[{":
            return json.loads(cell)
        return cell

    return [[[value(cell) for cell in row] for row in table] for table in rows]
