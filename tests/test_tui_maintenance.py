"""The maintenance screens driven end to end: preview, exclude, protect, apply, runs, undo,
merge review, stale plans and the health screen, checking the database at each step."""

from __future__ import annotations

import io
import re
from typing import Any, TypeVar

import pytest
from rich.console import Console
from textual.widgets import Static

from memory_console.maintenance import list_runs
from memory_console.store import MemoryFilter, Store
from memory_console.timeutil import DAY
from memory_console.tui.app import MemoryConsoleApp
from memory_console.tui.plan_request import PlanRequest
from memory_console.tui.screens.confirm import ChoiceScreen, ConfirmScreen
from memory_console.tui.screens.health import HealthScreen
from memory_console.tui.screens.main import MainScreen
from memory_console.tui.screens.maintenance import MaintenanceScreen
from memory_console.tui.screens.preview import PreviewScreen
from memory_console.tui.screens.review import ReviewScreen
from memory_console.tui.screens.runs import RunsScreen
from memory_console.tui.widgets.figure_table import FigureTable
from tests.helpers import NOW, SCREEN_ONLY, add_duplicate_groups, console, notes, settle, where

SIZE = (120, 36)


@pytest.fixture
def demo_store(backend_demo_store: Store) -> Store:
    """These tests run on both backends (the SQLite-only ones say so)."""
    return backend_demo_store


S = TypeVar("S")


def screen_of(app: MemoryConsoleApp, kind: type[S]) -> S:
    screen = app.screen
    assert isinstance(screen, kind), f"on {type(screen).__name__}, not {kind.__name__}"
    return screen


def shown_text(widget: Static) -> str:
    """What a Static shows, as plain text."""
    console = Console(width=200, record=True, file=io.StringIO())
    console.print(widget.content)
    return console.export_text()


def decayed_events(store: Store, ident: int) -> list[Any]:
    return [e for e in store.history(ident) if e.kind == "decayed"]


async def open_preview(
    app: MemoryConsoleApp, pilot: Any, request: PlanRequest | None = None
) -> PreviewScreen:
    if request is None:
        await pilot.press("m")
        await settle(pilot)
        screen_of(app, MaintenanceScreen)
        await pilot.press("ctrl+r")
    else:
        app.push_screen(PreviewScreen(request))
    await settle(pilot)
    preview = screen_of(app, PreviewScreen)
    assert preview.base is not None and preview.edited is not None
    return preview


async def test_preview_exclude_apply_runs_undo(demo_store: Store) -> None:
    app = console(demo_store)
    seen = notes(app)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        preview = await open_preview(app, pilot)
        assert preview.base is not None
        proposed = preview.base.counts()["decayed"]
        assert proposed > 10 and not list_runs(demo_store)
        left_out = preview.table.current
        assert left_out is not None and left_out.pass_name == "decay"
        before = demo_store.require(left_out.id).confidence
        assert before == left_out.fields["confidence"][0]  # planning wrote nothing

        await pilot.press("x")
        await settle(pilot)
        assert preview.edits.excluded == {left_out.id}
        assert preview.edited is not None
        assert preview.edited.plan.counts()["decayed"] == proposed - 1
        await pilot.press("down")
        applied = preview.table.current
        await pilot.press("down")
        touched_since = preview.table.current
        assert applied is not None and touched_since is not None
        assert len({left_out.id, applied.id, touched_since.id}) == 3

        await pilot.press("A")
        await settle(pilot)
        confirm = screen_of(app, ConfirmScreen)
        assert f"{proposed - 1:,}" in str(confirm.body)
        await pilot.press("enter")
        await settle(pilot)
        screen_of(app, MaintenanceScreen)
        runs = list_runs(demo_store)
        assert len(runs) == 1 and runs[0].counts == {"decayed": proposed - 1}
        assert any(f"run {runs[0].id}" in note for note in seen)
        assert demo_store.require(left_out.id).confidence == before
        assert not decayed_events(demo_store, left_out.id)
        after = applied.fields["confidence"][1]
        assert demo_store.require(applied.id).confidence == after
        assert decayed_events(demo_store, applied.id)[-1].run_id == runs[0].id

        demo_store.protect([touched_since.id], now=NOW + 60)  # changed again after the run
        await pilot.press("R")
        await settle(pilot)
        screen = screen_of(app, RunsScreen)
        assert [r.id for r in screen.runs] == [runs[0].id]
        assert screen.window is not None and screen.window.total == proposed - 1
        await pilot.press("u")
        await settle(pilot)
        screen_of(app, ConfirmScreen)
        await pilot.press("enter")
        await settle(pilot)
        assert list_runs(demo_store)[0].undone
        assert demo_store.require(applied.id).confidence == applied.fields["confidence"][0]
        assert any("undone" in note for note in seen)
        assert screen.current is not None and screen.current.undone
        report = list_runs(demo_store)[0].undo_report
        assert report is not None
        assert [item["id"] for item in report["not_restored"]] == [touched_since.id]
        kept = touched_since.fields["confidence"][1]
        assert demo_store.require(touched_since.id).confidence == kept
        facts = shown_text(screen.query_one("#runs-facts", Static))
        assert f"#{touched_since.id}" in facts and "not restored 1" in facts


