"""The demo store: deterministic, realistic, consistent with its own history, fast to build."""

from __future__ import annotations

import json
import os
import sqlite3
import stat
import subprocess
import sys
from collections import defaultdict
from itertools import combinations
from pathlib import Path
from typing import Any

import pytest

from memory_console.demo import DemoReport, build_demo
from memory_console.demo import build as demo
from memory_console.demo import content as demo_content
from memory_console.policies.reinforcement import REINFORCEMENT, boosted
from memory_console.policies.relevance import DEFAULT_RELEVANCE, decayed_confidence, relevance_rate
from memory_console.sensitive import find_sensitive
from memory_console.store import Store, StoreError
from memory_console.store import ddl as store_ddl
from memory_console.store.validate import default_title
from memory_console.store.vector_log import VECTOR_LOG_TRIGGER_NAMES
from memory_console.store.vocab import MEMORY_TYPES, TOPICS
from tests.helpers import NOW

COUNT = 1200


@pytest.fixture(scope="module")
def demo_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("demo") / "demo.db"
    build_demo(path, count=COUNT, seed=7, now=NOW)
    return path


def rows(path: Path, sql: str) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def memories(path: Path) -> list[dict[str, Any]]:
    conn = sqlite3.connect(path)
    conn.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in conn.execute("SELECT * FROM memory ORDER BY id")]
    finally:
        conn.close()


def events_by_memory(path: Path) -> dict[int, list[dict[str, Any]]]:
    conn = sqlite3.connect(path)
    conn.row_factory = sqlite3.Row
    grouped: dict[int, list[dict[str, Any]]] = defaultdict(list)
    try:
        for row in conn.execute("SELECT * FROM memory_event ORDER BY at, id"):
            event = dict(row)
            for name in ("before", "after", "scores"):
                event[name] = json.loads(event[name]) if event[name] else None
            grouped[event["memory_id"]].append(event)
    finally:
        conn.close()
    return grouped


def jaccard(a: list[str], b: list[str]) -> float:
    return len(set(a) & set(b)) / len(set(a) | set(b))


def contents(path: Path) -> tuple[list[Any], list[Any]]:
    return (
        rows(path, "SELECT * FROM memory ORDER BY id"),
        rows(path, "SELECT * FROM memory_event ORDER BY id"),
    )


# -- the file ------------------------------------------------------------------------------


def test_same_inputs_give_identical_contents_and_another_seed_differs(tmp_path: Path) -> None:
    first, second, other = tmp_path / "a.db", tmp_path / "b.db", tmp_path / "c.db"
    build_demo(first, count=700, seed=3, now=NOW)
    build_demo(second, count=700, seed=3, now=NOW)
    build_demo(other, count=700, seed=4, now=NOW)
    assert contents(first) == contents(second)
    assert contents(first)[0] != contents(other)[0]
    assert contents(first)[1] != contents(other)[1]


def test_report_counts_match_the_file(tmp_path: Path) -> None:
    path = tmp_path / "demo.db"
    report = build_demo(path, count=900, seed=5, now=NOW)
    assert report.path == path
    assert report.memories == 900 == rows(path, "SELECT count(*) FROM memory")[0][0]
    assert report.events == rows(path, "SELECT count(*) FROM memory_event")[0][0]
    assert 2.0 <= report.events / report.memories <= 3.5
    assert report.seconds > 0


def test_file_is_private_complete_and_alone(demo_path: Path) -> None:
    assert stat.S_IMODE(os.stat(demo_path).st_mode) == 0o600
    assert sorted(p.name for p in demo_path.parent.iterdir()) == ["demo.db"]
    assert rows(demo_path, "PRAGMA journal_mode")[0][0] == "wal"
    assert rows(demo_path, "PRAGMA integrity_check")[0][0] == "ok"


def test_every_index_and_search_trigger_exists(demo_path: Path) -> None:
    wanted = {statement.split()[2] for statement in store_ddl.index_statements()}
    indexes = {r[0] for r in rows(demo_path, "SELECT name FROM sqlite_master WHERE type='index'")}
    assert wanted <= indexes
    triggers = {
        r[0] for r in rows(demo_path, "SELECT name FROM sqlite_master WHERE type='trigger'")
    }
    assert triggers == {*store_ddl.FTS_TRIGGER_NAMES, *VECTOR_LOG_TRIGGER_NAMES}


