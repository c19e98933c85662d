"""Hybrid search with the real model: embeddings on write, the index in step, the CLI."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memory_console.cli import main
from memory_console.embed.embedder import RETIRED_MODELS, default_manifest_path
from memory_console.embed.search import SearchEngine
from memory_console.store import MemoryFilter, Store
from tests.helpers import NOW

FACTS = [
    ("Prefers dark mode in the editor (Solarized Dark).", "preferences", "alice"),
    ("Weekly sync with Bob every Tuesday at 10:00.", "decisions", "alice"),
    ("Is building an iron farm in the Minecraft survival world.", "projects", "alice"),
    ("Colleague Maria's email is maria.lopez@example.com.", "contacts", "alice"),
    ("Lives in Lisbon and works remotely.", "user_info", "bob"),
    ("Decided to use PostgreSQL for the billing service.", "decisions", "bob"),
    ("Likes a dark theme when coding.", "preferences", "bob"),
]


@pytest.fixture
def store(backend_store: Store) -> Store:
    """This module's tests run on SQLite and on PostgreSQL (pgvector)."""
    return backend_store


@pytest.fixture
def engine(store: Store) -> SearchEngine:
    store.add_many([{"content": c, "topic": t, "owner": o} for c, t, o in FACTS], now=NOW)
    engine = SearchEngine(store)
    assert engine.prepare_semantic()
    return engine


def brute_force(store: Store, engine: SearchEngine, query: str, k: int) -> list[int]:
    assert engine.semantic is not None
    vector = engine.semantic.embedder.embed_query(query)
    rows = store._query(
        "SELECT e.memory_id, e.vector FROM embedding e JOIN memory m ON m.id = e.memory_id "
        "WHERE m.status = 'active'"
    )
    scores = {ident: float(np.frombuffer(blob, np.float32) @ vector) for ident, blob in rows}
    return sorted(scores, key=lambda i: (-scores[i], i))[:k]


def test_paraphrase_is_found_by_meaning(engine: SearchEngine) -> None:
    query = "what editor colours does the user like"
    semantic = engine.search(query, mode="semantic", k=2)
    assert {hit.record.id for hit in semantic} == {1, 7}
    hybrid = engine.search(query, mode="hybrid", k=3)
    assert hybrid[0].record.id == 1
    assert hybrid[0].matched == ("keyword", "semantic") and hybrid[0].cosine > 0.4
    assert engine.search("minecraft farm", mode="keyword", k=3)[0].record.id == 3


def test_filters_apply_before_ranking(engine: SearchEngine) -> None:
    hits = engine.search(
        "dark editor theme",
        mode="semantic",
        k=5,
        memory_filter=MemoryFilter(status="active", owner="bob"),
    )
    assert hits and {hit.record.owner for hit in hits} == {"bob"}


def test_index_stays_exact_after_adds_edits_archives(store: Store, engine: SearchEngine) -> None:
    new = store.add({"content": "Prefers light mode in the terminal.", "owner": "carol"}, now=NOW)
    store.edit(2, {"content": "Weekly sync with Bob moved to Thursday at 15:00."}, now=NOW)
    store.archive([7], now=NOW)
    assert engine.semantic is not None
    for query in ("dark theme preference", "when is the meeting with Bob", "terminal colours"):
        nearest = engine.semantic.nearest(query, MemoryFilter(status="active"), 4)
        assert [ident for ident, _ in nearest] == brute_force(store, engine, query, 4)
        assert 7 not in [ident for ident, _ in nearest]
    assert new in [h.record.id for h in engine.search("light terminal theme", mode="semantic", k=2)]
    store.restore([7], now=NOW)
    assert 7 in [h.record.id for h in engine.search("dark theme when coding", mode="semantic", k=2)]


def test_operator_search_does_not_reinforce(store: Store, engine: SearchEngine) -> None:
    before = store.require(1)
    engine.search("editor theme", k=3)
    after = store.require(1)
    assert (after.retrieval_count, after.confidence, after.revision) == (
        before.retrieval_count,
        before.confidence,
        before.revision,
    )


def test_repeated_text_is_embedded_once(store: Store, engine: SearchEngine) -> None:
    assert engine.semantic is not None
    calls: list[int] = []
    original = engine.semantic.embedder.embed

    def counting(texts: list[str], batch_size: int = 32) -> np.ndarray:
        calls.append(len(texts))
        return original(texts, batch_size)

    engine.semantic.embedder.embed = counting  # type: ignore[method-assign]
    store.add_many(
        [{"content": FACTS[0][0], "topic": "preferences", "owner": "alice"}] * 3, now=NOW
    )
    assert calls == []  # the same text was already embedded: its vector is reused


