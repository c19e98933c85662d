"""Forgetting on request, agent side: forget by phrase or id, list_memories, clear with a token."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from memory_console.agent.rules.describe import extract_keywords, make_title
from memory_console.agent.rules.requests import (
    CLEAR,
    FORGET,
    LIST,
    content_words,
    find_request,
    forget_subject,
    holds_every_word,
    strong_match,
)
from memory_console.api import ClearResult, ForgetResult, MemoryAPI
from memory_console.embed.embedder import Embedder, embedding_text
from memory_console.store import MemoryFilter, Store
from memory_console.store.settings import FORGET_THRESHOLD
from tests.helpers import NOW, invoke

LABELLED = Path(__file__).resolve().parent / "data" / "forget_phrases.jsonl"
# Measured by benchmarks/forget_threshold.py at the default: precision 1.00, recall 0.78.
MEASURED_RECALL = 0.78

ACME = "The user works at Acme Corp as a backend engineer."
INITECH = "The user used to work at Initech before joining Acme Corp."
OFFICE = "Acme Corp's main office is in Berlin, near Alexanderplatz."
LISBON = "The user lives in Lisbon."
PEANUTS = "The user is allergic to peanuts."
DARK = "Prefers dark mode in every editor and terminal."


@pytest.fixture
def api(backend_api: MemoryAPI) -> MemoryAPI:
    """forget, list and clear run on SQLite and on PostgreSQL."""
    return backend_api


@pytest.fixture
def keyword_api(db_path: Path) -> Iterator[MemoryAPI]:
    with MemoryAPI(db_path, owner="alice", semantic=False) as opened:
        yield opened


def add(store: Store, owner: str, *contents: str, topic: str = "user_info") -> list[int]:
    rows = [
        {
            "owner": owner,
            "topic": topic,
            "title": make_title(c),
            "content": c,
            "keywords": extract_keywords(c),
        }
        for c in contents
    ]
    return store.add_many(rows, now=NOW)


def events(store: Store) -> dict[int, int]:
    """How many history events each memory has."""
    return {r.id: len(store.history(r.id)) for r in store.iter_memories()}


def status(store: Store, ident: int) -> str:
    return store.require(ident).status


# -- forget by phrase -------------------------------------------------------------------------


def test_forget_that_i_work_at_acme_archives_that_memory_and_stores_nothing(
    api: MemoryAPI,
) -> None:
    acme, initech, office, lisbon = add(api.store, "alice", ACME, INITECH, OFFICE, LISBON)
    before = events(api.store)
    result = api.remember("Forget that I work at Acme Corp", now=NOW)
    assert result.action == "forgot" and result.id == acme
    assert isinstance(result.forgotten, ForgetResult)
    assert [r.id for r in result.forgotten.archived] == [acme]
    assert (
        "cosine 0.6" in result.reason and f"forget_threshold {FORGET_THRESHOLD:g}" in result.reason
    )
    assert api.store.count() == 4  # no new memory
    assert [status(api.store, i) for i in (acme, initech, office, lisbon)] == [
        "archived",
        "active",
        "active",
        "active",
    ]
    after = events(api.store)
    assert after == {**before, acme: before[acme] + 1}  # one archive event, nothing else
    (archived,) = [e for e in api.store.history(acme) if e.kind == "archived"]
    assert archived.query == "Forget that I work at Acme Corp"  # the phrase is the reason


def test_a_weak_phrase_archives_nothing_and_says_what_it_found(api: MemoryAPI) -> None:
    add(api.store, "alice", ACME, INITECH, OFFICE, LISBON)
    result = api.forget("Forget that I live in Berlin", now=NOW)
    assert result.archived == [] and result.protected == []
    assert result.reason.startswith("no memory matches strongly: the nearest, ")
    assert "nothing archived" in result.reason
    assert 1 <= len(result.candidates) <= 3
    (first, score), *_ = result.candidates
    assert first.content == OFFICE and score is not None and score < FORGET_THRESHOLD
    assert api.store.count(MemoryFilter(status="active")) == 4


def test_a_near_tie_is_ambiguous_and_archives_nothing() -> None:
    assert strong_match([(1, 0.50), (2, 0.49)], 0.45) is None
    assert strong_match([(1, 0.50), (2, 0.40)], 0.45) == 1
    assert strong_match([(1, 0.44)], 0.45) is None
    assert strong_match([], 0.45) is None


def test_protected_memories_are_listed_not_archived(api: MemoryAPI) -> None:
    acme, *_ = add(api.store, "alice", ACME, INITECH, LISBON)
    api.store.protect([acme], now=NOW)
    result = api.forget("Forget that I work at Acme Corp", now=NOW)
    assert result.archived == [] and [r.id for r in result.protected] == [acme]
    assert "is protected: not archived" in result.reason
    assert status(api.store, acme) == "active"
    cleared = api.clear(None, now=NOW)
    assert [r.id for r in cleared.protected] == [acme] and cleared.pending == 2
    assert cleared.token is not None
    done = api.clear(cleared.token, now=NOW)
    assert len(done.archived) == 2 and status(api.store, acme) == "active"


def test_forget_by_id_and_another_owners_id_is_refused(api: MemoryAPI) -> None:
    (mine,) = add(api.store, "alice", LISBON)
    (theirs,) = add(api.store, "bob", ACME)
    refused = api.forget(theirs, now=NOW)
    assert refused.archived == [] and "no memory of this owner" in refused.reason
    assert ACME not in refused.reason and status(api.store, theirs) == "active"
    done = api.forget(str(mine), now=NOW)
    assert [r.id for r in done.archived] == [mine] and status(api.store, mine) == "archived"
    assert "already archived" in api.forget(mine, now=NOW).reason
    assert "no memory" in api.forget(999, now=NOW).reason


def test_another_owners_memories_are_never_touched(api: MemoryAPI) -> None:
    (bob_acme,) = add(api.store, "bob", ACME)
    (alice_acme,) = add(api.store, "alice", ACME)
    result = api.remember("Forget that I work at Acme Corp", now=NOW)
    assert [r.id for r in result.forgotten.archived] == [alice_acme]  # type: ignore[union-attr]
    cleared = api.clear(api.clear(None, now=NOW).token, now=NOW)
    assert cleared.archived == []  # alice has nothing left
    listed = api.list_memories()
    assert listed == []
    assert status(api.store, bob_acme) == "active"
    assert [r.id for r in api.list_memories(owner="bob")] == [bob_acme]


def test_without_the_embedder_a_phrase_needs_one_memory_holding_every_word(
    keyword_api: MemoryAPI,
) -> None:
    acme, initech, _, lisbon = add(keyword_api.store, "alice", ACME, INITECH, OFFICE, LISBON)
    both = keyword_api.forget("my work at Acme", now=NOW)  # ACME and INITECH hold both words
    assert both.archived == [] and {r.id for r, _ in both.candidates} == {acme, initech}
    assert "keyword rule, the embedder is off" in both.reason and "2 memories do" in both.reason
    one = keyword_api.forget("Forget that I live in Lisbon", now=NOW)
    assert [r.id for r in one.archived] == [lisbon]
    none = keyword_api.forget("Forget that I drive a Tesla", now=NOW)
    assert none.archived == [] and "no memory holds them" in none.reason


def test_the_forget_threshold_is_a_store_setting(db_path: Path, embedder: Embedder) -> None:
    with Store(db_path) as store:
        add(store, "alice", ACME, INITECH)
    done = invoke(["config", "set", "forget_threshold", "0.9", "--db", str(db_path)])
    assert done.code == 0, done.err
    shown = json.loads(invoke(["config", "--db", str(db_path), "--json"]).out)
    assert shown["forget_threshold"] == {"value": 0.9, "source": "store"}
    with MemoryAPI(db_path, owner="alice", embedder=embedder) as strict:
        assert strict.forget_threshold == 0.9
        result = strict.forget("Forget that I work at Acme Corp", now=NOW)
        assert result.archived == [] and "forget_threshold 0.9" in result.reason
    assert invoke(["config", "set", "forget_threshold", "1.5", "--db", str(db_path)]).code == 1


def test_the_default_threshold_archives_no_memory_a_phrase_does_not_mean(
    embedder: Embedder,
) -> None:
    rows = [json.loads(line) for line in LABELLED.read_text(encoding="utf-8").splitlines()]
    memories = [r for r in rows if "memory" in r]
    phrases = [r for r in rows if "phrase" in r]
    assert len(memories) >= 30 and len(phrases) >= 40
    assert sum(1 for p in phrases if not p["means"]) >= 8
    keys = [m["memory"] for m in memories]
    vectors = embedder.embed(
        [
            embedding_text(make_title(m["content"]), m["content"], extract_keywords(m["content"]))
            for m in memories
        ]
    )
    right = wrong = 0
    for phrase in phrases:
        subject = forget_subject(phrase["phrase"])
        assert subject is not None
        cosine = vectors @ embedder.embed_query(subject)
        best = strong_match(list(enumerate(cosine.tolist())), FORGET_THRESHOLD)
        if best is not None:
            if keys[best] in phrase["means"]:
                right += 1
            else:
                wrong += 1
    wanted = sum(len(p["means"]) for p in phrases)
    assert wrong == 0
    assert right / wanted >= MEASURED_RECALL - 0.05


def test_the_keyword_rule_never_archives_a_memory_a_phrase_does_not_mean() -> None:
    rows = [json.loads(line) for line in LABELLED.read_text(encoding="utf-8").splitlines()]
    memories = {r["memory"]: r["content"] for r in rows if "memory" in r}
    for phrase in (r for r in rows if "phrase" in r):
        words = content_words(forget_subject(phrase["phrase"]) or "")
        holding = [key for key, text in memories.items() if holds_every_word(words, text)]
        if len(holding) == 1:
            assert holding[0] in phrase["means"], phrase


# -- list ---------------------------------------------------------------------------------


def test_what_do_you_remember_about_me_lists_and_stores_nothing(api: MemoryAPI) -> None:
    lisbon, peanuts = add(api.store, "alice", LISBON, PEANUTS)
    (dark,) = add(api.store, "alice", DARK, topic="preferences")
    add(api.store, "bob", ACME)
    api.store.forget([peanuts], now=NOW)
    before = events(api.store)
    result = api.remember("What do you remember about me?", now=NOW)
    assert result.action == "listed" and result.listed is not None
    assert [r.id for r in result.listed] == [dark, lisbon]  # by topic; active only; alice's
    assert api.store.count() == 4 and events(api.store) == before
    shown = api.remember("Show my stored preferences", now=NOW)
    assert [r.id for r in shown.listed or []] == [dark] and "about preferences" in shown.reason


def test_list_memories_orders_by_topic_then_newest(api: MemoryAPI) -> None:
    old = api.store.add({"owner": "alice", "topic": "user_info", "content": LISBON}, now=NOW)
    new = api.store.add({"owner": "alice", "topic": "user_info", "content": ACME}, now=NOW + 60)
    pref = api.store.add({"owner": "alice", "topic": "preferences", "content": DARK}, now=NOW)
    assert [r.id for r in api.list_memories()] == [pref, new, old]
    assert [r.id for r in api.list_memories("user_info")] == [new, old]


# -- clear --------------------------------------------------------------------------------


def test_clear_all_my_memories_needs_the_token(api: MemoryAPI, db: str) -> None:
    db_path = db
    ids = add(api.store, "alice", ACME, LISBON, PEANUTS)
    first = api.remember("Clear all my memories", now=NOW)
    assert first.action == "confirm" and isinstance(first.cleared, ClearResult)
    assert first.cleared.archived == [] and first.cleared.pending == 3
    token = first.cleared.token
    assert token and api.store.count(MemoryFilter(status="active")) == 3
    assert api.store.count() == 3  # the request is not stored either
    wrong = api.clear("0" * len(token), now=NOW)
    assert wrong.archived == [] and "stale or wrong" in wrong.reason and wrong.token is None
    assert api.clear(token, owner="bob", now=NOW).archived == []  # bound to the owner
    # A new memory between the two calls makes the token stale.
    (late,) = add(api.store, "alice", DARK)
    stale = api.clear(token, now=NOW)
    assert stale.archived == [] and "stale" in stale.reason
    again = api.clear(None, now=NOW)
    assert again.pending == 4 and again.token != token
    # Any MemoryAPI object on the store checks it alike: nothing is kept in the object.
    with MemoryAPI(db_path, owner="alice", semantic=False) as other:
        done = other.clear(again.token, now=NOW)
    assert sorted(r.id for r in done.archived) == sorted([*ids, late])
    assert all(status(api.store, i) == "archived" for i in [*ids, late])
    event = [e for e in api.store.history(late) if e.kind == "archived"][0]
    assert event.query == "cleared at the user's request"


def test_forget_everything_about_me_is_a_clear(api: MemoryAPI) -> None:
    add(api.store, "alice", ACME)
    result = api.remember("Please forget everything about me.", now=NOW)
    assert result.action == "confirm" and api.store.count(MemoryFilter(status="active")) == 1


# -- recognising requests -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "kind", "subject"),
    [
        ("Forget that I work at Acme Corp", FORGET, "I work at Acme Corp"),
        ("forget about my sister Marta", FORGET, "my sister Marta"),
        ("Please delete my email address.", FORGET, "my email address"),
        ("Delete what you know about my brother", FORGET, "my brother"),
        ("Remove my home address from your memory", FORGET, "my home address"),
        ("Erase the fact that I'm allergic to peanuts", FORGET, "I'm allergic to peanuts"),
        ("Ok, can you forget that I live in Lisbon?", FORGET, "I live in Lisbon"),
        ("Clear all my memories", CLEAR, None),
        ("Forget everything about me", CLEAR, None),
        ("Delete all my data, please", CLEAR, None),
        ("What do you remember about me?", LIST, None),
        ("What do you know about me", LIST, None),
        ("Show my stored preferences", LIST, None),
    ],
)
def test_requests_are_recognised(text: str, kind: str, subject: str | None) -> None:
    request = find_request(text)
    assert request is not None and request.kind == kind
    assert request.subject == subject


@pytest.mark.parametrize(
    "text",
    [
        "Don't forget that I work at Acme Corp",
        "Do not forget my birthday is in May",
        "Never forget my birthday",
        "I want to forget my ex's birthday party",
        "I forgot my keys at home yesterday",
        "Delete the old branch after the merge",
        "Please remove the unused import",
        "Remember to delete the staging database on Friday",
        "Forget it, let's move on",
        "What do you remember about Paris?",
    ],
)
def test_near_misses_are_not_requests(text: str) -> None:
    assert find_request(text) is None


def test_dont_forget_is_still_stored_and_near_misses_too(keyword_api: MemoryAPI) -> None:
    kept = keyword_api.remember("Don't forget that I work at Acme Corp", now=NOW)
    assert kept.action == "stored" and kept.content == "I work at Acme Corp"
    told = keyword_api.remember("I want to forget my ex's birthday party", now=NOW)
    assert told.action == "stored"
    assert keyword_api.store.count() == 2


def test_scan_turn_keeps_no_fact_of_a_forget_request(keyword_api: MemoryAPI) -> None:
    results = keyword_api.scan_turn("Forget that I work at Acme Corp", now=NOW)
    assert results and all(r.result.action == "skipped" for r in results)
    assert "asks to forget" in results[0].result.reason
    assert keyword_api.store.count() == 0
    stated = keyword_api.scan_turn("Remember that I work at Acme Corp.", now=NOW)
    assert "stored" in {r.result.action for r in stated}