def test_full_text_search_finds_the_iron_farm(demo_path: Path) -> None:
    found = rows(
        demo_path,
        "SELECT m.content FROM memory_fts JOIN memory m ON m.id = memory_fts.rowid "
        "WHERE memory_fts MATCH '\"iron\"'",
    )
    assert any("iron farm" in text for (text,) in found)
    assert (
        len(found)
        == rows(
            demo_path,
            "SELECT count(*) FROM memory WHERE title || content || keywords LIKE '%iron%'",
        )[0][0]
    )


def test_store_opens_pages_and_keeps_the_text_index_in_step(
    demo_path: Path, tmp_path: Path
) -> None:
    copy = tmp_path / "copy.db"
    copy.write_bytes(demo_path.read_bytes())
    with Store(copy, actor="test") as store:
        page = store.page(limit=50)
        assert [m.id for m in page.rows] == list(range(1, 51))
        assert page.next_cursor is not None
        assert store.count() == COUNT
        assert store.history(1)[0].kind == "created"
        ident = store.add({"content": "Prefers a treehouse office", "owner": "alice"}, now=NOW)
        found = rows(copy, "SELECT rowid FROM memory_fts WHERE memory_fts MATCH '\"treehouse\"'")
        assert found == [(ident,)]


def test_refuses_a_non_empty_path_and_leaves_it_alone(tmp_path: Path) -> None:
    path = tmp_path / "taken.db"
    path.write_bytes(b"precious")
    with pytest.raises(StoreError, match="not empty"):
        build_demo(path, count=50, now=NOW)
    assert path.read_bytes() == b"precious"
    with pytest.raises(StoreError, match="directory"):
        build_demo(tmp_path, count=50, now=NOW)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["taken.db"]


def test_an_empty_file_may_be_replaced(tmp_path: Path) -> None:
    path = tmp_path / "empty.db"
    path.touch()
    build_demo(path, count=40, now=NOW)
    assert rows(path, "SELECT count(*) FROM memory")[0][0] == 40


def test_a_failed_build_leaves_nothing_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: object) -> list[tuple[Any, ...]]:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(demo, "event_rows", broken)
    with pytest.raises(RuntimeError, match="disk on fire"):
        build_demo(tmp_path / "demo.db", count=200, now=NOW)
    assert list(tmp_path.iterdir()) == []


def test_progress_runs_from_zero_to_one(tmp_path: Path) -> None:
    seen: list[tuple[str, float]] = []
    build_demo(tmp_path / "demo.db", count=300, now=NOW, progress=lambda s, f: seen.append((s, f)))
    fractions = [f for _, f in seen]
    assert fractions[0] == 0.0 and fractions[-1] == 1.0
    assert fractions == sorted(fractions)
    assert {"memories", "events", "indexes"} <= {stage for stage, _ in seen}


@pytest.mark.parametrize("count", [0, 1, 12])
def test_tiny_stores(tmp_path: Path, count: int) -> None:
    path = tmp_path / "tiny.db"
    report = build_demo(path, count=count, now=NOW)
    assert rows(path, "SELECT count(*) FROM memory")[0][0] == count == report.memories


def test_the_core_does_not_import_textual() -> None:
    code = "import sys, memory_console.demo; assert 'textual' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).parent.parent)


# -- the content ---------------------------------------------------------------------------


def test_every_topic_type_tier_and_policy_appears(demo_path: Path) -> None:
    found = memories(demo_path)
    assert {m["topic"] for m in found} == set(TOPICS)
    assert {m["memory_type"] for m in found} == set(MEMORY_TYPES)
    assert {m["tier"] for m in found} == {"working", "short_term", "long_term", "episodic"}
    assert {m["decay_policy"] for m in found} == {"standard", "aggressive", "none"}
    assert {m["status"] for m in found} == {"active", "archived"}
    assert len({m["owner"] for m in found}) >= 8
    assert {m["source"] for m in found} >= {"user_directive", "background_scan", "import"}
    share = {
        key: sum(m[key] == value for m in found) / len(found)
        for key, value in (("is_protected", 1), ("status", "archived"))
    }
    assert 0.01 < share["is_protected"] < 0.08 and 0.01 < share["status"] < 0.06
    long_term = sum(m["tier"] == "long_term" for m in found if m["memory_type"] != "episodic")
    assert long_term > 0.7 * sum(m["memory_type"] != "episodic" for m in found)


