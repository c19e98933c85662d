"""Undo tells the truth: later runs block it (or are undone first), merged memories changed
since need the operator's choice, and an undo that restores nothing leaves the run undoable."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import Button, Static

from memory_console.embed.search import SearchEngine
from memory_console.maintenance import UndoRefused, apply, get_run, plan, undo, undo_check
from memory_console.store import MemoryFilter, Store
from memory_console.tui.app import MemoryConsoleApp
from memory_console.tui.screens.confirm import ChoiceScreen
from memory_console.tui.screens.runs import RunsScreen
from tests.helpers import NOW, console, memory, settle, snapshot

DAY = 86400.0


def cli(*argv: str) -> subprocess.CompletedProcess[str]:
    """The real entry point in another process, as an operator's shell runs it."""
    return subprocess.run(
        [sys.executable, "-m", "memory_console.cli", *argv],
        capture_output=True,
        text=True,
        timeout=120,
        env=os.environ.copy(),
    )


@pytest.fixture
def two_decays(store: Store, db_path: Path) -> tuple[dict[int, tuple[object, ...]], int, int]:
    """Four fading memories, decayed at NOW (run 1) and again 30 days later (run 2)."""
    store.add_many([memory(f"m{i}", days_old=100) for i in range(4)], now=NOW)
    before = snapshot(db_path)
    first = apply(store, plan(store, ["decay"], now=NOW))
    second = apply(store, plan(store, ["decay"], now=NOW + 30 * DAY))
    assert first.changed == second.changed == 4
    return before, first.id, second.id


def test_undo_of_a_run_a_later_run_changed_is_refused_and_stays_undoable(
    store: Store, db_path: Path, two_decays: tuple[dict[int, tuple[object, ...]], int, int]
) -> None:
    before, first, second = two_decays
    after_both = snapshot(db_path)
    with pytest.raises(UndoRefused) as refused:
        undo(store, first, now=NOW + 31 * DAY)
    assert str(refused.value) == (
        f"run {second} changed 4 of these memories after run {first}: undo run {second} "
        f"first, or `memory-console undo {first} --cascade` to undo {second} then {first}; "
        "nothing was changed"
    )
    assert [(b.run_id, b.memories) for b in refused.value.blocked_by] == [(second, 4)]
    assert snapshot(db_path) == after_both and not get_run(store, first).undone
    assert [b.run_id for b in undo_check(store, first).blocked_by] == [second]
    assert len(undo(store, second, now=NOW + 31 * DAY).restored) == 4
    report = undo(store, first, now=NOW + 32 * DAY)  # once run 2 is undone, run 1 can be
    assert len(report.restored) == 4 and not report.not_restored
    assert snapshot(db_path) == before


def test_cascade_undoes_the_later_run_then_the_asked_one(
    store: Store, db_path: Path, two_decays: tuple[dict[int, tuple[object, ...]], int, int]
) -> None:
    before, first, second = two_decays
    report = undo(store, first, now=NOW + 31 * DAY, cascade=True)
    assert [r.run_id for r in report.cascade] == [second]
    assert len(report.cascade[0].restored) == len(report.restored) == 4
    assert get_run(store, first).undone and get_run(store, second).undone
    assert snapshot(db_path) == before


def test_an_undo_that_would_restore_nothing_is_refused(store: Store, db_path: Path) -> None:
    ids = store.add_many([memory(f"m{i}", days_old=100) for i in range(2)], now=NOW)
    run = apply(store, plan(store, ["decay"], now=NOW))
    store.record_access(ids, now=NOW + 1)
    with pytest.raises(UndoRefused, match="would restore nothing: all 2 memories") as refused:
        undo(store, run.id, now=NOW + 2)
    assert sorted(n.id for n in refused.value.not_restored) == ids
    assert not get_run(store, run.id).undone