async def test_protect_or_a_stale_plan_plans_again(demo_store: Store) -> None:
    app = console(demo_store)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        preview = await open_preview(app, pilot)
        protected = preview.table.current
        assert protected is not None and preview.base is not None
        first = preview.base
        await pilot.press("p")
        await settle(pilot)
        assert demo_store.require(protected.id).is_protected
        assert preview.base is not first
        assert protected.id not in preview.base.touched_ids.tolist()
        assert preview.base.changed == first.changed - 1

        change = preview.table.current
        assert change is not None
        demo_store.record_access([change.id], now=NOW + 1)  # an agent recalls it meanwhile
        await pilot.press("A")
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        dialog = screen_of(app, ChoiceScreen)
        assert "out of date" in dialog.title_text and not list_runs(demo_store)
        await pilot.press("enter")  # plan again
        await settle(pilot)
        assert screen_of(app, PreviewScreen) is preview and preview.base is not None
        assert change.id not in preview.base.touched_ids.tolist()
        planned = preview.base.changed

        recalled = preview.table.current
        assert recalled is not None
        demo_store.record_access([recalled.id], now=NOW + 2)
        await pilot.press("A")
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        screen_of(app, ChoiceScreen)
        await pilot.press("tab", "enter")  # apply the rest
        await settle(pilot)
        runs = list_runs(demo_store)
        assert len(runs) == 1 and runs[0].skipped == {"skipped_stale": [recalled.id]}
        assert runs[0].changed == planned - 1
        assert not decayed_events(demo_store, recalled.id)


async def test_merge_review_rejects_and_splits_groups(demo_store: Store) -> None:
    add_duplicate_groups(demo_store, (3, 4))
    app = console(demo_store)
    request = PlanRequest(("consolidate",), "relevance", {}, NOW, NOW)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        preview = await open_preview(app, pilot, request)
        assert preview.base is not None
        groups = len(preview.base.new_memories)
        await pilot.press("c")
        await settle(pilot)
        review = screen_of(app, ReviewScreen)
        options: Any = review.query_one("#review-groups")
        # The review opens on the members; the footer shows the way to the groups, and `g`
        # goes there and back.
        members = review.query_one("#review-members")
        assert members.has_focus
        assert "review.switch_list" in {b.binding.id for b in review.active_bindings.values()}
        await pilot.press("g")
        assert options.has_focus
        await pilot.press("g")
        assert members.has_focus
        sizes = [len(review.proposed[k]) for k in review.keys]
        options.highlighted = sizes.index(3)
        await settle(pilot)
        assert review.group is not None
        rejected = [r.id for r in review.group.members]
        await pilot.press("n")
        await settle(pilot)
        assert review.group.summary == "rejected"
        options.highlighted = sizes.index(4)
        await settle(pilot)
        split = [r.id for r in review.group.members][:2]
        await pilot.press("space", "space", "s")
        await settle(pilot)
        assert review.group.summary == "split in 2"
        await pilot.press("escape")
        await settle(pilot)
        assert screen_of(app, PreviewScreen) is preview and preview.edited is not None
        assert len(preview.edited.plan.new_memories) == groups
        await pilot.press("A")
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        assert all(demo_store.require(i).status == "active" for i in rejected)
        into = {demo_store.require(i).consolidated_into for i in split}
        assert len(into) == 1 and None not in into
        merged = demo_store.require(into.pop() or 0)
        assert sorted(merged.metadata["consolidated_from"]) == sorted(split)


