"""The supersede maintenance pass: candidates beyond slots, preview, apply, undo, review."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memory_console.embed.embedder import Embedder
from memory_console.embed.semantic import SemanticIndex
from memory_console.maintenance import apply, plan, registry, undo
from memory_console.maintenance.edits import PlanEdits, edit_plan
from memory_console.maintenance.merge_command import merge_with_command
from memory_console.maintenance.reasons import reason_text
from memory_console.maintenance.supersede_review import supersessions
from memory_console.store import Store
from memory_console.tui.plan_request import PlanRequest
from memory_console.tui.screens.preview import PreviewScreen
from memory_console.tui.screens.review import ReviewScreen
from tests.helpers import DAY, ISO_NOW, NOW, console, invoke, settle

STANDUP_OLD = "The team standup is at 9:30 every morning."
STANDUP_NEW = "The team standup is at 10:15 every morning."
LYON = "The user lives in Lyon."
PORTO = "The user lives in Porto."
REX = "Rex the beagle loves long walks in the park."
UNRELATED = "Prefers short answers with bullet points."


def add(store: Store, content: str, days_old: float, **fields: Any) -> int:
    row = {"owner": "alice", "topic": "user_info", "content": content, **fields}
    moment = NOW - days_old * DAY
    return store.add({**row, "created_at": moment}, now=moment)


@pytest.fixture
def pairs(db_path: Path, embedder: Embedder) -> Iterator[tuple[Store, dict[str, int]]]:
    """A store (with embeddings) holding a changed time, a protected changed city and
    memories no other one contradicts; added directly, so no write-time supersession ran."""
    with Store(db_path) as store:
        ids = {
            "standup_old": add(store, STANDUP_OLD, 30),
            "standup_new": add(store, STANDUP_NEW, 2),
            "lyon": add(store, LYON, 40, is_protected=True),
            "porto": add(store, PORTO, 1),
            "rex": add(store, REX, 10),
            "unrelated": add(store, UNRELATED, 5),
            "other_owner": add(store, "The team standup is at 11:00.", 1, owner="bob"),
        }
        SemanticIndex(store, embedder).sync()
        yield store, ids


def test_the_pass_proposes_the_newer_over_the_older_and_maintain_leaves_it_out(
    pairs: tuple[Store, dict[str, int]],
) -> None:
    store, ids = pairs
    proposed = plan(store, ["supersede"], now=NOW)
    found = {old: new for old, (new, _) in supersessions(proposed).items()}
    assert found == {ids["standup_old"]: ids["standup_new"], ids["lyon"]: ids["porto"]}
    reasons = {old: reason_text(why) for old, (_, why) in supersessions(proposed).items()}
    assert reasons[ids["standup_old"]].startswith(f"superseded by #{ids['standup_new']}: ")
    assert "cosine" in reasons[ids["standup_old"]]
    assert "protected" in reasons[ids["lyon"]]
    assert proposed.figures["supersede"]["pairs"] == 2
    # Review-only: `maintain` without --passes does not run it.
    assert "supersede" in registry.registered_passes()
    assert "supersede" not in registry.maintain_passes()


def test_preview_apply_undo_and_a_second_run_plans_nothing(
    pairs: tuple[Store, dict[str, int]],
) -> None:
    store, ids = pairs
    db = str(store.path)
    before = {i: store.require(i).status for i in ids.values()}
    dry = invoke(["maintain", "--dry-run", "--passes", "supersede", "--db", db, "--now", ISO_NOW])
    assert dry.code == 0 and "superseded" in dry.out
    assert {i: store.require(i).status for i in ids.values()} == before
    done = invoke(
        ["maintain", "--apply", "--passes", "supersede", "--db", db, "--now", ISO_NOW, "--json"]
    )
    assert done.code == 0, done.err
    run_id = json.loads(done.out)["run_id"]
    old = store.require(ids["standup_old"])
    assert old.status == "archived" and old.superseded_by == ids["standup_new"]
    assert store.require(ids["lyon"]).superseded_by == ids["porto"]
    assert store.require(ids["standup_new"]).status == "active"
    events = [e for e in store.history(ids["standup_old"]) if e.kind == "superseded"]
    assert len(events) == 1 and events[0].run_id == run_id
    assert events[0].after == {"status": "archived", "superseded_by": ids["standup_new"]}
    assert (events[0].query or "").startswith(f"superseded by #{ids['standup_new']}")
    assert plan(store, ["supersede"], now=NOW).is_empty  # idempotent at the same now
    report = undo(store, run_id, now=NOW + 1)
    assert sorted(report.restored) == sorted([ids["standup_old"], ids["lyon"]])
    for ident in (ids["standup_old"], ids["lyon"]):
        restored = store.require(ident)
        assert restored.status == "active" and restored.superseded_by is None


def test_a_rejected_supersession_is_left_out_and_accept_takes_it_back(
    pairs: tuple[Store, dict[str, int]],
) -> None:
    store, ids = pairs
    proposed = plan(store, ["supersede"], now=NOW)
    rejected = PlanEdits().reject([ids["lyon"]])
    edited = edit_plan(proposed, rejected).plan
    assert set(supersessions(edited)) == {ids["standup_old"]}
    assert set(supersessions(edit_plan(proposed, rejected.accept([ids["lyon"]])).plan)) == {
        ids["standup_old"],
        ids["lyon"],
    }
    apply(store, edited)
    assert store.require(ids["lyon"]).status == "active"
    assert store.require(ids["standup_old"]).status == "archived"


def test_the_merge_command_proposes_a_decision_recorded_with_its_reason(
    pairs: tuple[Store, dict[str, int]], tmp_path: Path
) -> None:
    store, ids = pairs
    script = tmp_path / "decide.py"
    script.write_text(
        "import json, sys\n"
        "pair = json.load(sys.stdin)\n"
        "assert pair['task'] == 'supersede'\n"
        "keep = 'Lyon' in pair['old']['content']\n"
        "print(json.dumps({'decision': 'keep' if keep else 'supersede',\n"
        "                  'reason': 'a second home' if keep else 'the time moved'}))\n",
        encoding="utf-8",
    )
    command = f"{sys.executable} {script}"
    worded = merge_with_command(store, plan(store, ["supersede"], now=NOW), command)
    assert worded.undecided == 0
    texts = {old: reason_text(why) for old, (_, why) in supersessions(worded.plan).items()}
    assert texts[ids["lyon"]].endswith("merge command proposes keep (a second home)")
    assert texts[ids["standup_old"]].endswith("merge command proposes supersede (the time moved)")
    broken = merge_with_command(store, plan(store, ["supersede"], now=NOW), "false")
    assert broken.undecided == 2 and "no decision" in broken.summary
    # The proposal is recorded, never carried out: the operator decides at review.
    apply(store, worded.plan)
    event = next(e for e in store.history(ids["standup_old"]) if e.kind == "superseded")
    assert "merge command proposes supersede (the time moved)" in (event.query or "")
    assert store.require(ids["lyon"]).superseded_by == ids["porto"]


async def test_the_review_screen_shows_supersessions_and_rejects_one(
    pairs: tuple[Store, dict[str, int]],
) -> None:
    store, ids = pairs
    app = console(store)
    request = PlanRequest(("supersede",), "relevance", {}, NOW, NOW)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        app.push_screen(PreviewScreen(request))
        await settle(pilot)
        preview = app.screen
        assert isinstance(preview, PreviewScreen) and preview.base is not None
        await pilot.press("c")
        await settle(pilot)
        review = app.screen
        assert isinstance(review, ReviewScreen)
        assert review.keys == sorted([ids["standup_old"], ids["lyon"]])
        options: Any = review.query_one("#review-groups")
        options.highlighted = review.keys.index(ids["lyon"])
        await settle(pilot)
        assert review.pair is not None and review.pair.old.id == ids["lyon"]
        await pilot.press("n")
        await settle(pilot)
        assert review.pair.state(review.edits) == "rejected"
        await pilot.press("escape")
        await settle(pilot)
        assert app.screen is preview
        await pilot.press("A")
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
    assert store.require(ids["lyon"]).status == "active"
    old = store.require(ids["standup_old"])
    assert old.status == "archived" and old.superseded_by == ids["standup_new"]