def test_texts_are_well_formed(demo_path: Path) -> None:
    for m in memories(demo_path):
        assert m["title"] == default_title(m["content"]) and len(m["title"]) <= 50
        keywords = json.loads(m["keywords"])
        assert 2 <= len(keywords) <= 5 and len(set(keywords)) == len(keywords)
        assert all(k == k.lower() and " " not in k for k in keywords)
        metadata = json.loads(m["metadata"])
        assert isinstance(metadata, dict)
        if "original_message" in metadata:
            assert metadata["original_message"].endswith(".")
        if m["source"] == "import":
            assert m["external_id"] and metadata["imported_from"]
        if m["source"] == "user_directive":
            assert m["importance"] == 1.0


@pytest.mark.parametrize("seed", [1, 7, 42])
def test_a_small_store_shows_every_feature(tmp_path: Path, seed: int) -> None:
    path = tmp_path / "small.db"
    build_demo(path, count=200, seed=seed, now=NOW)
    found = memories(path)
    alice = [m["content"] for m in found if m["owner"] == "alice"]
    for text in (
        "iron farm",
        "dark mode in the editor (Solarized Dark)",
        "Weekly team sync",
        "sarah.chen@northwind.example",
    ):
        assert any(text in content for content in alice), text
    assert {m["topic"] for m in found} == set(TOPICS)
    assert {m["memory_type"] for m in found} == set(MEMORY_TYPES)
    assert sum(m["is_protected"] for m in found) >= 3
    secrets = [m for m in found if any(not f.is_health for f in find_sensitive(m["content"]))]
    assert len(secrets) >= 2
    assert duplicate_groups(found, minimum=3)


def duplicate_groups(found: list[dict[str, Any]], minimum: int) -> list[list[int]]:
    """Groups (same owner and topic) whose members all have keyword Jaccard >= 0.5."""
    by_place: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for m in found:
        by_place[(m["owner"], m["topic"])].append(m)
    groups = []
    for members in by_place.values():
        for m in members:
            words = json.loads(m["keywords"])
            near = [o for o in members if jaccard(words, json.loads(o["keywords"])) >= 0.5]
            if len(near) >= minimum and all(
                jaccard(json.loads(a["keywords"]), json.loads(b["keywords"])) >= 0.5
                for a, b in combinations(near, 2)
            ):
                groups.append(sorted(o["id"] for o in near))
    return groups


def test_bulk_holds_near_duplicate_groups(tmp_path: Path) -> None:
    path = tmp_path / "bulk.db"
    build_demo(path, count=2000, seed=9, now=NOW)
    bulk = [m for m in memories(path) if m["id"] > len(demo_content.SHOWCASE)]
    groups = {tuple(g) for g in duplicate_groups(bulk, minimum=3)}
    assert len(groups) >= 5


def test_secrets_are_rare_and_everything_else_is_clean(demo_path: Path) -> None:
    flagged = [
        m for m in memories(demo_path) if any(not f.is_health for f in find_sensitive(m["content"]))
    ]
    assert 3 <= len(flagged) <= 0.01 * COUNT
    secret_texts = {t.content.split("{")[0][:12] for t in demo_content.SECRETS}
    assert all(
        any(m["content"].startswith(prefix) for prefix in secret_texts) or m["id"] <= 30
        for m in flagged
    )


def test_every_template_renders_with_every_slot_value() -> None:
    catalog = demo_content.Catalog()
    for compiled in catalog.compiled:
        longest = max([len(pool) for pool in compiled.pools] or [1])
        for i in range(longest):
            values = [pool[i % len(pool)] for pool in compiled.pools]
            text = compiled.content.format(*values)
            assert not any(stop in text for stop in ("! ", "? ", "\n", "  ", '"', "\\"))
            assert json.loads(compiled.keywords_json.format(*values))
            if compiled.said is not None:
                assert '"' not in compiled.said.format(*values)


def test_paraphrase_families_have_four_variants_with_overlapping_keywords() -> None:
    families: dict[str, list[demo_content.Template]] = defaultdict(list)
    for template in demo_content.FAMILIES:
        assert template.family is not None
        families[template.family].append(template)
    for variants in families.values():
        assert len(variants) == max(demo.GROUP_SIZES)
        assert len({(v.topic, v.memory_type) for v in variants}) == 1
        for a, b in combinations(variants, 2):
            assert jaccard(a.keywords.split(), b.keywords.split()) >= 0.5