@SCREEN_ONLY
async def test_the_form_checks_parameters_and_simulates_a_date(demo_store: Store) -> None:
    app = console(demo_store)
    seen = notes(app)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("m")
        await settle(pilot)
        form = screen_of(app, MaintenanceScreen)
        form.query_one("#param-floor").value = "2"  # type: ignore[attr-defined]
        await pilot.press("ctrl+r")
        await settle(pilot)
        assert screen_of(app, MaintenanceScreen) is form
        assert any("floor" in note for note in seen)
        form.query_one("#param-floor").value = ""  # type: ignore[attr-defined]
        form.query_one("#maintenance-preset").value = "+90"  # type: ignore[attr-defined]
        await settle(pilot)
        await pilot.press("ctrl+r")
        await settle(pilot)
        preview = screen_of(app, PreviewScreen)
        assert preview.request.now == NOW + 90 * DAY and preview.base is not None
        assert preview.base.now == NOW + 90 * DAY
        now_plan = (await open_preview_at(app, pilot, NOW)).base
        assert now_plan is not None and preview.base.changed > now_plan.changed


async def open_preview_at(app: MemoryConsoleApp, pilot: Any, now: float) -> PreviewScreen:
    return await open_preview(
        app, pilot, PlanRequest(("decay", "cleanup"), "relevance", {}, now, NOW)
    )


async def test_read_only_preview_says_why_apply_is_off(demo_store: Store) -> None:
    with Store(where(demo_store), read_only=True, actor="tui") as store:
        app = console(store)
        seen = notes(app)
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            await open_preview(app, pilot)
            await pilot.press("A")
            await settle(pilot)
            screen_of(app, PreviewScreen)
            assert any("read-only" in note for note in seen)


async def test_health_numbers_open_their_memories(demo_store: Store) -> None:
    app = console(demo_store)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("H")
        await settle(pilot)
        health = screen_of(app, HealthScreen)
        assert health.stats is not None and health.projection is not None
        assert health.counts is not None
        assert health.candidates is not None
        owners = health.query_one("#health-owners", FigureTable)
        owners.focus()
        await pilot.press("enter")
        await settle(pilot)
        main = screen_of(app, MainScreen)
        owner = health.counts.owners[0][0]
        assert main.view.memory_filter == MemoryFilter(owner=owner, status="active")
        assert main.count == health.counts.owners[0][1]
        assert f"owner {owner}" in main.status.position
        # Acted on right there, and Escape goes back to the same figures (not recomputed).
        first = main.table.current
        assert first is not None and not first.is_protected
        await pilot.press("p")
        await settle(pilot)
        assert demo_store.require(first.id).is_protected
        await pilot.press("escape")
        await settle(pilot)
        assert screen_of(app, HealthScreen) is health
        assert health.query_one("#health-owners", FigureTable).has_focus

        await pilot.press("H")
        await settle(pilot)
        health = screen_of(app, HealthScreen)
        attention = health.query_one("#health-attention", FigureTable)
        attention.focus()
        await pilot.press("enter")  # the first row: stale memories
        await settle(pilot)
        main = screen_of(app, MainScreen)
        ids = main.view.memory_filter.ids
        assert ids is not None and len(ids) == health.stats.stats["stale"]["count"]
        stale = demo_store.get_many(list(ids))
        assert all(r.status == "active" and r.decay_policy == "standard" for r in stale.values())


