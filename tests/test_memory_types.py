"""Memory types and starting values: events fade by default, facts stay, directives count fully.

The classifier's accuracy on a labelled set, remember and scan_turn, import (ours and the peer
formats), the classify and protect-facts passes, the health screen's never-decay figures, and
an operator's type edits from the CLI and the console.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Select

from memory_console.agent.rules.classify import classify_type
from memory_console.api import MemoryAPI
from memory_console.maintenance import registry
from memory_console.maintenance.health import never_decaying, project_tiers
from memory_console.store import MemoryFilter, Store
from memory_console.tui.screens.edit import EditScreen
from memory_console.tui.screens.main import MainScreen
from tests.helpers import NOW, console, invoke, open_on, settle

LABELLED = Path(__file__).parent / "data" / "memory_types.jsonl"
FORMATS = Path(__file__).parent / "data" / "formats"
DAY = 86400.0
# Floors under the measured accuracy (all 167 sentences: 0.92; the 48 written after the rules
# and never used to change them: 0.71), so that a regression shows and noise does not.
FLOOR_ALL = 0.88
FLOOR_HELD_OUT = 0.65


def labelled() -> list[dict[str, Any]]:
    return [json.loads(line) for line in LABELLED.read_text("utf-8").splitlines() if line]


# -- the rules --------------------------------------------------------------------------------


def test_the_labelled_set_is_large_and_varied() -> None:
    rows = labelled()
    assert len(rows) >= 100
    assert len({row["text"] for row in rows}) == len(rows)
    counts = Counter(row["type"] for row in rows)
    assert set(counts) == {"semantic", "episodic", "procedural"}
    assert min(counts.values()) >= 25


def test_classifier_accuracy_on_the_labelled_set() -> None:
    rows = labelled()
    confusion: Counter[tuple[str, str]] = Counter()
    for row in rows:
        confusion[(row["type"], classify_type(row["text"])[0])] += 1
    right = sum(n for (want, got), n in confusion.items() if want == got)
    held = [row for row in rows if row.get("held_out")]
    held_right = sum(classify_type(row["text"])[0] == row["type"] for row in held)
    assert len(held) >= 40
    assert right / len(rows) >= FLOOR_ALL, sorted(confusion.items())
    assert held_right / len(held) >= FLOOR_HELD_OUT, sorted(confusion.items())


@pytest.mark.parametrize(
    ("text", "memory_type", "cue"),
    [
        ("I'm building an iron farm", "episodic", "something under way"),
        ("The user's name is Priya.", "semantic", "an identity"),
        ("To deploy, run make release and tag the commit.", "procedural", "a how-to"),
        ("Blue.", "episodic", "the default"),
    ],
)
def test_the_reason_names_the_deciding_cue(text: str, memory_type: str, cue: str) -> None:
    found, reason = classify_type(text)
    assert found == memory_type
    assert reason.startswith(f"{memory_type}: ") and cue in reason


# -- remember and scan_turn ---------------------------------------------------------------------


@pytest.fixture
def api(db_path: Path) -> Any:
    with MemoryAPI(db_path, owner="alice", semantic=False) as opened:
        yield opened


def test_remember_classifies_when_no_type_is_given(api: MemoryAPI) -> None:
    farm = api.remember("I'm building an iron farm", now=NOW)
    name = api.remember("Remember that my name is Ali", now=NOW)
    given = api.remember("The user likes green tea", memory_type="procedural", now=NOW)
    types = {r.id: api.store.require(r.id).memory_type for r in (farm, name, given)}
    assert [types[farm.id], types[name.id], types[given.id]] == [
        "episodic",
        "semantic",
        "procedural",
    ]


def test_inferred_memories_start_at_half_confidence_directives_at_full(api: MemoryAPI) -> None:
    inferred = api.store.require(api.remember("The user is planning a trip", now=NOW).id)
    directive = api.store.require(api.remember("Please remember I use vim", now=NOW).id)
    assert (inferred.confidence, inferred.base_confidence, inferred.importance) == (0.5, 0.5, 0.5)
    assert (directive.confidence, directive.importance) == (1.0, 1.0)


@pytest.mark.parametrize(
    ("message", "content", "phrase"),
    [
        ("I always fly with Lufthansa", "I always fly with Lufthansa.", "i always"),
        (
            "Oh, and I never take red-eye flights. Book Rome.",
            "I never take red-eye flights.",
            "i never",
        ),
    ],
)
def test_i_always_and_i_never_are_directives(
    api: MemoryAPI, message: str, content: str, phrase: str
) -> None:
    result = api.remember(message, now=NOW)
    record = api.store.require(result.id)
    assert (record.content, record.source, record.importance, record.confidence) == (
        content,
        "user_directive",
        1.0,
        1.0,
    )
    assert record.metadata["directive"] == phrase
    assert record.memory_type == "semantic", "a standing rule is a preference"


def test_a_question_with_always_is_no_directive(api: MemoryAPI) -> None:
    record = api.store.require(api.remember("Do I always have to sign in?", now=NOW).id)
    assert record.source == "session_review" and record.importance == 0.5


def test_scan_turn_classifies_what_it_stores(api: MemoryAPI) -> None:
    message = "My name is Ali. Remember that the demo is next Friday."
    history = ["Hi, my name is Ali", "So the demo is next Friday."]
    results = api.scan_turn(message, history=history, now=NOW)
    stored = {r.candidate.kind: api.store.require(r.result.id) for r in results if r.result.id}
    assert stored["name"].memory_type == "semantic"
    assert stored["explicit"].memory_type == "episodic"


def test_the_store_default_type_is_episodic(store: Store) -> None:
    ident = store.add({"content": "Something happened"}, now=NOW)
    assert store.require(ident).memory_type == "episodic"


# -- import -------------------------------------------------------------------------------------


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), "utf-8")
    return path


def types_of(db: Path) -> dict[str, str]:
    with Store(db, read_only=True) as store:
        return {r.content: r.memory_type for r in store.iter_memories(MemoryFilter())}


def test_jsonl_import_keeps_given_types_and_classifies_the_rest(tmp_path: Path) -> None:
    source = write_jsonl(
        tmp_path / "in.jsonl",
        [
            {"content": "The user went to a concert last weekend.", "created_at": NOW},
            {"content": "The user prefers tea over coffee.", "created_at": NOW},
            {"content": "The user met Dana yesterday.", "memory_type": "semantic"},
        ],
    )
    db = tmp_path / "s.db"
    assert invoke(["import", str(source), "--db", str(db), "--now", "2026-11-18"]).code == 0
    assert types_of(db) == {
        "The user went to a concert last weekend.": "episodic",
        "The user prefers tea over coffee.": "semantic",
        "The user met Dana yesterday.": "semantic",
    }
    other = tmp_path / "t.db"
    result = invoke(["import", str(source), "--db", str(other), "--type", "procedural"])
    assert result.code == 0
    assert sorted(types_of(other).values()) == ["procedural", "procedural", "semantic"]


def test_an_untyped_import_then_decays_its_episodic_memories(tmp_path: Path) -> None:
    events = [f"The user had a meeting about topic {n} on Tuesday." for n in range(4)]
    facts = ["The user's name is Priya.", "The user prefers dark mode."]
    source = write_jsonl(
        tmp_path / "in.jsonl",
        [{"content": text, "created_at": NOW - 200 * DAY} for text in events + facts],
    )
    db = tmp_path / "s.db"
    assert invoke(["import", str(source), "--db", str(db)]).code == 0
    later = "2026-11-18T00:00:00Z"
    for policy in ("relevance", "periodic"):
        result = invoke(
            ["decay", "--db", str(db), "--dry-run", "--json", "--now", later, "--policy", policy]
        )
        assert result.code == 0, result
        document = json.loads(result.out)
        assert document["eligible"] == len(events), policy
        with Store(db, read_only=True) as store:
            decayed = {store.require(c["id"]).content for c in document["changes"]}
        assert decayed <= set(events) and decayed


def test_peer_formats_type_mapping(tmp_path: Path) -> None:
    mem0 = write_jsonl(
        tmp_path / "mem0.jsonl",
        [
            {
                "id": "7d0c1f4e-0000-4000-8000-000000000001",
                "memory": "Run the linter before each commit",
                "user_id": "alice",
                "metadata": {"memory_type": "procedural_memory"},
            },
            {
                "id": "7d0c1f4e-0000-4000-8000-000000000002",
                "memory": "Alice flew to Denver yesterday",
                "user_id": "alice",
            },
            {
                "id": "7d0c1f4e-0000-4000-8000-000000000003",
                "memory": "Alice prefers window seats",
                "user_id": "alice",
            },
        ],
    )
    db = tmp_path / "s.db"
    assert invoke(["import", str(mem0), "--db", str(db), "--format", "mem0"]).code == 0
    assert types_of(db) == {
        "Run the linter before each commit": "procedural",
        "Alice flew to Denver yesterday": "episodic",
        "Alice prefers window seats": "semantic",
    }
    letta = tmp_path / "l.db"
    args = ["import", str(FORMATS / "letta_agent.af"), "--db", str(letta), "--type", "episodic"]
    assert invoke(args).code == 0
    with Store(letta, read_only=True) as store:
        blocks = [r for r in store.iter_memories(MemoryFilter()) if r.tier == "working"]
    assert blocks and all(r.memory_type == "semantic" and r.is_protected for r in blocks)


# -- the passes ---------------------------------------------------------------------------------


def seeded(tmp_path: Path) -> Path:
    db = tmp_path / "s.db"
    with Store(db, actor="test") as store:
        rows = [
            {"content": "The user had a job interview yesterday.", "memory_type": "semantic"},
            {"content": "The user's name is Priya.", "memory_type": "episodic"},
            {"content": "The user met Bo last week.", "memory_type": "semantic", "is_protected": 1},
            {"content": "The user's email is p@example.com.", "confidence": 0.95},
            {"content": "The user lives in Oslo.", "memory_type": "semantic", "confidence": 0.8},
            {"content": "To deploy, run make.", "memory_type": "procedural", "confidence": 0.99},
        ]
        for row in rows:
            row.setdefault("memory_type", "semantic")
            store.add(row, now=NOW - 10 * DAY)
    return db


def test_neither_pass_runs_by_default() -> None:
    assert "classify" in registry.registered_passes()
    assert "protect-facts" in registry.registered_passes()
    assert not {"classify", "protect-facts"} & set(registry.maintain_passes())


def test_classify_pass_previews_applies_and_undoes(tmp_path: Path) -> None:
    db = seeded(tmp_path)
    before = types_of(db)
    base = ["maintain", "--db", str(db), "--passes", "classify", "--json"]
    preview = json.loads(invoke([*base, "--dry-run"]).out)
    changes = {c["id"]: c for c in preview["changes"]}
    assert set(changes) == {1, 2}, "protected memory 3 is skipped, the rest agree"
    assert changes[1]["after"] == "episodic" and "yesterday" in changes[1]["reason"]
    assert changes[2]["after"] == "semantic" and "identity" in changes[2]["reason"]
    assert types_of(db) == before, "a dry run writes nothing"
    applied = json.loads(invoke([*base, "--apply"]).out)
    assert types_of(db)["The user had a job interview yesterday."] == "episodic"
    with Store(db, read_only=True) as store:
        (event,) = [e for e in store.history(1) if e.kind == "edited"]
    assert event.before == {"memory_type": "semantic"}
    assert event.after == {"memory_type": "episodic"}
    assert invoke(["undo", str(applied["run_id"]), "--db", str(db)]).code == 0
    assert types_of(db) == before


def test_protect_facts_protects_confident_semantic_memories(tmp_path: Path) -> None:
    db = seeded(tmp_path)
    base = ["maintain", "--db", str(db), "--passes", "protect-facts", "--json"]
    preview = json.loads(invoke([*base, "--dry-run"]).out)
    assert {c["id"] for c in preview["changes"]} == {1, 4}
    assert all("0.9" in c["reason"] for c in preview["changes"])
    applied = json.loads(invoke([*base, "--apply"]).out)
    with Store(db, read_only=True) as store:
        assert [store.require(i).is_protected for i in (1, 4, 5, 6)] == [True, True, False, False]
    assert invoke(["undo", str(applied["run_id"]), "--db", str(db)]).code == 0
    with Store(db, read_only=True) as store:
        assert not store.require(1).is_protected and not store.require(4).is_protected


# -- what never decays, and an operator's edits ---------------------------------------------------


def test_health_counts_what_never_decays_and_why(tmp_path: Path) -> None:
    db = seeded(tmp_path)
    with Store(db, actor="test") as store:
        store.add({"content": "Pinned note", "memory_type": "episodic", "decay_policy": "none"})
        projection = project_tiers(store, NOW)
    counts = {reason: ids.tolist() for reason, ids in projection.never_decay.items()}
    assert counts == {"protected": [3], "decay_policy none": [7], "semantic": [5, 4, 1]}
    assert never_decaying.__doc__


def test_cli_edit_changes_the_type_as_an_event(tmp_path: Path) -> None:
    db = seeded(tmp_path)
    result = invoke(["edit", "5", "--type", "episodic", "--db", str(db)])
    assert result.code == 0 and "memory_type 'episodic'" in result.out
    with Store(db, read_only=True) as store:
        (event,) = [e for e in store.history(5) if e.kind == "edited"]
    assert (event.before, event.after) == ({"memory_type": "semantic"}, {"memory_type": "episodic"})
    assert invoke(["edit", "5", "--db", str(db)]).code == 1
    assert invoke(["edit", "99", "--type", "episodic", "--db", str(db)]).code == 1


async def test_console_edit_changes_the_type(demo_store: Store) -> None:
    ident = next(
        r.id
        for r in demo_store.page(MemoryFilter(status="active", memory_type="semantic")).rows
        if not r.is_protected
    )
    app = console(demo_store)
    async with app.run_test(size=(120, 36)) as pilot:
        screen = await open_on(app, pilot, [ident])
        screen.table.move_cursor(row=0)
        await pilot.press("e")
        await settle(pilot)
        assert isinstance(app.screen, EditScreen)
        app.screen.query_one("#edit-type", Select).value = "episodic"
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert isinstance(app.screen, MainScreen)
    assert demo_store.require(ident).memory_type == "episodic"
    (event,) = [e for e in demo_store.history(ident) if e.kind == "edited"]
    assert event.after == {"memory_type": "episodic"}
