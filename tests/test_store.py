"""The Store on both backends (real SQLite files, a real PostgreSQL): adding, paging,
searching, actions and their events, data_version; the file's own checks are SQLite's."""

from __future__ import annotations

import json
import os
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from memory_console.store import MemoryFilter, ReadOnlyError, Store, StoreError, ValidationError
from memory_console.store.db import APPLICATION_ID, SCHEMA_VERSION
from tests.helpers import NOW

DAY = 86400.0


@pytest.fixture
def store(backend_store: Store) -> Store:
    """These tests run on both backends (the SQLite-only ones say so)."""
    return backend_store


def sample(n: int, **fields: object) -> list[dict[str, object]]:
    topics = ["preferences", "contacts", "projects"]
    return [
        {
            "content": f"Memory number {i} about the iron farm"
            if i % 2
            else f"Note {i}: dark theme",
            "owner": "alice" if i % 3 else "bob",
            "topic": topics[i % 3],
            "memory_type": ["semantic", "episodic", "procedural"][i % 3],
            "confidence": round(0.1 + (i % 9) / 10, 2),
            "created_at": NOW - (i + 1) * DAY,
            **fields,
        }
        for i in range(n)
    ]


def test_daily_accesses_count_each_access_in_its_whole_day(store: Store) -> None:
    """The health screen's access chart: an access 0.7 days into a day is that day's, on
    PostgreSQL too (whose CAST to an integer rounds)."""
    from memory_console.store.readers import daily_accesses

    (ident,) = store.add_many(sample(1, created_at=NOW - 10 * DAY), now=NOW)
    for days_ago in (2.3, 2.2, 0.4):
        store.record_access([ident], now=NOW - days_ago * DAY)
    assert daily_accesses(store, NOW, 3) == [2, 0, 1]


# SQLite only: tests that take `db_path` check the file itself (its mode, PRAGMAs, header,
# damage); test_postgres.py checks what a PostgreSQL database is refused for.


def test_new_store_file_is_private_and_identified(db_path: Path) -> None:
    Store(db_path).close()
    assert stat.S_IMODE(os.stat(db_path).st_mode) == 0o600
    conn = sqlite3.connect(db_path)
    assert conn.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    indexes = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='index'")}
    for column in ("topic", "owner", "status", "confidence", "last_accessed_at"):
        assert f"ix_memory_{column}" in indexes


def test_add_get_and_created_event(store: Store) -> None:
    ident = store.add(
        {"content": "Prefers dark mode in the editor.", "topic": "preferences"}, now=NOW
    )
    record = store.require(ident)
    assert record.title == "Prefers dark mode in the editor."
    assert record.confidence == record.base_confidence == 1.0
    (event,) = store.history(ident)
    assert (event.kind, event.actor, event.after["confidence"]) == ("created", "test", 1.0)