@SCREEN_ONLY
async def test_preview_table_pages_past_its_window(demo_store: Store, monkeypatch: Any) -> None:
    from memory_console.tui.screens import preview as preview_module

    WINDOW = 20  # noqa: N806 - the screen's constant, smaller than the demo's plan
    monkeypatch.setattr(preview_module, "WINDOW", WINDOW)
    app = console(demo_store)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        preview = await open_preview(app, pilot)
        assert preview.base is not None
        total = len(preview.order)
        assert total > WINDOW  # enough changes for more than one window
        first = preview.table.current
        await pilot.press("up")  # above the first change of the first window: nothing before
        assert preview.window_start == 0 and preview.table.current == first
        await pilot.press("G")
        await settle(pilot)
        assert preview.window_start == (total - 1) // WINDOW * WINDOW
        assert len(preview.table.changes) == total - preview.window_start
        last_window = preview.window_start
        await pilot.press("g")
        await settle(pilot)
        assert preview.window_start == 0 and len(preview.table.changes) == WINDOW
        for _ in range(WINDOW - 1):
            await pilot.press("down")
        await pilot.press("down")  # past the last row: the next window, cursor on its first
        await settle(pilot)
        assert preview.window_start == WINDOW and preview.table.cursor_row == 0
        await pilot.press("up")  # back above it: the previous window, cursor on its last
        await settle(pilot)
        assert preview.window_start == 0 and preview.table.cursor_row == WINDOW - 1
        assert last_window >= WINDOW


async def test_runs_changes_page_past_their_window(demo_store: Store, monkeypatch: Any) -> None:
    from memory_console.tui.screens import runs as runs_module
    from memory_console.tui.widgets.run_changes import RunChangesTable

    WINDOW = 10  # noqa: N806 - the screen's constant, smaller than the run
    monkeypatch.setattr(runs_module, "WINDOW", WINDOW)
    app = console(demo_store)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await open_preview(app, pilot)
        await pilot.press("A")
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        await pilot.press("R")
        await settle(pilot)
        screen = screen_of(app, RunsScreen)
        assert screen.window is not None and screen.window.total > 2 * WINDOW
        table = screen.query_one(RunChangesTable)
        table.focus()
        await pilot.press("pagedown")  # a page is taller than the window: to its last row
        assert table.cursor_row == WINDOW - 1 and screen.window.first == 0
        await pilot.press("pagedown")  # past it: the next window
        await settle(pilot)
        assert screen.window.first == WINDOW and table.cursor_row == 0
        await pilot.press("up")  # above its first row: the previous window, on its last row
        await settle(pilot)
        assert screen.window.first == 0 and table.cursor_row == WINDOW - 1


async def test_the_form_starts_from_the_stores_policy_and_parameters(demo_store: Store) -> None:
    """The store's settings are every process's: the console's maintenance form opens on the
    store's decay policy with its stored parameters as what an empty field means, and the
    preview runs under them."""
    demo_store.set_setting("decay_policy", "periodic", "test")
    demo_store.set_setting("periodic.rate", 0.8, "test")
    app = console(demo_store)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("m")
        await settle(pilot)
        form = screen_of(app, MaintenanceScreen)
        assert form.policy == "periodic"
        assert form.query_one("#param-rate").placeholder == "0.8"  # type: ignore[attr-defined]
        await pilot.press("ctrl+r")
        await settle(pilot)
        params = screen_of(app, PreviewScreen).request.params()
        assert params.policy == "periodic" and params.decay.rate == 0.8  # type: ignore[attr-defined]