# -- the history ---------------------------------------------------------------------------


def test_each_memory_agrees_with_its_events(demo_path: Path) -> None:
    history = events_by_memory(demo_path)
    for m in memories(demo_path):
        events = history[m["id"]]
        created = events[0]
        assert created["kind"] == "created" and created["at"] == m["created_at"]
        assert created["before"] is None and created["after"]["status"] == "active"
        initial = created["after"]["confidence"]
        assert initial >= 0.95 if m["source"] == "user_directive" else 0.5 <= initial <= 0.9
        accessed = [e for e in events if e["kind"] == "accessed"]
        assert m["retrieval_count"] == len(accessed)
        assert m["last_accessed_at"] == (accessed[-1]["at"] if accessed else None)
        with_confidence = [e for e in events if "confidence" in (e["after"] or {})]
        assert m["confidence"] == m["base_confidence"] == with_confidence[-1]["after"]["confidence"]
        for number, event in enumerate(accessed):
            assert event["actor"] == "api" and event["query"] and event["scores"]["fused"] > 0
            assert event["before"]["retrieval_count"] == number
            assert event["after"]["retrieval_count"] == number + 1
            assert event["after"]["last_accessed_at"] == event["at"]
            previous = accessed[number - 1]["at"] if number else None
            assert event["before"]["last_accessed_at"] == previous
        kinds = [e["kind"] for e in events]
        assert ("archived" in kinds) == (m["status"] == "archived")
        assert ("protected" in kinds) == bool(m["is_protected"])
        assert m["updated_at"] == max(e["at"] for e in events if e["kind"] != "accessed")
        assert m["revision"] == len(events) - 1
        assert all(e["at"] <= NOW for e in events)
        assert m["created_at"] >= NOW - 366 * 86400


def test_confidence_follows_the_relevance_policy(demo_path: Path) -> None:
    """Before each access: decay from the base by whole 30-day periods (only where a decay
    pass may act); then the type's reinforcement. Values are kept to four decimals."""
    p = DEFAULT_RELEVANCE
    history = events_by_memory(demo_path)
    decayed_somewhere = False
    for m in memories(demo_path):
        decays = (
            m["memory_type"] != "semantic"
            and not m["is_protected"]
            and m["decay_policy"] in ("standard", "aggressive")
        )
        boost, cap = REINFORCEMENT[m["memory_type"]]
        base = history[m["id"]][0]["after"]["confidence"]
        last = m["created_at"]
        for count, event in enumerate(e for e in history[m["id"]] if e["kind"] == "accessed"):
            periods = int((event["at"] - last) // (p.period_days * 86400))
            rate = relevance_rate([count], [m["decay_policy"] == "aggressive"], p)
            expected = decayed_confidence([base], rate, [periods], p.floor)[0] if decays else base
            assert event["before"]["confidence"] == pytest.approx(expected, abs=6e-5)
            decayed_somewhere |= event["before"]["confidence"] < base
            after = boosted([event["before"]["confidence"]], boost, cap)[0]
            assert event["after"]["confidence"] == pytest.approx(after, abs=6e-5)
            base, last = event["after"]["confidence"], event["at"]
    assert decayed_somewhere


def test_retrieval_counts_are_skewed(demo_path: Path) -> None:
    counts = [m["retrieval_count"] for m in memories(demo_path)]
    assert sum(c <= 2 for c in counts) > 0.7 * len(counts)
    assert any(c >= 10 for c in counts)
    assert max(counts) <= 40


@pytest.mark.slow
def test_a_hundred_thousand_memories(large_demo: DemoReport) -> None:
    report = large_demo
    path = report.path
    assert report.memories == 100_000
    assert rows(path, "SELECT count(*) FROM memory")[0][0] == 100_000
    assert rows(path, "SELECT count(*) FROM memory_event")[0][0] == report.events
    assert rows(path, "SELECT count(*) FROM memory_fts WHERE memory_fts MATCH '\"farm\"'")[0][0]
    with Store(path, actor="test") as store:
        assert len(store.page(limit=100).rows) == 100
