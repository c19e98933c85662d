"""Memory banks keep their lifespans: sessions, end_session, the expire-banks pass, tier filters."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memory_console.api import MemoryAPI
from memory_console.store import MemoryFilter, Store
from tests.helpers import ISO_NOW, NOW, invoke

HOUR = 3600.0


@pytest.fixture
def api(db_path: Path) -> Iterator[MemoryAPI]:
    with MemoryAPI(db_path, owner="alice", semantic=False) as opened:
        yield opened


def note(content: str, tier: str, session: str | None = None, **fields: Any) -> dict[str, Any]:
    metadata = {"session_id": session} if session else {}
    return {"content": content, "tier": tier, "owner": "alice", "metadata": metadata, **fields}


def test_end_session_archives_that_sessions_working_and_short_term_memories(
    api: MemoryAPI,
) -> None:
    ids = api.store.add_many(
        [
            note("Editing the deploy checklist", "working", "s1"),
            note("Waiting for the deploy reply", "short_term", "s1"),
            note("Editing the onboarding guide", "working", "s2"),
            note("Prefers small deploys", "long_term", "s1"),  # permanent, session or not
            note("Pinned scratch note", "working", "s1", is_protected=True),
            {**note("Bob's scratch note", "working", "s1"), "owner": "bob"},
        ],
        now=NOW,
    )
    archived = api.end_session("s1", now=NOW + HOUR)
    assert archived == ids[:2]
    statuses = [api.store.require(i).status for i in ids]
    assert statuses == ["archived", "archived"] + ["active"] * 4
    for ident in archived:
        event = api.store.history(ident)[-1]
        assert (event.kind, event.actor, event.query) == ("archived", "api", "session ended")
        assert api.store.require(ident).metadata["forget_reason"] == "session ended"
    assert api.end_session("s1", now=NOW + 2 * HOUR) == []  # nothing left to end
    api.store.restore(archived)  # restorable like any archive
    assert {api.store.require(i).status for i in archived} == {"active"}
    with pytest.raises(ValueError, match="session_id"):
        api.end_session("")


def test_recall_returns_working_and_short_term_memories_only_with_their_session(
    api: MemoryAPI,
) -> None:
    ids = dict(
        zip(
            ("working s1", "short s1", "working s2", "long", "episode"),
            api.store.add_many(
                [
                    note("deploy scratch: step three of the deploy", "working", "s1"),
                    note("deploy question asked in this session", "short_term", "s1"),
                    note("deploy scratch of another session", "working", "s2"),
                    note("Prefers deploy on Tuesdays", "long_term"),
                    note("The deploy failed in March", "episodic"),
                ],
                now=NOW,
            ),
            strict=True,
        )
    )

    def recalled(**options: Any) -> set[str]:
        found = {hit.id for hit in api.recall("deploy", k=10, now=NOW, **options)}
        return {name for name, ident in ids.items() if ident in found}

    assert recalled() == {"long", "episode"}
    assert recalled(session_id="s1") == {"working s1", "short s1", "long", "episode"}
    assert recalled(session_id="s2") == {"working s2", "long", "episode"}
    assert recalled(tier="working") == set()  # no session: none of its memories
    assert recalled(tier="working", session_id="s1") == {"working s1"}
    assert recalled(tier=["long_term", "short_term"], session_id="s1") == {"short s1", "long"}
    assert recalled(tier="episodic") == {"episode"}
    with pytest.raises(ValueError, match="unknown tier 'scratch'"):
        api.recall("deploy", tier="scratch")


def test_routed_working_memories_carry_their_session_and_end_with_it(api: MemoryAPI) -> None:
    document = {
        "memory_actions": [
            {"target_memory_bank": "WORKING", "action_type": "STORE", "content": "Step 2 of 5."},
            {"target_memory_bank": "STM", "action_type": "STORE", "content": "Asked about CI."},
            {"target_memory_bank": "LTM", "action_type": "STORE", "content": "Uses CI daily."},
        ]
    }
    refused = api.apply_actions(document, now=NOW)
    assert not refused.ok and "a WORKING memory belongs to a session" in refused.reason
    result = api.apply_actions(document, session_id="chat-7", now=NOW)
    assert result.ok
    working, short, long = (api.store.require(o.id or 0) for o in result.outcomes)
    assert working.metadata["session_id"] == short.metadata["session_id"] == "chat-7"
    assert "session_id" not in long.metadata
    assert api.end_session("chat-7", now=NOW) == [working.id, short.id]
    assert api.store.require(long.id).status == "active"


def dry_run(db_path: Path, *options: str) -> dict[str, Any]:
    result = invoke(["maintain", "--db", str(db_path), "--now", ISO_NOW, "--json", *options])
    assert result.code == 0, result.err
    document: dict[str, Any] = json.loads(result.out)
    return document


def test_expire_banks_archives_memories_idle_past_their_banks_ttl(db_path: Path) -> None:
    with Store(db_path, actor="test") as store:
        ids = store.add_many(
            [
                note("old scratch", "working", "s1"),
                note("old session note", "short_term", "s1"),
                note("old fact", "long_term"),
                note("old pinned scratch", "working", "s1", is_protected=True),
            ],
            now=NOW - 30 * HOUR,
        )
        ids += store.add_many(
            [note("recent scratch", "working", "s2"), note("recent note", "short_term", "s2")],
            now=NOW - 2 * HOUR,
        )
        used = store.add(note("scratch still in use", "working", "s3"), now=NOW - 5 * HOUR)
        store.record_access([used], now=NOW - 10 * 60)  # idle from its last access
    plan = dry_run(db_path, "--dry-run")
    assert plan["passes"][0] == "expire-banks"
    changes = [c for c in plan["changes"] if c["pass"] == "expire-banks"]
    assert [c["id"] for c in changes] == [ids[0], ids[1], ids[4]]
    assert changes[0]["reason"] == (
        "working memory idle for 30 h, past its TTL of 1 h (its session never ended)"
    )
    assert changes[1]["reason"].startswith("short-term memory idle for 30 h, past its TTL of 24 h")
    assert plan["figures"]["expire-banks"] == {"expired_working": 2, "expired_short_term": 1}
    longer = dry_run(db_path, "--dry-run", "--passes", "expire-banks", "--working-ttl-hours", "3")
    assert [c["id"] for c in longer["changes"]] == [ids[0], ids[1]]

    applied = dry_run(db_path, "--apply", "--passes", "expire-banks")
    with Store(db_path, actor="test") as store:
        archived = store.ids_matching(MemoryFilter(status="archived")).tolist()
        assert archived == [ids[0], ids[1], ids[4]]
        (event,) = [e for e in store.history(ids[0]) if e.kind == "archived"]
        assert (event.run_id, event.actor) == (applied["run_id"], "expire-banks")
        assert event.query == changes[0]["reason"]
    undone = invoke(["undo", str(applied["run_id"]), "--db", str(db_path), "--now", ISO_NOW])
    assert undone.code == 0, undone.err
    with Store(db_path, actor="test") as store:
        assert store.count(MemoryFilter(status="archived")) == 0


def test_search_takes_a_tier_and_a_session(db_path: Path) -> None:
    with Store(db_path, actor="test") as store:
        ids = store.add_many(
            [
                note("release scratch", "working", "s1"),
                note("release scratch two", "working", "s2"),
                note("release notes are due Friday", "long_term"),
            ],
            now=NOW,
        )

    def hits(*options: str) -> list[int]:
        argv = ["search", "release", "--mode", "keyword", "--json", "--db", str(db_path)]
        result = invoke([*argv, *options])
        assert result.code == 0, result.err
        return sorted(hit["id"] for hit in json.loads(result.out)["hits"])

    assert hits() == ids  # the operator sees every bank
    assert hits("--tier", "working") == ids[:2]
    assert hits("--tier", "working", "--session", "s2") == [ids[1]]
    assert hits("--tier", "long_term", "--tier", "working", "--session", "s1") == [ids[0], ids[2]]
    assert invoke(["search", "x", "--tier", "scratch", "--db", str(db_path)]).code == 2


def test_a_tier_filter_finds_the_same_nearest_as_the_id_set_from_sqlite(db_path: Path) -> None:
    """Recall without a session asks for the permanent tiers: the vector index ranks within
    the owner's label and keeps those tiers; its answer equals ranking among the ids SQLite
    finds, also when working memories crowd the top (then it asks SQLite)."""
    from memory_console.embed.embedder import Embedder
    from memory_console.embed.semantic import SemanticIndex

    with Store(db_path, actor="test") as store:
        rows = [
            note(f"The coffee order number {n} was a flat white", "working", "s1")
            for n in range(40)
        ]
        rows += [
            note(f"Fact {n}: the user's {w} is blue", "long_term")
            for n, w in enumerate(
                ["car", "bike", "door", "kettle", "scarf", "mug", "tent", "kayak"]
            )
        ]
        rows += [note("The user ordered coffee at the station", "episodic")]
        rows += [{**note("Bob's coffee is black", "long_term"), "owner": "bob"}]
        store.add_many(rows, now=NOW)
        semantic = SemanticIndex(store, Embedder.load())
        semantic.sync()
        scope = MemoryFilter(owner="alice", status="active", tiers=("long_term", "episodic"))
        for query in ("coffee order", "what colour is the car", "flat white"):
            vector = semantic.embedder.embed_query(query)
            for k in (1, 3, 12):
                ids, scores = semantic.index.search(vector, k, store.ids_matching(scope))
                expected = [(int(i), round(float(s), 5)) for i, s in zip(ids, scores, strict=True)]
                found = [(i, round(c, 5)) for i, c in semantic.nearest_to(vector, scope, k)]
                assert found == expected, (query, k)
