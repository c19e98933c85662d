"""Snapshots of every console screen on the fixed demo store at a fixed `now`, each at 80x24
and at 120x40: every screen shows its key facts whole on both."""

from __future__ import annotations

from typing import Any

from memory_console.store import MemoryFilter, Store
from tests.helpers import SNAPSHOT_SIZES, console, press, settle

SIZES = SNAPSHOT_SIZES


def story_memory(store: Store) -> int:
    """A memory with a history worth drawing: accessed several times, not protected."""
    rows = store.page(
        MemoryFilter(status="active", is_protected=False, memory_type="episodic"),
        sort="retrieval_count",
        descending=True,
        limit=1,
    ).rows
    return rows[0].id


@SIZES
def test_main_screen(snap_compare: Any, demo_store: Store, size: tuple[int, int]) -> None:
    assert snap_compare(console(demo_store), terminal_size=size, run_before=settle)


@SIZES
def test_story_screen(snap_compare: Any, demo_store: Store, size: tuple[int, int]) -> None:
    ident = story_memory(demo_store)

    async def open_story(pilot: Any) -> None:
        from memory_console.tui.screens.story import StoryScreen

        await settle(pilot)
        pilot.app.push_screen(StoryScreen(ident))
        await settle(pilot)

    assert snap_compare(console(demo_store), terminal_size=size, run_before=open_story)


@SIZES
def test_forget_dialog(snap_compare: Any, demo_store: Store, size: tuple[int, int]) -> None:
    run_before = press("space", "space", "space", "f")
    assert snap_compare(console(demo_store), terminal_size=size, run_before=run_before)


@SIZES
def test_edit_dialog(snap_compare: Any, demo_store: Store, size: tuple[int, int]) -> None:
    assert snap_compare(console(demo_store), terminal_size=size, run_before=press("e"))


@SIZES
def test_sort_dialog(snap_compare: Any, demo_store: Store, size: tuple[int, int]) -> None:
    assert snap_compare(console(demo_store), terminal_size=size, run_before=press("s"))


@SIZES
def test_search_results(snap_compare: Any, demo_store: Store, size: tuple[int, int]) -> None:
    run_before = press("slash", *"coffee", "enter")
    assert snap_compare(console(demo_store), terminal_size=size, run_before=run_before)


@SIZES
def test_help_screen(snap_compare: Any, demo_store: Store, size: tuple[int, int]) -> None:
    assert snap_compare(console(demo_store), terminal_size=size, run_before=press("question_mark"))


@SIZES
def test_purge_dialog(snap_compare: Any, demo_store: Store, size: tuple[int, int]) -> None:
    run_before = press("space", "space", "space", "X")
    assert snap_compare(console(demo_store), terminal_size=size, run_before=run_before)
