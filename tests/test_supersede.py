"""Facts that change: the slot table, the fact-difference detector, supersession at write time,
its undo, recall preferring current facts, and how `show` and the console tell it."""

from __future__ import annotations

import io
import json
import sqlite3
from pathlib import Path

import pytest
from rich.console import Console
from textual.widgets import Static

from memory_console.agent.rules import facts
from memory_console.api import MemoryAPI
from memory_console.store import Store, StoreError
from memory_console.store.db import SCHEMA_VERSION
from memory_console.store.wire import export_record
from tests.helpers import DAY, NOW, console, invoke, open_on, settle

WHERE = "where does the user live?"


def text_of(widget: Static) -> str:
    """What a Static shows, as plain text."""
    out = Console(width=120, file=io.StringIO(), record=True)
    out.print(widget.content)
    return out.export_text()


def moved(api: MemoryAPI) -> tuple[int, int]:
    """Lyon, then (a day and an unrelated fact later) Porto: the ids of both."""
    lyon = api.remember("I just moved to Lyon", now=NOW)
    api.remember("I'm a software engineer and I love hiking", now=NOW + DAY)
    porto = api.remember("I'm all settled in Porto now", now=NOW + 2 * DAY)
    assert lyon.id is not None and porto.id is not None
    return lyon.id, porto.id


# -- the slot table and differences ---------------------------------------------------------


def test_every_row_of_the_slot_table_reads_its_own_example() -> None:
    for row in facts.SLOTS:
        stated = facts.slot_of(row.example)
        assert stated is not None and stated.kind == row.name, row.example
        assert stated.slot.startswith(row.name.split("'")[0]) or row.name == "pet's name"
    assert facts.slot_of("My favourite colour is green") == facts.SlotValue(
        "favourite colour", "green", False, "preferences", "favourite"
    )
    assert facts.slot_of("My dog's name is Rex").slot == "dog's name"  # type: ignore[union-attr]
    assert facts.slot_of("The user lives in Porto.").value == "Porto"  # type: ignore[union-attr]
    assert facts.slot_of("I no longer work at Acme").value == "no longer Acme"  # type: ignore[union-attr]
    # A preference is keyed by what kind of thing is preferred: seats are one slot.
    aisle, window = facts.slot_of("I prefer aisle seats"), facts.slot_of("I prefer window seats")
    assert aisle is not None and window is not None and aisle.slot == window.slot
    assert facts.slot_of("I prefer tea").slot != facts.slot_of("I prefer dark mode").slot  # type: ignore[union-attr]
    assert facts.slot_of("We shipped the release yesterday") is None


SAME_FACT = [
    ("I live in Lyon", "Lyon is where I live"),
    ("The user lives in Lyon.", "I live in Lyon"),
    ("I prefer dark mode in my code editor", "I prefer a dark mode in my code editor"),
    ("I like hiking in the Alps", "I enjoy hiking in the Alps"),
    ("My phone number is 555-0141", "my phone number is 555 0141"),
    ("Meeting with Sarah on Monday at 3pm", "The meeting with Sarah is on Monday at 3pm"),
    ("We use Python 3.11 at work", "At work we use Python 3.11"),
    ("My favourite colour is green", "Green is my favourite colour"),
]
CHANGED_FACT = [
    ("My phone number is 555-0141", "My phone number is 555-0187", "555-0187"),
    ("I just moved to Lyon", "I'm all settled in Porto now", "Porto"),
    ("Meeting with Sarah on Monday", "Meeting with Sarah on Tuesday", "tuesday"),
    ("Rex is a beagle and is 4.", "Rex is a beagle and is 9.", "9"),
    ("We use Python 3.11", "We use Python 3.12", "3.12"),
    ("The deploy is on March 3", "The deploy is on March 5", "march 5"),
    ("My manager is Sarah Lee", "My manager is Tom Baker", "Tom Baker"),
    ("I work at Acme", "I now work at Globex", "Globex"),
    ("My favourite colour is green", "My favourite colour is blue", "blue"),
    ("The VPN password rotates every 30 days", "The VPN password rotates every 90 days", "90"),
]


@pytest.mark.parametrize(("old", "new"), SAME_FACT)
def test_the_same_fact_reworded_differs_in_nothing(old: str, new: str) -> None:
    assert facts.differences(old, new) == []


@pytest.mark.parametrize(("old", "new", "named"), CHANGED_FACT)
def test_a_changed_number_date_name_or_value_is_named(old: str, new: str, named: str) -> None:
    found = facts.differences(old, new)
    assert found and any(named in phrase for phrase in found), found


# -- supersession at write time -------------------------------------------------------------