def test_the_cli_names_the_blocking_run_and_cascades_on_a_store_held_open(
    store: Store, db_path: Path, two_decays: tuple[dict[int, tuple[object, ...]], int, int]
) -> None:
    before, first, second = two_decays
    refused = cli("undo", str(first), "--db", str(db_path))
    assert refused.returncode == 1 and refused.stdout == ""
    assert f"run {second} changed 4 of these memories after run {first}" in refused.stderr
    assert f"memory-console undo {first} --cascade" in refused.stderr
    as_json = cli("undo", str(first), "--db", str(db_path), "--json")
    assert as_json.returncode == 1
    assert json.loads(as_json.stdout)["blocked_by"] == [{"run_id": second, "memories": 4}]
    assert not get_run(store, first).undone  # the test's own connection sees nothing undone
    done = cli("undo", str(first), "--db", str(db_path), "--cascade", "--json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert (out["run_id"], out["restored"]) == (first, 4)
    assert [(r["run_id"], r["restored"]) for r in out["cascade"]] == [(second, 4)]
    assert snapshot(db_path) == before
    assert get_run(store, first).undone and get_run(store, second).undone


# -- a consolidation whose merged memory was edited -------------------------------------------


@pytest.fixture
def merged_twice(store: Store) -> tuple[int, list[int], list[int], int, int]:
    """Two groups of the same fact said again (three and two times), merged by consolidate;
    the first group's merged memory is then edited. (run id, sources of each group, merged
    ids in that order.)"""
    base = {"owner": "alice", "topic": "decisions", "memory_type": "semantic"}
    sync = "Weekly sync with Bob every Tuesday at 10:00."
    db = "Decided to use PostgreSQL for the billing service."
    first = store.add_many([{**base, "content": sync} for _ in range(3)], now=NOW)
    second = store.add_many([{**base, "content": db} for _ in range(2)], now=NOW)
    SearchEngine(store).prepare_semantic()
    run = apply(store, plan(store, ["consolidate"], now=NOW))
    into = {store.require(i).consolidated_into for i in first + second}
    merged_first = store.require(first[0]).consolidated_into
    merged_second = store.require(second[0]).consolidated_into
    assert len(into) == 2 and None not in into
    assert merged_first is not None and merged_second is not None
    store.edit(merged_first, {"content": "Weekly sync with Bob, Tuesdays 10:00 (moved)."})
    return run.id, first, second, merged_first, merged_second


def active(store: Store) -> int:
    return store.count(MemoryFilter(status="active"))


def test_undo_of_a_merge_edited_since_is_refused_without_a_choice(
    store: Store, db_path: Path, merged_twice: tuple[int, list[int], list[int], int, int]
) -> None:
    run_id, first, _, merged, _ = merged_twice
    held = snapshot(db_path)
    with pytest.raises(UndoRefused, match="--keep-edit .* or --leave-merged") as refused:
        undo(store, run_id, now=NOW + DAY)
    (conflict,) = refused.value.conflicts
    assert (conflict.merged, conflict.sources) == (merged, first)
    assert conflict.reason.startswith("changed later: edited")
    assert snapshot(db_path) == held and active(store) == 2
    assert not get_run(store, run_id).undone
    assert [c.merged for c in undo_check(store, run_id).conflicts] == [merged]


def test_keep_edit_returns_the_sources_and_keeps_the_edit_as_its_own_memory(
    store: Store, merged_twice: tuple[int, list[int], list[int], int, int]
) -> None:
    run_id, first, second, merged, other = merged_twice
    report = undo(store, run_id, now=NOW + DAY, merged_edits="keep-edit")
    assert report.kept_edits == [merged] and report.deleted == [other]
    assert sorted(report.restored) == sorted(first + second)
    assert active(store) == 6  # five sources and the edited memory, marked as kept
    kept = store.require(merged)
    assert kept.content == "Weekly sync with Bob, Tuesdays 10:00 (moved)."
    assert kept.metadata["kept_by_undo"] == {"run": run_id, "sources": first}
    assert store.history(merged)[-1].kind == "edited"
    assert get_run(store, run_id).undone


def test_leave_merged_keeps_that_group_and_undoes_the_rest(
    store: Store, merged_twice: tuple[int, list[int], list[int], int, int]
) -> None:
    run_id, first, second, merged, other = merged_twice
    report = undo(store, run_id, now=NOW + DAY, merged_edits="leave-merged")
    assert [c.merged for c in report.left_merged] == [merged]
    assert sorted(report.restored) == second and report.deleted == [other]
    assert active(store) == 3  # the edited merged memory and the second group's sources
    assert {store.require(i).status for i in first} == {"consolidated"}
    assert get_run(store, run_id).undone


def test_the_cli_names_the_conflicting_group_and_takes_a_choice(
    store: Store, db_path: Path, merged_twice: tuple[int, list[int], list[int], int, int]
) -> None:
    run_id, first, _, merged, _ = merged_twice
    refused = cli("undo", str(run_id), "--db", str(db_path))
    assert refused.returncode == 1
    assert f"#{merged} (merged from {', '.join(f'#{i}' for i in first)})" in refused.stderr
    assert "--keep-edit" in refused.stderr and "--leave-merged" in refused.stderr
    assert active(store) == 2
    done = cli("undo", str(run_id), "--db", str(db_path), "--keep-edit")
    assert done.returncode == 0, done.stderr
    assert f"#{merged}: merged memory changed since, kept as a memory of its own" in done.stdout
    assert active(store) == 6


# -- the console's runs screen ----------------------------------------------------------------


async def open_runs_on(app: MemoryConsoleApp, pilot: Pilot[Any], run_id: int) -> RunsScreen:
    await settle(pilot)
    await pilot.press("R")
    await settle(pilot)
    screen = app.screen
    assert isinstance(screen, RunsScreen)
    screen.table.move_cursor(row=[r.id for r in screen.runs].index(run_id))
    await settle(pilot)
    return screen


async def test_the_console_says_what_blocks_an_undo_and_offers_the_cascade(
    store: Store, db_path: Path, two_decays: tuple[dict[int, tuple[object, ...]], int, int]
) -> None:
    before, first, second = two_decays
    app = console(store)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_runs_on(app, pilot, first)
        await pilot.press("u")
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, ChoiceScreen)
        said = str(dialog.query_one(".explain", Static).render())
        assert f"run {second} changed 4 of them" in said and "not done" in said
        assert str(dialog.query_one("#choice-cascade", Button).label) == (
            f"Undo {second}, then {first}"
        )
        await pilot.press("escape")
        await settle(pilot)
        assert not get_run(store, first).undone  # Escape leaves both runs as they are
        await pilot.press("u")
        await settle(pilot)
        await pilot.press("enter")  # the focused choice: the cascade
        await settle(pilot)
        assert screen.current is not None and screen.current.id == first
    assert get_run(store, first).undone and get_run(store, second).undone
    assert snapshot(db_path) == before


