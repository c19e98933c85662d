"""The vector index file beside a store: written once, reused, kept exact through the vector
log (changes of other processes included), rebuilt when stale, foreign or damaged, never
written on a read-only store, and left without a purged memory's vector."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pytest

from memory_console.embed.index import VectorIndex
from memory_console.embed.mapped_index import MappedIndex
from memory_console.embed.semantic import SemanticIndex
from memory_console.store import MemoryFilter, Store, vector_file
from memory_console.store import embeddings as table
from memory_console.store.vector_log import VECTOR_LOG_TRIGGER_NAMES, log_bounds
from tests.helpers import ISO_NOW, NOW, store_files

if TYPE_CHECKING:
    from memory_console.embed.embedder import Embedder

OWNERS = ("alice", "bob", "carol")
TOPICS = ("preferences", "projects", "general")
COUNT = 600


def fill_store(store: Store, model_id: str, dim: int, count: int = COUNT, seed: int = 3) -> None:
    """Memories over three owners and topics, each with a random vector of the model."""
    ids = store.add_many(
        [
            {
                "content": f"memory number {i}",
                "owner": OWNERS[i % 3],
                "topic": TOPICS[(i // 3) % 3],
                "created_at": NOW,
            }
            for i in range(count)
        ],
        now=NOW,
    )
    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((count, dim)).astype(np.float32)
    table.write_vectors(
        store, model_id, [(i, f"h{i}", v.tobytes()) for i, v in zip(ids, vectors, strict=True)]
    )


def float32_scan(store: Store, model_id: str, dim: int) -> VectorIndex:
    """Every current vector in memory, straight from SQLite: the reference answers."""
    ids, matrix, scopes = table.load_active_vectors(store, model_id, dim)
    reference = VectorIndex(dim, int8_scan_from=10**9)
    reference.add(ids, matrix)
    return reference


def same_answers(semantic: SemanticIndex, store: Store, queries: np.ndarray) -> None:
    """Top k of the index equal a float32 scan's, unfiltered and under owner/topic filters."""
    reference = float32_scan(store, semantic.model_id, semantic.embedder.dim)
    filters = [
        MemoryFilter(status="active"),
        MemoryFilter(status="active", owner="bob"),
        MemoryFilter(status="active", owner="alice", topic="projects"),
        MemoryFilter(status="active", owner="nobody"),
        MemoryFilter(status="active", tiers=("long_term",)),
        MemoryFilter(status="active", memory_type="episodic"),
    ]
    for vector in queries:
        for memory_filter in filters:
            for k in (1, 10, 50):
                got = semantic.nearest_to(vector, memory_filter, k)
                ids, scores = reference.search(vector, k, store.ids_matching(memory_filter))
                assert [i for i, _ in got] == ids.tolist(), memory_filter
                assert np.allclose([s for _, s in got], scores, atol=1e-6)


@pytest.fixture
def filled(store: Store, embedder: Embedder) -> Store:
    fill_store(store, embedder.model_id, embedder.dim)
    return store


def loaded(store: Store, embedder: Embedder) -> SemanticIndex:
    semantic = SemanticIndex(store, embedder)
    semantic.load()
    return semantic


def queries(dim: int, count: int = 4) -> np.ndarray:
    return np.random.default_rng(99).standard_normal((count, dim)).astype(np.float32)


def test_the_file_is_written_at_first_load_and_reused_after(
    filled: Store, embedder: Embedder
) -> None:
    path = vector_file.vector_path(filled.path)
    assert not path.exists()
    first = loaded(filled, embedder)
    assert first.source == "file (written now)" and path.is_file()
    assert os.stat(path).st_mode & 0o777 == 0o600
    written = path.stat().st_mtime_ns, path.stat().st_ino
    second = loaded(filled, embedder)
    # Reused as it is: nothing written, no vector read from SQLite (no row in the overlay).
    assert second.source == "file"
    assert isinstance(second.index, MappedIndex) and second.index.overlay_size == 0
    assert (path.stat().st_mtime_ns, path.stat().st_ino) == written
    assert len(second.index) == COUNT
    same_answers(second, filled, queries(embedder.dim))