def test_add_many_is_all_or_nothing(store: Store) -> None:
    rows = sample(5)
    rows[3]["confidence"] = 1.5
    with pytest.raises(ValidationError, match="memory 4: confidence must be between 0 and 1"):
        store.add_many(rows, now=NOW)
    assert store.count() == 0


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"content": ""}, "content is empty"),
        ({"content": "x", "topic": "gossip"}, "topic must be one of"),
        ({"content": "x", "retrieval_count": -1}, "retrieval_count must be a whole number"),
        ({"content": "x", "created_at": "yesterday"}, "not an ISO 8601 time"),
        ({"content": "a\x00b"}, "NUL byte"),
        ({"content": "x", "importance": "high"}, "importance must be a number"),
    ],
)
def test_bad_fields_are_refused(store: Store, fields: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        store.add(fields, now=NOW)


def test_keyset_paging_walks_every_row_once_in_order(store: Store) -> None:
    store.add_many(sample(237), now=NOW)
    store.record_access([5, 9, 11], now=NOW)  # some NULL and some set last_accessed_at
    for sort in ("confidence", "title", "last_accessed_at", "created_at", "id"):
        for descending in (False, True):
            seen, cursor = [], None
            while True:
                page = store.page(sort=sort, descending=descending, after=cursor, limit=17)
                seen += page.rows
                if page.next_cursor is None:
                    break
                cursor = page.next_cursor
            assert len(seen) == 237 and len({r.id for r in seen}) == 237
            offset_rows = store.page_with_offset(sort=sort, descending=descending, limit=237)
            if sort != "last_accessed_at":
                assert [r.id for r in seen] == [r.id for r in offset_rows]
            keys = [(getattr(r, sort) is not None, getattr(r, sort) or 0, r.id) for r in seen]
            assert keys == sorted(keys, reverse=descending)


def test_filters(store: Store) -> None:
    store.add_many(sample(60), now=NOW)
    assert store.count(MemoryFilter(owner="bob")) == 20
    assert store.count(MemoryFilter(topic="contacts", owner="alice")) == 20
    high = store.page(MemoryFilter(min_confidence=0.8), limit=100).rows
    assert high and all(r.confidence >= 0.8 for r in high)
    assert store.count(MemoryFilter(text="iron farm")) == 30
    store.protect([1, 2])
    assert store.count(MemoryFilter(is_protected=True)) == 2
    counts = dict(((o, t), c) for o, t, c in store.counts_by("owner", "topic"))
    assert counts[("bob", "preferences")] == 20


def test_ids_matching_is_every_id_the_filter_keeps(store: Store) -> None:
    owners, topics = ("ann", "bob", "cy"), ("projects", "preferences", "contacts")
    store.add_many(
        [
            {"content": f"memory {n}", "owner": owners[n % 3], "topic": topics[n % 7 % 3]}
            for n in range(60)
        ],
        now=NOW,
    )
    store.archive(list(range(1, 61, 4)), now=NOW)
    filters = [
        MemoryFilter(),
        MemoryFilter(status="active"),
        MemoryFilter(status="active", topic="preferences"),  # the owners-of-status path
        MemoryFilter(status="archived", topic="contacts"),
        MemoryFilter(status="active", owner="bob", topic="projects"),
        MemoryFilter(topic="general"),
        MemoryFilter(status="active", topic="preferences", tier="long_term"),
    ]
    for memory_filter in filters:
        ids = store.ids_matching(memory_filter)
        expected = sorted(record.id for record in store.page(memory_filter, limit=1000).rows)
        assert ids.dtype.name == "int64" and sorted(ids.tolist()) == expected


def test_keyword_search_ranks_and_ignores_syntax(store: Store) -> None:
    store.add_many(sample(20), now=NOW)
    hits = store.keyword_search("the IRON farm!", limit=5)
    assert hits and all("iron" in r.content for r, _ in hits)
    assert store.keyword_search('"unbalanced AND ( OR NEAR') == []
    assert store.keyword_search("the of and") == []


def test_actions_write_events_with_before_and_after(store: Store) -> None:
    ids = store.add_many(sample(3), now=NOW)
    assert store.protect(ids, now=NOW).changed == ids
    assert store.protect(ids, now=NOW).unchanged == ids  # already so: no new events
    store.archive([ids[0]], now=NOW + 1)
    store.restore([ids[0]], now=NOW + 2)
    store.forget([ids[1]], "user asked", now=NOW + 3)
    result = store.edit(ids[2], {"title": "New title", "confidence": 0.42}, now=NOW + 4)
    assert result.changed == [ids[2]]
    kinds = [e.kind for e in store.history(ids[0])]
    assert kinds == ["created", "protected", "archived", "restored"]
    forgotten = store.require(ids[1])
    assert forgotten.status == "archived" and forgotten.metadata["forget_reason"] == "user asked"
    edited = store.require(ids[2])
    assert (edited.title, edited.confidence, edited.base_confidence) == ("New title", 0.42, 0.42)
    last = store.history(ids[2])[-1]
    assert (
        last.kind == "edited"
        and last.before["title"].startswith("Note")
        and last.after == {"title": "New title", "confidence": 0.42, "base_confidence": 0.42}
    )
    assert store.protect([999]).missing == [999]


def test_edit_refuses_bad_values(store: Store) -> None:
    ident = store.add({"content": "x"}, now=NOW)
    with pytest.raises(ValidationError):
        store.edit(ident, {"memory_type": "gossip"})
    with pytest.raises(ValidationError, match="cannot edit"):
        store.edit(ident, {"retrieval_count": 4})


def test_record_access_reinforces_and_logs_query(store: Store) -> None:
    ident = store.add({"content": "x", "memory_type": "episodic", "confidence": 0.94}, now=NOW)
    store.record_access([ident], now=NOW + DAY, query="what x", scores={ident: {"cosine": 0.8}})
    record = store.require(ident)
    assert record.confidence == pytest.approx(0.95)  # +0.03 capped at 0.95
    assert record.base_confidence == record.confidence
    assert (record.retrieval_count, record.last_accessed_at) == (1, NOW + DAY)
    (access,) = store.accesses(ident)
    assert access.query == "what x" and access.scores == {"cosine": 0.8}
    high = store.add({"content": "y", "memory_type": "episodic", "confidence": 0.97}, now=NOW)
    store.record_access([high], now=NOW)
    assert store.require(high).confidence == 0.97  # an access never lowers confidence


@pytest.mark.parametrize("backend", ["sqlite"])  # erasure is SQLite's so far
def test_purge_writes_the_rows_before_deleting(store: Store, tmp_path: Path) -> None:
    ids = store.add_many(sample(3), now=NOW)
    out = tmp_path / "purged.jsonl"
    result = store.purge([ids[0], 12345], out, now=NOW)
    assert result.changed == [ids[0]] and result.missing == [12345]
    assert store.get(ids[0]) is None
    (line,) = out.read_text().splitlines()
    record = json.loads(line)
    assert record["id"] == ids[0] and record["history"][0]["kind"] == "created"
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o600
    # Its history goes too (no `purged` event any more): one audit row says it happened.
    assert store.history(ids[0]) == []
    (erasure,) = store.erasures()
    assert (erasure.memories, erasure.purge_file, erasure.selection) == (1, "purged.jsonl", "ids")


@pytest.mark.parametrize("backend", ["sqlite"])  # erasure is SQLite's so far
def test_purge_deletes_nothing_when_the_file_cannot_be_written(
    store: Store, tmp_path: Path
) -> None:
    ident = store.add({"content": "x"}, now=NOW)
    with pytest.raises(StoreError, match="nothing was purged"):
        store.purge([ident], tmp_path / "no" / "such" / "dir" / "out.jsonl")
    assert store.get(ident) is not None


def test_undo_of_an_action_restores_before_values(store: Store) -> None:
    ids = store.add_many(sample(2), now=NOW)
    store.archive(ids, now=NOW + 5)
    events = store.last_event_ids("test", ["archived"], NOW + 5)
    assert len(events) == 2
    store.protect([ids[1]], now=NOW + 6)  # a later change: that memory is not undone
    result = store.undo_event_group(events, now=NOW + 7)
    assert result.changed == [ids[0]] and result.unchanged == [ids[1]]
    assert store.require(ids[0]).status == "active"


def test_read_only_store_refuses_writes(db: str) -> None:
    with Store(db) as writer:
        writer.add({"content": "x"}, now=NOW)
    with Store(db, read_only=True) as store:
        assert store.count() == 1
        with pytest.raises(ReadOnlyError, match="read-only"):
            store.protect([1])


def test_data_version_moves_on_other_connections_commits_only(store: Store, db: str) -> None:
    """What the console polls: another connection's commit moves it; this Store's own
    commits and a transaction rolled back anywhere do not."""
    (ident,) = store.add_many(sample(1), now=NOW)
    start = store.data_version()
    store.protect([ident], now=NOW)
    assert store.data_version() == start, "its own commit is no news"
    with Store(db, actor="other") as other:
        other.data_version()
        other.archive([ident], now=NOW)
        seen = store.data_version()
        assert seen != start, "another connection's commit is seen"
        assert other.data_version() == other.data_version(), "the writer's own: no news"
        with pytest.raises(RuntimeError), other.transaction("a change given up") as conn:
            conn.execute("UPDATE memory SET title = 'never' WHERE id = ?", (ident,))
            raise RuntimeError("given up")
        assert store.data_version() == seen, "a rolled-back transaction is no change"
        other.restore([ident], now=NOW)
        store.protect(store.add_many(sample(1), now=NOW), now=NOW)  # after theirs, unseen
        moved = store.data_version()
        assert moved != seen, "their commit before this Store's own is still seen"
        assert store.data_version() == moved
    assert store.require(ident).title != "never"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"hello, I am a text file\n", "not an SQLite database"),
        (b"SQLite format 3\x00" + b"\x00" * 20, "truncated SQLite file"),
    ],
)
def test_foreign_files_are_refused_untouched(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "file.db"
    path.write_bytes(content)
    with pytest.raises(StoreError, match=message):
        Store(path)
    assert path.read_bytes() == content


def test_another_applications_database_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL)")
    conn.commit()
    conn.close()
    before = path.read_bytes()
    with pytest.raises(StoreError, match="another application.*invoices"):
        Store(path)
    assert path.read_bytes() == before