async def test_the_console_shows_an_edited_merge_and_the_two_choices(
    store: Store, merged_twice: tuple[int, list[int], list[int], int, int]
) -> None:
    run_id, first, _, merged, _ = merged_twice
    app = console(store)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_runs_on(app, pilot, run_id)
        await pilot.press("u")
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, ChoiceScreen)
        said = str(dialog.query_one(".explain", Static).render())
        assert f"#{merged} (merged from {', '.join(f'#{i}' for i in first)})" in said
        labels = [str(b.label) for b in dialog.query(Button)]
        assert labels == ["Keep the edits", "Leave merged", "Cancel"]
        await pilot.click("#choice-leave-merged")
        await settle(pilot)
    assert get_run(store, run_id).undone
    assert active(store) == 3


def test_undoing_a_restore_archives_again_and_the_index_follows(tmp_path: Path) -> None:
    """Archive, restore, undo the restore through the store with the search index loaded
    from its file: the undo is announced as the archive it is (it was announced as an edit,
    and the index failed after the commit: "cannot reshape array of size 0"), and the
    memory leaves the semantic results."""
    from memory_console.tui.actions import ACTIONS, DoneAction, undo_action

    db = str(tmp_path / "undo.db")
    assert cli("--db", db, "demo", "--count", "300").returncode == 0
    assert cli("--db", db, "reindex").returncode == 0
    with Store(db, actor="tui") as store:
        engine = SearchEngine(store)
        engine.prepare_semantic()
        ident = store.page(MemoryFilter(status="active"), limit=1).rows[0].id
        store.archive([ident], now=NOW)
        restored = store.restore([ident], now=NOW + 1)
        assert ident in engine.semantic.index
        done = DoneAction("restore", NOW + 1, ACTIONS["restore"].kinds, tuple(restored.changed))
        result = undo_action(store, done, NOW + 2)
        assert result.changed == [ident]
        assert store.require(ident).status == "archived"
        assert ident not in engine.semantic.index
        kinds = [event.kind for event in store.history(ident)]
        assert kinds[-3:] == ["archived", "restored", "archived"]


