"""The console follows a store that other processes change: what is on screen refreshes by
itself, keeps the person's place and marks what changed."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot

from memory_console.store import MemoryFilter, Store
from memory_console.tui.app import MemoryConsoleApp
from memory_console.tui.formatting import CHANGED_MARK
from memory_console.tui.screens.main import MainScreen
from memory_console.tui.screens.story import StoryScreen
from memory_console.tui.widgets.detail import DetailPane
from memory_console.tui.widgets.topics import TopicsTree
from tests.helpers import NOW, SCREEN_ONLY, console, notes, settle, where

SIZE = (120, 36)
WATCH = 0.05  # the watch interval in these tests (the console's is a second)

# A second process changes the store: the real Store and agent API, as an agent or the CLI do.
WRITER = """
import sys
from memory_console.api import MemoryAPI
from memory_console.store import Store
path, edit_id, protect_id = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
with Store(path, actor="cli") as store:
    if edit_id:
        store.edit(edit_id, {"title": "Changed by another process"})
    if protect_id:
        store.protect([protect_id])
if len(sys.argv) > 4:
    with MemoryAPI(path, owner="zz-agent", semantic=False) as api:
        api.remember(sys.argv[4], topic="projects")
"""


@pytest.fixture
def demo_store(backend_demo_store: Store) -> Store:
    """These tests run on both backends (the SQLite-only ones say so)."""
    return backend_demo_store


def write_elsewhere(path: str, edit_id: int = 0, protect_id: int = 0, remember: str = "") -> None:
    """Run WRITER in a child process and wait for it."""
    argv = [sys.executable, "-c", WRITER, str(path), str(edit_id), str(protect_id)]
    if remember:
        argv.append(remember)
    environment = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    subprocess.run(argv, check=True, env=environment, timeout=60)


async def until(pilot: Pilot[Any], seen: Callable[[], bool], what: str) -> None:
    """Let the console run (no key pressed) until `seen()` holds."""
    for _ in range(400):
        if seen():
            await settle(pilot)
            return
        await pilot.pause(WATCH)
    raise AssertionError(f"the console never showed {what}")


def watching(store: Store) -> MemoryConsoleApp:
    app = console(store)
    app.watch_interval = WATCH
    return app


def active_ids(store: Store, count: int) -> list[int]:
    page = store.page(MemoryFilter(status="active", is_protected=False), limit=count)
    return [record.id for record in page.rows]


async def test_a_change_by_another_process_shows_without_a_key(demo_store: Store) -> None:
    app = watching(demo_store)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, MainScreen)
        table = screen.table
        await pilot.press("down", "space")  # select the second row; the cursor goes on
        selected = set(table.selected)
        assert table.cursor_row == 2
        current = table.current
        other = table.records[4]
        assert current is not None and not other.is_protected
        tree = screen.query_one(TopicsTree)
        assert "zz-agent" not in str(tree.root.children[-1].label)

        write_elsewhere(where(demo_store), current.id, other.id, "I am building an iron farm")

        await until(
            pilot,
            lambda: table.current is not None and table.current.revision != current.revision,
            "the edited title",
        )
        assert table.cursor_row == 2 and table.current is not None
        assert table.current.id == current.id, "the cursor keeps its memory"
        assert table.current.title == "Changed by another process"
        assert table.selected == selected, "the selection stays"
        assert {current.id, other.id} <= table.changed
        assert next(r for r in table.records if r.id == other.id).is_protected
        assert str(table.get_cell(str(other.id), "selected")) == CHANGED_MARK
        detail = screen.query_one(DetailPane)
        await until(
            pilot,
            lambda: detail.record is not None and detail.record.title.startswith("Changed"),
            "the detail of the edited memory",
        )
        await until(
            pilot,
            lambda: any("zz-agent" in str(node.label) for node in tree.root.children),
            "the new owner in the topics tree",
        )


async def test_a_cli_command_in_another_process_shows(demo_store: Store) -> None:
    """`memory-console archive` run beside the console: its commit is seen within the watch
    interval (SQLite's data_version, PostgreSQL's count of commits)."""
    app = watching(demo_store)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        main = app.screen
        assert isinstance(main, MainScreen)
        target = main.table.records[3]
        assert target.status == "active"
        environment = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
        subprocess.run(
            [sys.executable, "-m", "memory_console", "archive", str(target.id)]
            + ["--db", where(demo_store)],
            check=True,
            env=environment,
            timeout=60,
            capture_output=True,
        )
        await until(pilot, lambda: target.id in main.table.changed, "the archived memory's mark")
        shown = next(r for r in main.table.records if r.id == target.id)
        assert shown.status == "archived"
        assert app.context.outside == 1


LANGGRAPH_WRITER = """
import sys
from memory_console.langgraph import MemoryConsoleStore
with MemoryConsoleStore.open(sys.argv[1], graph="trip-planner", semantic=False) as store:
    store.put(("zz-traveller", "prefs"), "seat", {"text": "Prefers aisle seats"}, index=["text"])