def held_planning(demo_store: Store, monkeypatch: Any) -> tuple[Any, Any, Any, Any]:
    """Duplicate groups in two scopes, the eager plan of consolidate, and the console's planner
    held after the first scope with groups until `go_on` is set: (request, eager plan,
    first_found, go_on)."""
    import threading

    from memory_console.maintenance import plan
    from memory_console.tui.screens import preview as preview_module

    add_duplicate_groups(demo_store, (3, 4))
    request = PlanRequest(("consolidate",), "relevance", {}, NOW, NOW)
    eager = plan(demo_store, request.passes, request.params(), request.now)
    first_found, go_on = threading.Event(), threading.Event()

    def held(*args: Any) -> Any:
        store, passes, params, now, progress, partial = args

        def heard(scope: Any) -> None:
            partial(scope)
            if scope.groups and not first_found.is_set():
                first_found.set()
                go_on.wait(60)  # planning waits here until the review has been used

        return plan(store, passes, params, now, progress, heard)

    monkeypatch.setattr(preview_module, "plan", held)
    return request, eager, first_found, go_on


@SCREEN_ONLY
async def test_merge_review_shows_the_first_groups_while_planning_goes_on(
    demo_store: Store, monkeypatch: Any
) -> None:
    """The review opens on the merges of the first scopes planned; a decision made there
    holds when the rest arrive; the plan in the end is the one made at once."""
    import asyncio

    request, eager, first_found, go_on = held_planning(demo_store, monkeypatch)
    app = console(demo_store)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        preview = PreviewScreen(request)
        app.push_screen(preview)
        assert await asyncio.to_thread(first_found.wait, 60)
        while not preview.early_memories:
            await pilot.pause()
        assert preview.base is None and preview.progress.busy
        await pilot.press("c")
        review = screen_of(app, ReviewScreen)
        while review.group is None:
            await pilot.pause()
        head = review.query_one("#review-head", Static).render()
        assert re.search(r"planning: \d+ of \d+ scopes", str(head))
        early = len(review.keys)
        rejected = [r.id for r in review.group.members]
        await pilot.press("n")
        while review.group is None or review.group.summary != "rejected":
            await pilot.pause()
        go_on.set()
        await settle(pilot)
        assert review.scopes is None and len(review.keys) > early
        final = review.plan
        assert [(m.key, m.fields) for m in final.new_memories] == [
            (m.key, m.fields) for m in eager.new_memories
        ]
        assert final.touched_ids.tolist() == eager.touched_ids.tolist()
        assert set(rejected) <= review.edits.apart
        kept = {
            i
            for m in review.edited.plan.new_memories
            for i in m.fields["metadata"]["consolidated_from"]
        }
        assert not kept & set(rejected)
        assert len(review.edited.plan.new_memories) == len(eager.new_memories) - 1
        await pilot.press("escape")
        await settle(pilot)
        assert screen_of(app, PreviewScreen) is preview and preview.edited is not None
        assert len(preview.edited.plan.new_memories) == len(eager.new_memories) - 1


@SCREEN_ONLY
async def test_a_decision_taken_back_before_the_plan_is_made_holds(
    demo_store: Store, monkeypatch: Any
) -> None:
    """Leaving the review while planning goes on hands its decisions to the plan made."""
    import asyncio

    request, eager, first_found, go_on = held_planning(demo_store, monkeypatch)
    app = console(demo_store)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        preview = PreviewScreen(request)
        app.push_screen(preview)
        assert await asyncio.to_thread(first_found.wait, 60)
        while not preview.early_memories:
            await pilot.pause()
        await pilot.press("c")
        review = screen_of(app, ReviewScreen)
        while review.group is None:
            await pilot.pause()
        rejected = [r.id for r in review.group.members]
        await pilot.press("n")
        while review.group is None or review.group.summary != "rejected":
            await pilot.pause()
        await pilot.press("escape")
        await pilot.pause()
        assert screen_of(app, PreviewScreen) is preview and preview.base is None
        go_on.set()
        await settle(pilot)
        assert preview.edited is not None and set(rejected) <= preview.edits.apart
        assert len(preview.edited.plan.new_memories) == len(eager.new_memories) - 1