def test_a_move_supersedes_the_old_home_and_recall_returns_the_new_one(api: MemoryAPI) -> None:
    lyon, porto = moved(api)
    old = api.store.require(lyon)
    assert old.status == "archived" and old.superseded_by == porto
    assert old.metadata["forget_reason"] == f"superseded by #{porto}"
    recalled = api.recall(WHERE, k=3, now=NOW + 3 * DAY)
    assert recalled[0].id == porto
    assert lyon not in [hit.id for hit in recalled]
    # Asked for, the old value follows the one that replaced it, and is not reinforced.
    history = api.recall(WHERE, k=3, include_superseded=True, now=NOW + 4 * DAY)
    ids = [hit.id for hit in history]
    assert ids.index(lyon) == ids.index(porto) + 1
    assert history[ids.index(lyon)].scores == {"superseded_by": porto}
    assert api.store.require(lyon).retrieval_count == 0


def test_the_result_says_what_was_superseded(api: MemoryAPI) -> None:
    first = api.remember("I just moved to Lyon", now=NOW)
    second = api.remember("I'm all settled in Porto now", now=NOW + DAY)
    assert second.action == "stored" and second.superseded == (first.id,)
    assert f"supersedes #{first.id} (location Lyon -> Porto)" in second.reason
    kinds = {event.kind for event in api.store.history(first.id or 0)}
    assert "superseded" in kinds
    (link,) = [e for e in api.store.history(second.id or 0) if e.kind == "supersedes"]
    assert link.after == {"supersedes": first.id}


def test_a_new_number_worded_like_the_old_is_stored_not_reinforced(api: MemoryAPI) -> None:
    old_text, new_text = "My phone number is 555-0141", "My phone number is 555-0187"
    old = api.remember(old_text, now=NOW)
    new = api.remember(new_text, now=NOW + DAY)
    assert new.action == "stored" and new.id != old.id
    # Found as a near-duplicate (cosine above the threshold), told apart by its number.
    assert f"not a duplicate of memory {old.id} (" in new.reason
    assert "number 555-0141 vs 555-0187" in new.reason
    assert new.superseded == (old.id,)
    assert api.store.require(old.id or 0).retrieval_count == 0  # not reinforced
    assert api.recall("what is the user's phone number?", k=3, now=NOW + 2 * DAY)[0].id == new.id
    # Said again, the current number is a duplicate as before.
    again = api.remember(new_text, now=NOW + 3 * DAY)
    assert again.action == "reinforced" and again.id == new.id


def test_scan_turn_and_apply_actions_supersede_too(api: MemoryAPI) -> None:
    # Said twice: personal (+0.3) and repeated (+0.2) reach the scan's threshold.
    (found,) = api.scan_turn("I work at Acme Corp", history=["I work at Acme Corp"], now=NOW)
    assert found.result.action == "stored"
    said = "I now work at Globex"
    (changed,) = api.scan_turn(said, history=[said], now=NOW + DAY)
    assert changed.result.superseded == (found.result.id,)
    document = {
        "memory_actions": [
            {
                "target_memory_bank": "LTM",
                "action_type": "STORE",
                "content": "The user works at Initech.",
                "entry_type": "FACT",
            }
        ]
    }
    applied = api.apply_actions(document, now=NOW + 2 * DAY)
    assert applied.ok and "supersedes #" in applied.outcomes[0].reason
    assert api.store.require(changed.result.id or 0).superseded_by == applied.outcomes[0].id


def test_another_owners_fact_is_not_superseded(api: MemoryAPI) -> None:
    bob = api.remember("I live in Lyon", owner="bob", now=NOW)
    alice = api.remember("I live in Porto", now=NOW + DAY)
    assert alice.superseded == () and api.store.require(bob.id or 0).status == "active"


def test_a_protected_old_value_is_left_for_review(api: MemoryAPI) -> None:
    lyon = api.remember("I live in Lyon", now=NOW)
    api.store.protect([lyon.id or 0], now=NOW)
    porto = api.remember("I moved to Porto", now=NOW + DAY)
    assert porto.action == "stored" and porto.superseded == ()
    assert porto.left_for_review == (lyon.id,)
    assert f"memory {lyon.id} is protected: left for review" in porto.reason
    assert api.store.require(lyon.id or 0).status == "active"
    assert api.store.require(porto.id or 0).metadata["pending_supersede"] == [lyon.id]
    with pytest.raises(StoreError, match="protected"):
        api.store.supersede(lyon.id or 0, porto.id or 0, now=NOW + 2 * DAY)
    # Both active, one slot: the newer ranks first.
    recalled = [hit.id for hit in api.recall(WHERE, k=2, now=NOW + 3 * DAY)]
    assert recalled == [porto.id, lyon.id]


# -- undo -------------------------------------------------------------------------------------


def test_undo_of_a_supersession_restores_the_old_memory(api: MemoryAPI) -> None:
    lyon, porto = moved(api)
    (event,) = [e for e in api.store.history(lyon) if e.kind == "superseded"]
    result = api.store.undo_event_group([event.id], now=NOW + 3 * DAY)
    assert result.changed == [lyon]
    old = api.store.require(lyon)
    assert old.status == "active" and old.superseded_by is None
    assert api.store.superseded_by_each([porto]) == {}
    assert api.store.history(lyon)[-1].kind == "restored"