async def test_an_undo_that_committed_is_never_replayed(tmp_path: Path) -> None:
    """The undo commits, then what follows the commit fails (here a listener of the store's
    changes raises): the console says the change was written and drops the undo from its
    stack, so a second `u` undoes the action before it, never the same one again."""
    db_path = tmp_path / "stack.db"
    with Store(db_path, actor="test") as store:
        (ident,) = store.add_many([memory("a memory to archive and restore", days_old=1)], now=NOW)
    with Store(db_path) as store:
        app = console(store)
        async with app.run_test(size=(120, 36)) as pilot:
            screen = app.screen
            screen.view = screen.view.with_filter(ids=(ident,))  # type: ignore[attr-defined]
            screen.reset_view()  # type: ignore[attr-defined]
            await settle(pilot)
            await pilot.press("a")
            await settle(pilot)
            await pilot.press("r")
            await settle(pilot)

            def failing(kind: str, ids: list[int]) -> None:
                raise RuntimeError("the index is gone")

            store.listeners.append(failing)
            await pilot.press("u")
            await settle(pilot)
            store.listeners.remove(failing)
            assert store.require(ident).status == "archived"
            await pilot.press("u")  # the archive's undo: restored
            await settle(pilot)
            await pilot.press("u")  # nothing left to undo
            await settle(pilot)
        kinds = [event.kind for event in store.history(ident)]
        undo_notes = [e.query for e in store.history(ident) if (e.query or "").startswith("undo")]
    assert kinds[-4:] == ["archived", "restored", "archived", "restored"]
    assert len(undo_notes) == 2


def test_protecting_a_faded_memory_keeps_its_confidence_as_of_now_and_says_so(
    store: Store,
) -> None:
    """Protection stops decay: a memory 0.84 stored but 0.77 as of now stays at 0.77 (it
    showed 0.84 again, with no event), the event records the change, and undo puts back the
    stored value."""
    from memory_console.maintenance.forecast import confidence_now
    from memory_console.tui.actions import ACTIONS, DoneAction, undo_action

    (ident,) = store.add_many(
        [
            {
                **memory("idle since winter", days_old=200),
                "confidence": 0.84,
                "base_confidence": 0.84,
            }
        ],
        now=NOW,
    )
    faded = confidence_now(store.require(ident), NOW)
    assert faded < 0.84 - 0.01
    result = store.protect([ident], now=NOW)
    record = store.require(ident)
    assert record.is_protected and abs(record.confidence - faded) < 1e-9
    assert abs(confidence_now(record, NOW + 400 * DAY) - faded) < 1e-9  # protected: no decay
    (event,) = [e for e in store.history(ident) if e.kind == "protected"]
    assert event.before["confidence"] == 0.84 and abs(event.after["confidence"] - faded) < 1e-9
    done = DoneAction("protect", NOW, ACTIONS["protect"].kinds, tuple(result.changed))
    undo_action(store, done, NOW + 1)
    back = store.require(ident)
    assert not back.is_protected and back.confidence == 0.84 and back.base_confidence == 0.84


def test_after_a_run_evaluated_ahead_the_forecast_starts_at_the_confidence_shown_now(
    store: Store,
) -> None:
    """A run evaluated 90 days ahead stores a lower confidence than decay from the base gives
    today: `show` printed the stored 0.24 beside "forecast now 0.33". The forecast's first
    point is the confidence as of now, and no later point is above it."""
    from memory_console.maintenance import memory_forecast
    from memory_console.maintenance.forecast import confidence_now

    (ident,) = store.add_many([memory("planning the garden", days_old=200)], now=NOW)
    apply(store, plan(store, ["decay"], now=NOW + 90 * DAY))
    record = store.require(ident)
    now_value = confidence_now(record, NOW, store.settings().params())
    forecast = memory_forecast(record, NOW, params=store.settings().params())
    values = [value for _, value in forecast.points]
    assert now_value == record.confidence
    assert abs(values[0] - now_value) < 1e-9 and max(values) <= now_value + 1e-9


def test_the_story_draws_the_fading_since_the_last_event_down_to_now(store: Store) -> None:
    """A memory untouched for 200 days, stored at 0.84: the past line fades period by period
    to its confidence as of now (it was drawn flat at 0.84, then dropped straight down)."""
    from memory_console.maintenance.forecast import confidence_now
    from memory_console.tui.story_data import load_story

    (ident,) = store.add_many(
        [
            {
                **memory("idle since winter", days_old=200),
                "confidence": 0.84,
                "base_confidence": 0.84,
            }
        ],
        now=NOW,
    )
    story = load_story(store, ident, NOW)
    values = [value for _, value in story.trajectory]
    assert values[-1] == story.confidence_now == confidence_now(store.require(ident), NOW)
    assert values[-1] < 0.84 - 0.05
    pairs = list(zip(values, values[1:], strict=False))
    assert all(later <= earlier + 1e-12 for earlier, later in pairs)
    # No drop larger than one period's decay (0.95 of the value).
    assert all(later >= 0.95 * earlier - 1e-9 for earlier, later in pairs)
