"""The ranking's rules: recall keeps relevance first (a memory's strength reorders only hits of
similar relevance), and a hit's relevance word never reads stronger than one ranked above it."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memory_console.agent.recall import STRENGTH_SHARE, effective_of
from memory_console.api import MemoryAPI
from memory_console.embed.hits import RELEVANCE_WORDS, SearchHit
from memory_console.embed.search import SearchEngine
from memory_console.store import MemoryFilter, MemoryRecord, Store
from tests.helpers import NOW

DAY = 86_400.0


@pytest.fixture
def api(backend_api: MemoryAPI) -> MemoryAPI:
    return backend_api


RECORD = MemoryRecord(
    id=1, owner="o", topic="general", tier="long_term", memory_type="semantic",
    title="Plays chess", content="Plays chess on Sundays", keywords=[], source="api",
    importance=0.5, confidence=0.8, base_confidence=0.8, retrieval_count=0, created_at=NOW,
    updated_at=NOW, last_accessed_at=None, decay_policy="exponential", is_protected=False,
    status="active", consolidated_into=None, metadata={}, external_id=None, revision=1,
)  # fmt: skip


def hit(relevance: float, strength: float) -> SearchHit:
    return SearchHit(
        RECORD, score=relevance, matched=("keyword",), cosine=0.5, fused=relevance,
        effective=strength,
    )  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(
    better=st.floats(0.0, 1.0),
    worse=st.floats(0.0, 1.0),
    strengths=st.tuples(st.floats(0.0, 1.0), st.floats(0.0, 1.0)),
)
def test_strength_never_lifts_a_hit_over_one_clearly_more_relevant(
    better: float, worse: float, strengths: tuple[float, float]
) -> None:
    a, b = hit(better, strengths[0]), hit(worse, strengths[1])
    if better * (1 - STRENGTH_SHARE) > worse:
        assert effective_of(a, [a, b], NOW) > effective_of(b, [a, b], NOW)
    # Strength moves a score by at most its share, and equal relevance is ordered by strength.
    assert better * (1 - STRENGTH_SHARE) <= effective_of(a, [a], NOW) <= better
    if better == worse and strengths[0] > strengths[1] + 1e-6 and better > 1e-6:
        assert effective_of(a, [a, b], NOW) > effective_of(b, [a, b], NOW)


def test_recall_puts_an_old_clear_answer_above_new_important_near_misses(api: MemoryAPI) -> None:
    # The answer is a year old and of low importance; the near misses are from yesterday, at
    # full importance, and share the query's topic but not its answer.
    (answer,) = api.store.add_many(
        [{"content": "Alice's dentist is Dr. Okafor on Elm Street", "owner": "alice",
          "importance": 0.2}],
        now=NOW - 365 * DAY,
    )  # fmt: skip
    api.store.add_many(
        [
            {"content": text, "owner": "alice", "importance": 1.0}
            for text in (
                "Alice brushes her teeth twice a day",
                "Alice bought a new electric toothbrush",
                "Alice walks down Elm Street to work",
                "Alice has a doctor's appointment next week",
            )
        ],
        now=NOW - DAY,
    )
    ranked = api.rank("who is alice's dentist", k=3, now=NOW)
    assert next(iter(ranked)) == answer
    first = ranked[answer]
    assert first["effective"] == max(scores["effective"] for scores in ranked.values())


@pytest.mark.parametrize(
    "query",
    ["how does she get to work", "tea", "Elm Street", "what is her cat called", "qwxz flurb"],
)
def test_a_relevance_word_never_reads_stronger_than_one_ranked_above_it(
    store: Store, query: str
) -> None:
    store.add_many(
        [
            {"content": text, "owner": "o"}
            for text in (
                "Drinks green tea every morning",
                "Cycles to work along Elm Street",
                "Her cat is called Miso",
                "Takes the tram when it rains",
                "Street food in Hanoi was the best part of the trip",
                "Works from home on Fridays",
                "Keeps a jar of loose-leaf tea at the office",
            )
        ],
        now=NOW,
    )
    engine = SearchEngine(store)
    engine.prepare_semantic()
    for mode in ("hybrid", "semantic", "keyword"):
        hits = engine.search(query, mode=mode, k=7, memory_filter=MemoryFilter(owner="o"), now=NOW)
        words = [RELEVANCE_WORDS.index(hit.relevance) for hit in hits]
        assert words == sorted(words), (mode, [(h.record.content, h.relevance) for h in hits])
        # The number shown is the score the list is sorted by (keyword search: within a word,
        # as the memories holding every word of the query come first).
        for word in RELEVANCE_WORDS:
            scores = [hit.score for hit in hits if mode != "keyword" or hit.relevance == word]
            assert scores == sorted(scores, reverse=True), mode


async def test_the_console_shows_words_and_numbers_in_the_order_of_its_list(store: Store) -> None:
    from memory_console.settings import Settings
    from memory_console.tui.app import make_app
    from memory_console.tui.screens.main import MainScreen
    from tests.helpers import settle, where

    store.add_many(
        [
            {"content": text, "owner": "o"}
            for text in (
                "Drinks green tea every morning",
                "Keeps a jar of loose-leaf tea at the office",
                "Cycles to work along Elm Street",
                "Her cat is called Miso",
                "Takes the tram when it rains",
                "Prefers coffee after lunch",
            )
        ],
        now=NOW,
    )
    engine = SearchEngine(store)
    engine.prepare_semantic()
    app = make_app(Settings(db=where(store)), store, now=NOW, search=engine, semantic=False)
    app.typing.window = 0.0
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await pilot.press("slash", *"what does she drink in the morning", "enter")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, MainScreen) and screen.table.search_mode
        hits = [screen.table.hits[record.id] for record in screen.table.records]
        assert len(hits) == 6 and all(hit.fused is not None for hit in hits)  # hybrid search
        words = [RELEVANCE_WORDS.index(hit.relevance) for hit in hits]
        assert words == sorted(words)
        assert [hit.score for hit in hits] == sorted((hit.score for hit in hits), reverse=True)
        assert hits[0].record.content.startswith("Drinks green tea")
