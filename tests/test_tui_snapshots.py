"""Snapshots of every console screen on the fixed demo store at a fixed `now`."""

from __future__ import annotations

from typing import Any

from memory_console.store import MemoryFilter, Store
from tests.helpers import console, settle

WIDE = (120, 36)
SMALL = (80, 24)


def story_memory(store: Store) -> int:
    """A memory with a history worth drawing: accessed several times, not protected."""
    rows = store.page(
        MemoryFilter(status="active", is_protected=False, memory_type="episodic"),
        sort="retrieval_count",
        descending=True,
        limit=1,
    ).rows
    return rows[0].id


def test_main_screen(snap_compare: Any, demo_store: Store) -> None:
    assert snap_compare(console(demo_store), terminal_size=WIDE, run_before=settle)


def test_main_screen_small_terminal(snap_compare: Any, demo_store: Store) -> None:
    assert snap_compare(console(demo_store), terminal_size=SMALL, run_before=settle)


def test_story_screen(snap_compare: Any, demo_store: Store) -> None:
    ident = story_memory(demo_store)

    async def open_story(pilot: Any) -> None:
        from memory_console.tui.screens.story import StoryScreen

        await settle(pilot)
        pilot.app.push_screen(StoryScreen(ident))
        await settle(pilot)

    assert snap_compare(console(demo_store), terminal_size=WIDE, run_before=open_story)


def test_forget_dialog(snap_compare: Any, demo_store: Store) -> None:
    async def select_and_forget(pilot: Any) -> None:
        await settle(pilot)
        await pilot.press("space", "space", "space", "f")
        await settle(pilot)

    assert snap_compare(console(demo_store), terminal_size=WIDE, run_before=select_and_forget)


def test_search_results(snap_compare: Any, demo_store: Store) -> None:
    async def search(pilot: Any) -> None:
        await settle(pilot)
        await pilot.press("slash", *"coffee", "enter")
        await settle(pilot)

    assert snap_compare(console(demo_store), terminal_size=WIDE, run_before=search)


def test_help_screen(snap_compare: Any, demo_store: Store) -> None:
    async def help_screen(pilot: Any) -> None:
        await settle(pilot)
        await pilot.press("question_mark")
        await settle(pilot)

    assert snap_compare(console(demo_store), terminal_size=WIDE, run_before=help_screen)


def test_purge_dialog(snap_compare: Any, demo_store: Store) -> None:
    async def select_and_purge(pilot: Any) -> None:
        await settle(pilot)
        await pilot.press("space", "space", "space", "X")
        await settle(pilot)

    assert snap_compare(console(demo_store), terminal_size=(120, 40), run_before=select_and_purge)


def test_purge_dialog_small_terminal(snap_compare: Any, demo_store: Store) -> None:
    async def select_and_purge(pilot: Any) -> None:
        await settle(pilot)
        await pilot.press("space", "space", "space", "X")
        await settle(pilot)

    assert snap_compare(console(demo_store), terminal_size=SMALL, run_before=select_and_purge)