def test_model_change_reembeds_never_mixes(
    store: Store, engine: SearchEngine, tmp_path: Path
) -> None:
    manifest = json.loads(default_manifest_path().read_text())
    manifest["model_id"] = "minilm-copy"
    shutil.copy(default_manifest_path().parent / "tokenizer.json", tmp_path / "tokenizer.json")
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    other = SearchEngine(store)
    other.prepare_semantic(manifest=str(tmp_path / "manifest.json"))
    models = {row[0] for row in store._query("SELECT DISTINCT model_id FROM embedding")}
    assert models == {"minilm-copy"}


def test_search_and_reindex_cli(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    db_path = db
    with Store(db_path) as store:
        store.add_many([{"content": c, "topic": t, "owner": o} for c, t, o in FACTS], now=NOW)
    assert main(["search", "editor colours", "--db", str(db_path), "--json"]) == 0
    out, err = capsys.readouterr()
    assert "keyword search only" in err and json.loads(out)["mode"] == "keyword"
    assert main(["search", "editor", "--db", str(db_path), "--mode", "semantic"]) == 1
    assert "reindex" in capsys.readouterr().err
    assert main(["reindex", "--db", str(db_path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["embedded"] == len(FACTS)
    assert main(["reindex", "--db", str(db_path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["embedded"] == 0
    assert (
        main(
            [
                "search",
                "what editor colours does the user like",
                "--db",
                str(db_path),
                "--json",
                "--k",
                "2",
            ]
        )
        == 0
    )
    result = json.loads(capsys.readouterr().out)
    assert result["mode"] == "hybrid" and result["hits"][0]["id"] == 1
    assert set(result["hits"][0]) >= {"id", "title", "score", "matched", "cosine", "fused"}


def test_search_names_the_model_the_stored_vectors_belong_to(
    db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db_path = db
    with Store(db_path) as store:
        store.add_many([{"content": c, "topic": t, "owner": o} for c, t, o in FACTS], now=NOW)
    manifest = json.loads(default_manifest_path().read_text())
    manifest["model_id"] = "minilm-copy"  # the same files under another model id
    shutil.copy(default_manifest_path().parent / "tokenizer.json", tmp_path / "tokenizer.json")
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    reindex = ["reindex", "--db", str(db_path), "--model-manifest", str(tmp_path / "manifest.json")]
    assert main(reindex) == 0
    capsys.readouterr()
    assert main(["search", "editor", "--db", str(db_path), "--mode", "semantic"]) == 1
    err = capsys.readouterr().err
    assert "the embeddings are from minilm-copy, not all-MiniLM-L6-v2-onnx-int8" in err
    assert "; run: memory-console reindex" in err


def test_vectors_of_the_retired_int8_model_are_replaced_and_reindex_says_why(
    db_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A store embedded with the 8-bit products (whose vectors depended on the CPU and the
    batch) is searched by keyword until reindex replaces them, and both say why."""
    retired = "all-MiniLM-L6-v2-onnx-int8+int8mm1"
    with Store(db_path) as store:
        store.add_many([{"content": c, "topic": t, "owner": o} for c, t, o in FACTS], now=NOW)
    assert main(["reindex", "--db", str(db_path)]) == 0
    with Store(db_path) as store, store.transaction("an old store") as conn:
        conn.execute("UPDATE embedding SET model_id = ?", (retired,))
    capsys.readouterr()
    assert main(["search", "editor", "--db", str(db_path), "--json"]) == 0
    err = capsys.readouterr().err
    assert f"the embeddings are from {retired} (its 8-bit products gave other vectors" in err
    assert main(["reindex", "--db", str(db_path), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["embedded"] == len(FACTS)
    assert report["replaced"] == [
        {"model_id": retired, "vectors": len(FACTS), "why": RETIRED_MODELS[retired]}
    ]
    assert main(["reindex", "--db", str(db_path)]) == 0
    assert "replaced" not in capsys.readouterr().out


def test_owner_and_topic_filters_come_from_the_index_labels(
    store: Store, engine: SearchEngine
) -> None:
    assert engine.semantic is not None
    semantic = engine.semantic
    vector = semantic.embedder.embed_query("dark colours when coding")

    def through_sql(memory_filter: MemoryFilter) -> list[tuple[int, float]]:
        ids, scores = semantic.index.search(vector, 10, store.ids_matching(memory_filter))
        return [(int(i), float(s)) for i, s in zip(ids, scores, strict=True)]

    filters = [
        MemoryFilter(status="active", owner="bob"),
        MemoryFilter(status="active", topic="preferences"),
        MemoryFilter(status="active", owner="alice", topic="preferences"),
        MemoryFilter(status="active", owner="nobody"),
    ]
    for memory_filter in filters:
        assert semantic.nearest_to(vector, memory_filter, 10) == through_sql(memory_filter)
    assert semantic.nearest_to(vector, filters[-1], 10) == []
    bob = [ident for ident, _ in semantic.nearest_to(vector, filters[0], 10)]
    assert bob and {store.require(i).owner for i in bob} == {"bob"}

    # Moving a memory to another topic moves it in the index too (its text is unchanged).
    moved = next(i for i in bob if store.require(i).topic == "preferences")
    store.edit(moved, {"topic": "projects"}, now=NOW + 1)
    preferences = MemoryFilter(status="active", topic="preferences")
    projects = MemoryFilter(status="active", topic="projects")
    assert moved not in [i for i, _ in semantic.nearest_to(vector, preferences, 10)]
    assert moved in [i for i, _ in semantic.nearest_to(vector, projects, 10)]
    assert semantic.nearest_to(vector, projects, 10) == through_sql(projects)


HELD_OUT = [
    "Deploys to production happen only from the release branch, after two approvals.",
    "Waters the tomato plants every other morning.",
    "Her favourite board game is Carcassonne.",
    "The quarterly offsite is in Porto this year.",
]


def test_operator_search_returns_k_however_weak(store: Store) -> None:
    store.add_many([{"content": c, "topic": "general", "owner": "carol"} for c in HELD_OUT])
    engine = SearchEngine(store)
    engine.prepare_semantic()
    for mode in ("semantic", "hybrid"):
        hits = engine.search("rules for shipping code to prod", mode=mode, k=10)
        assert len(hits) == len(HELD_OUT), mode  # every memory, weak or not: no silent floor
        assert hits[0].record.content.startswith("Deploys to production")
        assert {hit.relevance for hit in hits} <= {"strong", "weak", "unrelated"}
        assert "unrelated" in {hit.relevance for hit in hits}  # the board game, the tomatoes
        assert all(hit.breakdown()["relevance"] == hit.relevance for hit in hits)
    exact = engine.search("Carcassonne", mode="hybrid", k=10)
    assert exact[0].record.content.endswith("Carcassonne.") and exact[0].relevance == "strong"


def test_recall_floor_leaves_unrelated_memories_out(store: Store) -> None:
    from memory_console.api import MemoryAPI
    from memory_console.store.settings import RECALL_MIN_COSINE

    store.add_many([{"content": c, "topic": "general", "owner": "carol"} for c in HELD_OUT])
    with MemoryAPI(store, owner="carol") as api:
        kept = api.recall("which board games does she enjoy", k=4, now=NOW)
        assert RECALL_MIN_COSINE == 0.2
        assert [item.record.content for item in kept][0].endswith("Carcassonne.")
        assert len(kept) < len(HELD_OUT)  # the tomatoes and the deploys stay out of a prompt
        assert all(item.scores["cosine"] >= RECALL_MIN_COSINE for item in kept)
        everything = api.recall("which board games does she enjoy", k=4, min_cosine=None, now=NOW)
        assert len(everything) == len(HELD_OUT)
        # A memory holding every word of the query passes the floor whatever its cosine.
        assert api.recall("Carcassonne", k=1, min_cosine=0.99, now=NOW)


def test_fallback_says_why_search_is_keyword_only(store: Store, tmp_path: Path) -> None:
    from memory_console.embed.embedder import ModelError

    store.add_many([{"content": c, "topic": "general", "owner": "carol"} for c in HELD_OUT])
    engine = SearchEngine(store, manifest=tmp_path / "missing" / "manifest.json")
    assert engine.fallback == "keyword search only: semantic search is not ready yet"
    with pytest.raises(ModelError):
        engine.prepare_semantic()
    assert engine.default_mode() == "keyword"
    assert engine.fallback is not None
    assert engine.fallback.startswith("keyword search only: the embedding model did not load")
    hits = engine.search("Carcassonne")
    assert hits[0].relevance == "strong" and hits[0].cosine is None  # every word held
    assert engine.search("board game tomato")[0].relevance == "weak"  # some words held
    ready = SearchEngine(store)
    ready.prepare_semantic()
    assert ready.fallback is None


def test_search_cli_prints_relevance_and_fallback(db: str) -> None:
    from tests.helpers import invoke

    db_path = db
    with Store(db_path) as store:
        store.add_many([{"content": c, "topic": "general", "owner": "carol"} for c in HELD_OUT])
    done = invoke(["search", "board game", "--db", str(db_path), "--json"])
    data = json.loads(done.out)
    assert data["mode"] == "keyword" and data["fallback"].startswith("keyword search only")
    assert "keyword search only" in done.err
    assert data["hits"][0]["relevance"] == "strong"
    assert invoke(["reindex", "--db", str(db_path)]).code == 0
    done = invoke(["search", "rules for shipping code to prod", "--db", str(db_path), "--k", "9"])
    assert done.code == 0 and "keyword search only" not in done.err
    assert "relevance" in done.out and "unrelated" in done.out
    assert "4 hits (hybrid)" in done.out
    data = json.loads(invoke(["search", "x y", "--db", str(db_path), "--json"]).out)
    assert data["fallback"] is None
    # Stored vectors missing for some memories: hybrid search covers the others and says so.
    with Store(db_path) as store:
        store.add({"content": "Plays the cello on Sundays.", "owner": "carol"})
    done = invoke(["search", "music", "--db", str(db_path), "--json"])
    assert json.loads(done.out)["fallback"].startswith("semantic search misses 1 memories")


@pytest.mark.parametrize(
    ("query", "kind"),
    [
        ("rules for shipping code to prod", "question"),
        ("who is her boss", "question"),
        ("continuous integration migration plan", "question"),
        ("INC-4821", "exact"),
        ("checkout_v2_rollout", "exact"),
        ("CrashLoopBackOff", "exact"),
        ('"make it work, make it right"', "exact"),
        ("Lena Vogel", "exact"),
        ("Project Hail Mary", "exact"),
        ("fly deploy", "exact"),
        ("api.northwind.example", "exact"),
    ],
)
def test_query_kind(query: str, kind: str) -> None:
    from memory_console.embed.fusion import query_kind

    assert query_kind(query) == kind


def test_hybrid_fusion_scales_rank_fusion_to_one_and_weighs_by_kind() -> None:
    from memory_console.embed.fusion import RRF_K, hybrid_fusion

    # First in both parts is 1.0; found by one part only, at its first place, is that part's
    # share of the weights; the order follows the summed reciprocal ranks.
    fused = hybrid_fusion("what does she drink in the morning", [1, 2, 3], [1, 3, 4])
    assert [hit.id for hit in fused] == [1, 3, 2, 4]
    assert fused[0].score == pytest.approx(1.0)
    assert fused[0].ranks == {"keyword": 1, "semantic": 1}
    second = (1 / (RRF_K + 3) + 1 / (RRF_K + 2)) / (2 / (RRF_K + 1))
    assert fused[1].score == pytest.approx(second)
    assert all(0.0 < hit.score <= 1.0 for hit in fused)
    # Exact terms trust the keyword ranking more: its first place beats the semantic one's.
    exact = hybrid_fusion("INC-4821", [7, 8], [8, 9])
    assert [hit.id for hit in exact][:2] == [8, 7]
    words = hybrid_fusion("incident review notes", [7, 8], [9, 7])
    assert words[0].id == 7
    assert hybrid_fusion("anything", [], []) == []
    # One part alone still scales to 1.0 at its first place.
    assert hybrid_fusion("coffee", [], [5, 6])[0].score == pytest.approx(1.0)


@settings(max_examples=200, deadline=None)
@given(
    keyword=st.lists(st.integers(1, 40), unique=True, max_size=25),
    semantic=st.lists(st.integers(1, 40), unique=True, max_size=25),
)
def test_hybrid_fusion_never_ranks_a_hit_below_one_it_beats_in_both_parts(
    keyword: list[int], semantic: list[int]
) -> None:
    from memory_console.embed.fusion import hybrid_fusion

    fused = hybrid_fusion("how often does he run", keyword, semantic)
    position = {hit.id: place for place, hit in enumerate(fused)}
    assert set(position) == set(keyword) | set(semantic)
    missing = len(keyword) + len(semantic) + 1

    def rank(ranking: list[int], ident: int) -> int:
        return ranking.index(ident) if ident in ranking else missing

    for a in position:
        for b in position:
            ranks_a = (rank(keyword, a), rank(semantic, a))
            ranks_b = (rank(keyword, b), rank(semantic, b))
            if a != b and all(x <= y for x, y in zip(ranks_a, ranks_b, strict=True)):
                assert position[a] < position[b]  # a dominates b: as good in both, better in one
    assert [hit.score for hit in fused] == sorted((hit.score for hit in fused), reverse=True)