"""


async def test_what_a_langgraph_agent_puts_elsewhere_arrives_under_its_owner(
    demo_store: Store,
) -> None:
    """A graph's put through MemoryConsoleStore in another process: the owner arrives in the
    tree, and its memory names the graph as the actor of its creation."""
    app = watching(demo_store)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, MainScreen)
        tree = screen.query_one(TopicsTree)
        environment = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
        argv = [sys.executable, "-c", LANGGRAPH_WRITER, where(demo_store)]
        subprocess.run(argv, check=True, env=environment, timeout=60)
        await until(
            pilot,
            lambda: any("zz-traveller" in str(node.label) for node in tree.root.children),
            "the graph's owner in the topics tree",
        )
        (record,) = demo_store.iter_memories(MemoryFilter(owner="zz-traveller"))
        assert [e.actor for e in demo_store.history(record.id)] == ["langgraph:trip-planner"]
        assert record.content == "Prefers aisle seats" and record.namespace == "prefs"
        # Under its owner, the item's namespace holds its topic; choosing the namespace
        # narrows the table to what the graph put there.
        owner = next(n for n in tree.root.children if n.data == ("zz-traveller", None, None))
        (space,) = owner.children
        assert space.data == ("zz-traveller", "prefs", None) and space.allow_expand
        assert [leaf.data for leaf in space.children] == [("zz-traveller", "prefs", record.topic)]
        tree.select_node(space)
        await settle(pilot)
        assert screen.view.memory_filter.namespace == "prefs"
        assert [r.id for r in screen.table.records] == [record.id]


async def test_the_story_and_a_hidden_screen_catch_up(demo_store: Store) -> None:
    first, second = active_ids(demo_store, 2)
    app = watching(demo_store)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        main = app.screen
        assert isinstance(main, MainScreen)
        main.view = main.view.with_filter(ids=(first, second))
        main.reset_view()
        await settle(pilot)
        assert main.table.current is not None and main.table.current.id in (first, second)
        opened = main.table.current.id
        other = second if opened == first else first
        await pilot.press("enter")
        await settle(pilot)
        story = app.screen
        assert isinstance(story, StoryScreen)

        write_elsewhere(where(demo_store), opened, other)

        await until(
            pilot,
            lambda: (
                story.story is not None
                and story.story.record.is_protected is False
                and story.story.record.title.startswith("Changed")
            ),
            "the story's new title",
        )
        await pilot.press("escape")
        await until(pilot, lambda: other in main.table.changed, "the mark on the hidden screen")
        assert main.table.current is not None and main.table.current.id == opened


async def test_own_changes_are_not_marked(demo_store: Store) -> None:
    (ident,) = active_ids(demo_store, 1)
    app = watching(demo_store)
    seen = notes(app)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        main = app.screen
        assert isinstance(main, MainScreen)
        main.view = main.view.with_filter(ids=(ident,))
        main.reset_view()
        await settle(pilot)
        await pilot.press("p")
        await settle(pilot)
        for _ in range(5):
            await pilot.pause(WATCH)
        await settle(pilot)
        assert demo_store.require(ident).is_protected
        assert not main.table.changed, "the console's own action is no news"
        assert app.context.outside == 0
        assert any("protected 1 memory" in note for note in seen)


@pytest.mark.parametrize("backend", ["sqlite"])  # SQLite's busy write lock
async def test_a_failed_action_keeps_the_place_and_says_why(demo_store: Store) -> None:
    demo_store.connection.execute("PRAGMA busy_timeout = 0")
    blocker = sqlite3.connect(demo_store.path, isolation_level=None)
    app = console(demo_store)
    seen = notes(app)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            main = app.screen
            assert isinstance(main, MainScreen)
            await pilot.press("down", "down", "space", "down", "down")
            chosen = set(main.table.selected)
            place = main.table.cursor_row
            blocker.execute("BEGIN IMMEDIATE")
            await pilot.press("p")
            await settle(pilot)
            blocker.execute("ROLLBACK")
            assert main.table.cursor_row == place, "the cursor keeps the operator's place"
            assert main.table.selected == chosen, "the selection waits for another try"
            (ident,) = chosen
            assert not demo_store.require(ident).is_protected
            assert any("busy" in note for note in seen)
            await pilot.press("p")  # the same keys work once the lock is gone
            await settle(pilot)
            assert demo_store.require(ident).is_protected
            assert main.table.cursor_row == place
    finally:
        blocker.close()


@SCREEN_ONLY
async def test_undo_with_nothing_to_undo_says_so(demo_store: Store) -> None:
    app = console(demo_store)
    seen = notes(app)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("u")
        await settle(pilot)
        assert any("nothing to undo" in note for note in seen)
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, StoryScreen)
        seen.clear()
        await pilot.press("u")
        await settle(pilot)
        assert any("nothing to undo" in note for note in seen)


async def test_a_memory_that_leaves_the_view_keeps_the_cursor_on_its_row(
    demo_store: Store,
) -> None:
    app = console(demo_store)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        main = app.screen
        assert isinstance(main, MainScreen)
        main.view = main.view.with_filter(status="active", is_protected=False)
        main.reset_view()
        await settle(pilot)
        await pilot.press("down", "down", "down")
        following = main.table.records[4].id
        await pilot.press("a")  # archived: it leaves the active memories
        await settle(pilot)
        assert main.table.cursor_row == 3, "the cursor stays where the operator was"
        assert main.table.current is not None and main.table.current.id == following


NOISE = ("Cursor left", "Cursor right", "Copy selected text", "Paste", "Select all", "Screenshot")


@SCREEN_ONLY
async def test_the_palette_offers_the_console_first_and_no_widget_noise(
    demo_store: Store,
) -> None:
    from textual.command import CommandList, CommandPalette

    from memory_console.tui.palette import ConsoleCommands

    app = console(demo_store)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        for focus, expected in (
            ("t", {"Protect", "Search", "Health", "Maintenance"}),  # the topics tree
            ("ctrl+f", {"Search", "Filter", "Back"}),  # the filter bar's text field
        ):
            await pilot.press(focus)
            titles = [title for title, _, _ in ConsoleCommands(app.screen).commands()]
            assert not set(NOISE) & set(titles), titles
            assert expected <= set(titles), titles
            assert titles.index("Theme") >= len(titles) - 2, "Textual's own come last"
            # Keys as the footer draws them, never their names.
            helps = [help_text for _, help_text, _ in ConsoleCommands(app.screen).commands()]
            assert not any("question_mark" in h or "(slash)" in h for h in helps), helps
        await pilot.press("escape", "ctrl+p")
        await settle(pilot)
        palette = app.screen
        assert isinstance(palette, CommandPalette)
        options = palette.query_one(CommandList)
        shown = [
            str(options.get_option_at_index(i).prompt).split("\n")[0]
            for i in range(options.option_count)
        ]
        assert shown[0] == "Archive" and shown[-1].startswith("Theme"), shown
        assert not any(text.startswith(NOISE) for text in shown), shown


@SCREEN_ONLY
async def test_the_chosen_theme_is_remembered_and_the_file_kept(demo_store: Store) -> None:
    from memory_console.settings import load_settings, settings_file

    path = settings_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('# my settings\npage_size = 30\ntheme = "textual-light"  # was\n')
    settings = load_settings()
    app = console(demo_store, theme=settings.theme)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.theme == "textual-light"
        await pilot.press("ctrl+p", *"theme", "enter")
        await settle(pilot)
        await pilot.press(*"nord", "enter")
        await settle(pilot)
        assert app.theme == "nord"
    assert path.read_text() == '# my settings\npage_size = 30\ntheme = "nord"\n'
    assert load_settings().theme == "nord"
    again = console(demo_store, theme=load_settings().theme)
    async with again.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert again.theme == "nord"
    path.unlink()
    third = console(demo_store)
    async with third.run_test(size=SIZE) as pilot:
        third.theme = "gruvbox"
        await settle(pilot)
    assert path.read_text() == 'theme = "gruvbox"\n', "a new file holds the theme alone"


def test_plan_reports_each_step(demo_store: Store) -> None:
    from memory_console.maintenance import plan

    steps: list[tuple[str, int, int]] = []
    made = plan(demo_store, ("decay", "expire"), now=NOW, progress=lambda *s: steps.append(s))
    first, second = made.passes  # in the passes' canonical order
    assert steps == [("reading", 0, 2), (first, 1, 2), (second, 2, 2)]


@SCREEN_ONLY
async def test_planning_and_applying_show_where_they_are(demo_store: Store) -> None:
    from memory_console.tui.plan_request import PlanRequest
    from memory_console.tui.screens.preview import PreviewScreen
    from memory_console.tui.widgets.work_progress import WorkProgress

    shown: list[str] = []
    original = WorkProgress.tick

    def tick(progress: WorkProgress) -> None:
        shown.append(progress.what)
        original(progress)

    WorkProgress.tick = tick  # type: ignore[method-assign]
    try:
        app = console(demo_store)
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            request = PlanRequest(("decay", "consolidate"), "relevance", now=NOW, real_now=NOW)
            app.push_screen(PreviewScreen(request))
            await settle(pilot)
            preview = app.screen
            assert isinstance(preview, PreviewScreen) and preview.base is not None
            await pilot.press("A")
            await settle(pilot)
            await pilot.press("enter")  # the confirmation: apply
            await settle(pilot)
    finally:
        WorkProgress.tick = original  # type: ignore[method-assign]
    assert "planning: reading the store for 2 passes…" in shown
    assert "planning: pass 1 of 2, consolidate…" in shown
    assert "planning: pass 2 of 2, decay…" in shown
    written = [line for line in shown if line.startswith("applying in one transaction: ")]
    assert written and written[-1].endswith("rows written (100%)…"), shown[-5:]


async def test_a_preview_row_is_acted_on_in_its_story_and_back_plans_again(
    demo_store: Store,
) -> None:
    from memory_console.tui.plan_request import PlanRequest
    from memory_console.tui.screens.preview import PreviewScreen

    app = console(demo_store)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        request = PlanRequest(("decay",), "relevance", now=NOW, real_now=NOW)
        app.push_screen(PreviewScreen(request))
        await settle(pilot)
        preview = app.screen
        assert isinstance(preview, PreviewScreen) and preview.base is not None
        await pilot.press("down", "down")
        place = preview.table.cursor_row
        change = preview.table.current
        assert change is not None
        await pilot.press("enter")
        await settle(pilot)
        story = app.screen
        assert isinstance(story, StoryScreen) and story.memory_id == change.id
        await pilot.press("p")  # acted on right there
        await settle(pilot)
        assert demo_store.require(change.id).is_protected
        await pilot.press("escape")
        await settle(pilot)
        assert app.screen is preview, "back to the same preview"
        assert preview.base is not None and change.id not in preview.base.touched_ids
        assert preview.table.cursor_row == place