def test_changes_since_the_file_was_written_come_from_the_log(
    filled: Store, embedder: Embedder
) -> None:
    loaded(filled, embedder)
    archived, moved = [1, 2, 3], [10, 11]
    filled.archive(archived, now=NOW)
    filled.change_fields([moved[0]], {"topic": "general"}, "edited")
    filled.change_fields([moved[1]], {"owner": "carol"}, "edited")
    new_vector = np.random.default_rng(5).standard_normal(embedder.dim).astype(np.float32)
    table.write_vectors(filled, embedder.model_id, [(20, "changed", new_vector.tobytes())])
    semantic = loaded(filled, embedder)
    assert semantic.source == "file"
    assert isinstance(semantic.index, MappedIndex)
    assert semantic.index.overlay_size == 3  # the moved and the re-embedded ones
    assert all(i not in semantic.index for i in archived) and len(semantic.index) == COUNT - 3
    same_answers(semantic, filled, np.vstack([queries(embedder.dim), new_vector]))


def test_a_file_that_misses_too_much_is_written_again_and_the_log_trimmed(
    filled: Store, embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    loaded(filled, embedder)
    monkeypatch.setattr(vector_file, "REWRITE_MIN_ROWS", 5)
    filled.archive(list(range(1, 41)), now=NOW)
    semantic = loaded(filled, embedder)
    assert semantic.source == "file (written now)"
    low, high = filled.read(log_bounds)
    assert low == high  # only the entry at the file's position is kept
    assert len(semantic.index) == COUNT - 40
    same_answers(semantic, filled, queries(embedder.dim))


def damage(path: Path, how: str) -> None:
    data = bytearray(path.read_bytes())
    if how == "truncated":
        data = data[:-100]
    elif how == "header":
        data[20] ^= 0xFF
    elif how == "ids":
        data[vector_file.HEADER_BYTES + 8] ^= 0x01
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("how", ["truncated", "header", "ids", "empty"])
def test_a_damaged_file_is_written_again(filled: Store, embedder: Embedder, how: str) -> None:
    loaded(filled, embedder)
    path = vector_file.vector_path(filled.path)
    if how == "empty":
        path.write_bytes(b"")
    else:
        damage(path, how)
    with pytest.raises(vector_file.VectorFileError):
        vector_file.read_file(path)
    semantic = loaded(filled, embedder)
    assert semantic.source == "file (written now)"
    vector_file.read_file(path)  # whole again
    same_answers(semantic, filled, queries(embedder.dim, 2))


def test_another_stores_file_is_never_trusted(
    filled: Store, embedder: Embedder, tmp_path: Path
) -> None:
    with Store(tmp_path / "other.db") as other:
        fill_store(other, embedder.model_id, embedder.dim, seed=8)  # same ids, other vectors
        loaded(other, embedder)
        foreign = vector_file.vector_path(other.path).read_bytes()
    path = vector_file.vector_path(filled.path)
    path.write_bytes(foreign)
    semantic = loaded(filled, embedder)
    assert semantic.source == "file (written now)"
    assert vector_file.read_file(path).store_id == filled.meta("store_id")
    same_answers(semantic, filled, queries(embedder.dim, 2))


def test_a_read_only_store_uses_a_valid_file_and_never_writes_one(
    filled: Store, embedder: Embedder
) -> None:
    path = vector_file.vector_path(filled.path)
    with Store(filled.path, read_only=True) as reader:
        semantic = loaded(reader, embedder)
        assert semantic.source == "store" and not path.exists()
        same_answers(semantic, reader, queries(embedder.dim, 2))
    loaded(filled, embedder)
    filled.archive([5], now=NOW)
    with Store(filled.path, read_only=True) as reader:
        semantic = loaded(reader, embedder)
        assert semantic.source == "file" and 5 not in semantic.index
    damage(path, "header")
    before = path.read_bytes()
    with Store(filled.path, read_only=True) as reader:
        semantic = loaded(reader, embedder)
        assert semantic.source == "store" and semantic.file_problem
        same_answers(semantic, reader, queries(embedder.dim, 2))
    assert path.read_bytes() == before


def test_a_purge_leaves_no_byte_of_the_purged_vectors(
    filled: Store, embedder: Embedder, tmp_path: Path
) -> None:
    loaded(filled, embedder)
    purged = [7, 8, 9]
    file = vector_file.read_file(vector_file.vector_path(filled.path))
    rows = np.searchsorted(file.ids, purged)
    # The rows as the file holds them (normalised), and their first 32 bytes alone.
    needles = [file.vectors[row].tobytes() for row in rows]
    del file
    ids, matrix, _ = table.load_active_vectors(filled, embedder.model_id, embedder.dim)
    needles += [matrix[ids.tolist().index(i)].tobytes() for i in purged]  # as SQLite has them
    needles += [needle[:32] for needle in needles]
    filled.purge(purged, tmp_path / "purged.jsonl", now=NOW, selection="ids", wal_wait=0.1)
    filled.close()
    for path in store_files(filled.path):
        data = path.read_bytes()
        assert not [n for n in needles if n in data], path.name
    with Store(filled.path) as reopened:
        semantic = loaded(reopened, embedder)
        assert semantic.source == "file"
        assert all(i not in semantic.index for i in purged)
        same_answers(semantic, reopened, queries(embedder.dim, 2))


@pytest.mark.parametrize("budget", [None, 4096], ids=["pages kept", "pages released"])
def test_mapped_search_is_exact_against_a_float32_scan(tmp_path: Path, budget: int | None) -> None:
    """Labels, id sets and an overlay together, at sizes that take each search path, with
    the file's pages kept mapped and released under a budget smaller than the file."""
    rng = np.random.default_rng(11)
    dim, count = 16, 5_000
    ids = np.sort(rng.choice(100_000, count, replace=False)).astype(np.int64)
    vectors = rng.standard_normal((count, dim)).astype(np.float32)
    labels = rng.integers(0, 4, (count, 2)).astype(np.int32)
    reference = VectorIndex(dim, int8_scan_from=10**9, labels=2)
    reference.add(ids, vectors, labels)
    writer = vector_file._Writer(tmp_path / "x.db-vectors", count, dim)
    for start in range(0, count, 1000):
        part = slice(start, start + 1000)
        writer.add(ids[part], vectors[part], [(f"o{a}", f"t{b}") for a, b in labels[part].tolist()])
    path = writer.finish("store", "model", 0)
    file = vector_file.read_file(path)
    codes = [{v: c for c, v in enumerate(file.codes[n])} for n in ("owner", "topic")]
    mapped = MappedIndex(file, labels=2, budget=budget)
    assert mapped.releases is (budget is not None)
    # File codes differ from the reference's: compare through the label values.
    relabel = np.array(
        [[codes[0][f"o{a}"], codes[1][f"t{b}"]] for a, b in labels.tolist()], np.int32
    )
    changed = ids[::7]
    fresh = rng.standard_normal((changed.size, dim)).astype(np.float32)
    reference.add(changed, fresh)
    reference.set_labels(changed, labels[::7])
    mapped.add(changed, fresh, relabel[::7])
    removed = ids[3::11]
    reference.remove(removed)
    mapped.remove(removed)
    assert len(mapped) == len(reference)
    for query in rng.standard_normal((5, dim)).astype(np.float32):
        for k in (1, 10, 100):
            for owner in (None, 2):
                ref_labels = [] if owner is None else [(0, owner)]
                map_labels = [] if owner is None else [(0, codes[0][f"o{owner}"])]
                for allowed in (None, ids[::3], ids[::50]):
                    want = reference.search(query, k, allowed, ref_labels)
                    got = mapped.search(query, k, allowed, map_labels)
                    assert got[0].tolist() == want[0].tolist()
                    assert np.allclose(got[1], want[1], atol=1e-6)


REWRITER = """
import sys
from memory_console.store import Store, vector_file
with Store(sys.argv[1]) as store:
    vector_file.build(store, sys.argv[2], int(sys.argv[3]))
"""


def test_other_processes_change_and_rewrite_while_an_index_is_held(
    filled: Store, embedder: Embedder, tmp_path: Path
) -> None:
    held = loaded(filled, embedder)
    assert held.source == "file (written now)"
    source = tmp_path / "new.jsonl"
    source.write_text(
        "".join(
            json.dumps({"content": text, "owner": "bob"}) + "\n"
            for text in ("Bob keeps bees on the roof", "Bob's favourite editor is Helix")
        )
    )
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    db = str(filled.path)
    for argv in (
        ["import", str(source)],
        ["reindex"],
        ["archive", "4"],
    ):
        done = subprocess.run(
            [sys.executable, "-m", "memory_console.cli", *argv, "--db", db, "--now", ISO_NOW],
            env=env,
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, done.stderr
    # The held index still answers from the file it mapped, whole.
    assert held.nearest_to(queries(embedder.dim, 1)[0], MemoryFilter(status="active"), 5)
    fresh = loaded(filled, embedder)
    assert fresh.source == "file" and 4 not in fresh.index
    bees = fresh.nearest("bees on a roof", MemoryFilter(status="active", owner="bob"), 1)
    assert filled.require(bees[0][0]).content == "Bob keeps bees on the roof"
    same_answers(fresh, filled, queries(embedder.dim, 2))
    # Another process rewrites the file while this one has the old one mapped.
    done = subprocess.run(
        [sys.executable, "-c", REWRITER, db, embedder.model_id, str(embedder.dim)],
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    same_answers(fresh, filled, queries(embedder.dim, 2))
    rewritten = loaded(filled, embedder)
    assert rewritten.source == "file" and rewritten.index.overlay_size == 0  # type: ignore[union-attr]
    same_answers(rewritten, filled, queries(embedder.dim, 2))


def test_a_migrated_store_gains_the_log_and_an_identity(db_path: Path) -> None:
    import sqlite3

    with Store(db_path) as made:
        made.add({"content": "I live in Lyon"}, now=NOW)
    conn = sqlite3.connect(db_path)
    conn.execute("DROP TABLE vector_log")
    for name in VECTOR_LOG_TRIGGER_NAMES:
        conn.execute(f"DROP TRIGGER IF EXISTS {name}")
    conn.execute("DELETE FROM console_meta WHERE key = 'store_id'")
    conn.execute("PRAGMA user_version = 6")
    conn.commit()
    conn.close()
    with Store(db_path) as migrated:
        assert migrated.migration_backup is not None
        assert migrated.meta("store_id")
        migrated.archive([1], now=NOW)
        assert migrated.read(log_bounds) == (1, 1)


def test_a_sync_after_a_recorded_check_reads_only_what_the_log_names(
    store: Store, embedder: Embedder
) -> None:
    first, second, third = store.add_many(
        [
            {"content": "Alice drinks green tea"},
            {"content": "Alice cycles to work"},
            {"content": "Alice plays the cello"},
        ],
        now=NOW,
    )
    semantic = SemanticIndex(store, embedder)
    assert semantic.sync() == 3
    checked = table.last_check(store, embedder.model_id)
    assert checked is not None
    store.change_fields([second], {"content": "Alice drives to work"}, "edited")
    fourth = store.add({"content": "Alice keeps a parrot"}, now=NOW)
    later = SemanticIndex(store, embedder)
    later.load()
    found = table.texts_to_check(store, embedder.model_id, checked, later.index.ids())
    assert found is not None
    assert sorted(row[0] for row in found[1]) == [second, fourth]  # not the other two
    assert later.sync() == 2
    nearest = later.nearest("who drives a car", MemoryFilter(status="active"), 1)
    assert nearest[0][0] == second
    assert SemanticIndex(store, embedder).sync() == 0


def test_the_scan_keeps_its_pages_unless_the_settings_state_a_smaller_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No budget by default: the pages stay mapped (the kernel reclaims them under
    pressure). MEMORY_CONSOLE_VECTOR_MEMORY_MB below the file's size releases each chunk."""
    from memory_console import settings

    writer = vector_file._Writer(tmp_path / "x.db-vectors", 1000, 384)
    vectors = np.random.default_rng(5).standard_normal((1000, 384)).astype(np.float32)
    writer.add(np.arange(1, 1001, dtype=np.int64), vectors, [("o", "t")] * 1000)
    file = vector_file.read_file(writer.finish("store", "model", 0))  # 1.5 MB of vectors
    for value, releases in ((None, False), ("0", True), ("1", True), ("2", False)):
        monkeypatch.setattr(settings, "_vector_memory", settings._UNREAD)
        if value is None:
            monkeypatch.delenv("MEMORY_CONSOLE_VECTOR_MEMORY_MB", raising=False)
        else:
            monkeypatch.setenv("MEMORY_CONSOLE_VECTOR_MEMORY_MB", value)
        assert MappedIndex(file, labels=2).releases is releases, value


def test_the_sampled_top_k_is_the_plain_one() -> None:
    """at_least_kth's threshold from a sample keeps exactly the scores at least the k-th
    largest, ties included, as a full selection does, in orders that help and hurt it."""
    from memory_console.embed.mapped_index import SAMPLED_FROM, _top, at_least_kth

    rng = np.random.default_rng(21)
    n = SAMPLED_FROM * 3
    rounded = np.round(rng.standard_normal(n), 2).astype(np.float32)  # many ties
    cases = [
        rng.standard_normal(n).astype(np.float32),
        rounded,
        np.sort(rng.standard_normal(n)).astype(np.float32),  # the best all at one end
        np.zeros(n, np.float32),  # every score equal
    ]
    ids = np.arange(5, 5 + n, dtype=np.int64)
    for scores in cases:
        for k in (1, 10, 100, 1000):
            kth = np.sort(scores)[::-1][k - 1]
            assert at_least_kth(scores, k).tolist() == np.flatnonzero(scores >= kth).tolist()
            order = np.lexsort((ids, -scores))[:k]
            got_ids, got_scores = _top(ids, scores, k)
            assert got_ids.tolist() == ids[order].tolist()
            assert got_scores.tolist() == scores[order].tolist()