def test_a_restore_clears_the_link_and_a_maintenance_undo_too(store: Store) -> None:
    from memory_console.maintenance.undo import undo
    from memory_console.store.runs import insert_run

    old, new = store.add_many(
        [{"content": "I live in Lyon"}, {"content": "I live in Porto"}], now=NOW
    )
    store.supersede(old, new, now=NOW)
    store.restore([old], now=NOW + 1)
    assert store.require(old).superseded_by is None and store.require(old).status == "active"
    with store.transaction("a run") as conn:
        run_id = insert_run(
            conn,
            {
                "started_at": NOW,
                "now": NOW,
                "passes": "[]",
                "policy": "exponential",
                "params": "{}",
                "counts": "{}",
                "changed": 1,
                "duration_ms": 0,
                "actor": "test",
            },
        )
    store.supersede(old, new, now=NOW + 2, run_id=run_id)
    report = undo(store, run_id, now=NOW + 3)
    assert report.restored == [old] and report.not_restored == []
    assert store.require(old).superseded_by is None and store.require(new).status == "active"


# -- the schema ---------------------------------------------------------------------------------


def test_a_schema_four_store_gains_the_link(db_path: Path) -> None:
    with Store(db_path) as made:
        made.add({"content": "I live in Lyon"}, now=NOW)
    conn = sqlite3.connect(db_path)
    conn.execute("DROP INDEX ix_memory_superseded_by")
    conn.execute("ALTER TABLE memory DROP COLUMN superseded_by")
    conn.execute("PRAGMA user_version = 4")
    conn.commit()
    conn.close()
    with Store(db_path) as migrated:
        assert migrated.migration_backup is not None
        assert migrated.require(1).superseded_by is None
    conn = sqlite3.connect(db_path)
    indexes = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='index'")}
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert "ix_memory_superseded_by" in indexes
    conn.close()


def test_export_and_import_carry_the_link(store: Store, tmp_path: Path) -> None:
    old, new = store.add_many(
        [{"content": "I live in Lyon"}, {"content": "I live in Porto"}], now=NOW
    )
    store.supersede(old, new, now=NOW)
    line = export_record(store.require(old))
    assert line["superseded_by"] == new
    with Store(tmp_path / "copy.db") as copy:
        copy.add_many([export_record(store.require(new)), line], keep_ids=True, now=NOW)
        assert copy.require(old).superseded_by == new


# -- what a person sees ------------------------------------------------------------------------


def test_show_names_the_link_both_ways(api: MemoryAPI, db_path: Path) -> None:
    lyon, porto = moved(api)
    api.close()
    old = invoke(["show", str(lyon), "--db", str(db_path)])
    assert old.code == 0 and f"superseded by #{porto}" in old.out
    assert "superseded" in old.out.split("history", 1)[1]
    new = invoke(["show", str(porto), "--db", str(db_path)])
    assert f"supersedes #{lyon}" in new.out
    data = json.loads(invoke(["show", str(porto), "--db", str(db_path), "--json"]).out)
    assert data["supersedes"] == [lyon] and data["superseded_by"] is None
    assert "supersedes" in [event["kind"] for event in data["history"]]
    data = json.loads(invoke(["show", str(lyon), "--db", str(db_path), "--json"]).out)
    assert data["superseded_by"] == porto and data["supersedes"] == []


async def test_the_story_tells_the_link_and_the_console_restores_and_undoes(
    db_path: Path,
) -> None:
    from memory_console.tui.screens.story import StoryScreen

    with Store(db_path, actor="api") as made:
        old, new = made.add_many(
            [{"content": "I live in Lyon"}, {"content": "I live in Porto"}], now=NOW - DAY
        )
        made.supersede(old, new, now=NOW - DAY)
    with Store(db_path, actor="tui") as store:
        app = console(store)
        async with app.run_test(size=(120, 40)) as pilot:
            await open_on(app, pilot, [new])
            await pilot.press("enter")
            await settle(pilot)
            story = app.screen
            assert isinstance(story, StoryScreen)
            assert f"supersedes #{old}" in text_of(story.query_one("#story-head", Static))
            await pilot.press("escape")
            await settle(pilot)
            await open_on(app, pilot, [old])
            await pilot.press("enter")
            await settle(pilot)
            story = app.screen
            assert isinstance(story, StoryScreen)
            head = text_of(story.query_one("#story-head", Static))
            assert f"superseded by #{new}" in head
            history = story.query_one("#story-history")
            kinds = [str(history.get_row_at(i)[2]) for i in range(history.row_count)]  # type: ignore[attr-defined]
            assert "superseded" in kinds
            await pilot.press("r")  # restore: the old value is current again
            await settle(pilot)
            assert store.require(old).status == "active"
            assert store.require(old).superseded_by is None
            assert "superseded by" not in text_of(story.query_one("#story-head", Static))
            await pilot.press("u")  # undo the restore: superseded again
            await settle(pilot)
            assert store.require(old).superseded_by == new
            assert store.require(old).status == "archived"
