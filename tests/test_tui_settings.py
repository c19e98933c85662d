"""The console's settings screen (`,`): the store's settings, changed and recorded; and the
story of a recalled memory showing the fade and the jump of point 1's worked figure."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memory_console.api import MemoryAPI
from memory_console.store import Store
from tests.helpers import DAY, NOW, console, memory, notes, settle

SIZE = (120, 40)


async def test_the_settings_screen_changes_a_setting(backend_demo_store: Store) -> None:
    from memory_console.tui.screens.settings import SettingsScreen

    demo_store = backend_demo_store  # on both backends (the snapshots below stay on SQLite)

    app = console(demo_store)
    seen = notes(app)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("comma")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, SettingsScreen)
        keys = [spec.key for spec, _, _ in screen.rows]
        assert keys[:2] == ["decay_enabled", "decay_policy"] and "consolidate.min_cosine" in keys
        screen.table.move_cursor(row=1)
        await pilot.press("enter")
        await pilot.press(*["backspace"] * 12, *"fast", "enter")
        await settle(pilot)
        assert any("decay_policy must be one of" in note for note in seen)
        assert demo_store.settings().decay_policy == "relevance"
        await pilot.press(*["backspace"] * 12, *"periodic", "enter")
        await settle(pilot)
        assert demo_store.settings().decay_policy == "periodic"
        change = demo_store.setting_history()[0]
        assert (change.key, change.before, change.after, change.actor) == (
            "decay_policy",
            None,
            "periodic",
            "console",
        )
        assert screen.rows[1][2] == "store"


async def test_read_only_cannot_change_a_setting(demo_file: Path) -> None:
    with Store(demo_file, read_only=True) as store:
        app = console(store, read_only=True)
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            await pilot.press("comma")
            await settle(pilot)
            assert app.screen.check_action("change", ()) is False


async def test_the_story_shows_the_worked_figure_of_a_recall(db_path: Path) -> None:
    from memory_console.tui.screens.story import StoryScreen

    with Store(db_path) as store:
        ident = store.add_many(
            [memory("the user is building an iron farm", days_old=200, confidence=0.7)],
            now=NOW - 200 * DAY,
        )[0]
    with MemoryAPI(db_path, semantic=False) as api:
        api.recall("iron farm", now=NOW)
    with Store(db_path) as store:
        app = console(store)
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            app.push_screen(StoryScreen(ident))
            await settle(pilot)
            story = app.screen.story  # type: ignore[attr-defined]
            assert [round(v, 3) for _, v in story.trajectory] == [0.7, 0.515, 0.545, 0.545]
            assert round(story.record.confidence, 3) == 0.545


def test_settings_screen_snapshot(snap_compare: Any, demo_store: Store) -> None:
    async def open_settings(pilot: Any) -> None:
        await settle(pilot)
        await pilot.press("comma")
        await settle(pilot)

    assert snap_compare(console(demo_store), terminal_size=(120, 40), run_before=open_settings)


def test_settings_screen_small_terminal(snap_compare: Any, demo_store: Store) -> None:
    async def open_settings(pilot: Any) -> None:
        await settle(pilot)
        await pilot.press("comma")
        await settle(pilot)

    assert snap_compare(console(demo_store), terminal_size=(80, 24), run_before=open_settings)