def test_damaged_store_is_refused(db_path: Path) -> None:
    with Store(db_path) as store:
        store.add_many(sample(200), now=NOW)
        store.connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn = sqlite3.connect(db_path)
    root = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = 'memory'").fetchone()[0]
    conn.close()
    data = bytearray(db_path.read_bytes())
    data[(root - 1) * 4096 : root * 4096] = b"\xff" * 4096  # smash the memory table's root page
    db_path.write_bytes(bytes(data))
    with pytest.raises(StoreError):
        with Store(db_path) as store:
            store.count(MemoryFilter(text="iron"))
            store.page(limit=500)


def test_newer_schema_is_refused(db_path: Path) -> None:
    Store(db_path).close()
    conn = sqlite3.connect(db_path)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    with pytest.raises(StoreError, match="newer memory-console"):
        Store(db_path)


def test_store_core_does_not_import_textual_or_sqlmodel(db_path: Path) -> None:
    Store(db_path).close()
    code = (
        "import sys; from memory_console.store import Store; "
        f"s = Store({str(db_path)!r}); s.page(); s.record_access([]); "
        "import memory_console.policies, memory_console.maintenance, memory_console.ingest; "
        "bad = [m for m in ('textual', 'sqlmodel', 'onnxruntime') if m in sys.modules]; "
        "print(bad); sys.exit(1 if bad else 0)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_undo_works_as_a_stack_on_one_memory(store: Store) -> None:
    (ident,) = store.add_many(sample(1), now=NOW)
    store.protect([ident], now=NOW + 1)
    first = store.last_event_ids("test", ["protected"], NOW + 1)
    store.archive([ident], now=NOW + 2)
    second = store.last_event_ids("test", ["archived"], NOW + 2)
    assert store.undo_event_group(second, now=NOW + 3).changed == [ident]
    assert store.undo_event_group(first, now=NOW + 4).changed == [ident]
    record = store.require(ident)
    assert (record.status, record.is_protected) == ("active", False)
    store.edit(ident, {"title": "later"}, now=NOW + 5)
    store.protect([ident], now=NOW + 6)
    third = store.last_event_ids("test", ["protected"], NOW + 6)
    store.edit(ident, {"title": "even later"}, now=NOW + 7)
    assert store.undo_event_group(third, now=NOW + 8).unchanged == [ident]


@pytest.fixture(name="either_store")
def _either_store(backend_store: Store) -> Store:
    return backend_store


def test_an_edit_of_the_metadata_is_written_as_its_event_says(
    either_store: Store,
) -> None:
    """The metadata column was written twice by one UPDATE, and the older value won: the
    event said the edit happened while the memory kept its old metadata."""
    store = either_store
    ident = store.add({"owner": "a", "content": "tea", "metadata": {"k": 1}}, now=NOW)
    store.edit(ident, {"metadata": {"k": 2}, "content": "green tea"}, now=NOW + 1)
    record = store.require(ident)
    assert (record.metadata, record.content) == ({"k": 2}, "green tea")
    (edited,) = [e for e in store.history(ident) if e.kind == "edited"]
    assert edited.after["metadata"] == {"k": 2}
    store.forget([ident], "gone", now=NOW + 3)
    assert store.require(ident).metadata == {"k": 2, "forget_reason": "gone"}
