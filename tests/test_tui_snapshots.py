"""Snapshots of every console screen on the fixed demo store at a fixed `now`, each at 80x24
and at 120x40: every screen shows its key facts whole on both."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from memory_console.store import MemoryFilter, Store
from tests.helpers import NOW, SNAPSHOT_SIZES, console, press, settle

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
def test_main_screen_with_langgraph_namespaces(
    snap_compare: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, size: tuple[int, int]
) -> None:
    """What LangGraph agents put, under each owner by namespace (italic), beside the
    topics of the owner's memories in none; one namespace is chosen."""
    from memory_console import langgraph

    monkeypatch.setattr(langgraph, "now_ts", lambda: NOW)  # the console's fixed `now`
    path = tmp_path / "memories.db"
    with Store(path, actor="cli") as store:
        store.add_many(
            [
                {"owner": "alice", "topic": "preferences", "content": "Takes her coffee black"},
                {"owner": "alice", "topic": "contacts", "content": "Her sister Joana is a nurse"},
            ],
            now=NOW - 86_400,
        )
        with langgraph.MemoryConsoleStore(store, graph="trip-planner", semantic=False) as agent:
            for namespace, key, text in (
                (("alice", "memories"), "diet", "Vegetarian since 2019"),
                (("alice", "memories"), "seat", "Prefers aisle seats on long flights"),
                (("alice", "memories", "trips"), "lisbon", "Planning a trip to Lisbon in May"),
                (("bob", "memories"), "editor", "Uses Neovim with a dark theme"),
            ):
                agent.put(namespace, key, {"text": text}, index=["text"])
    with Store(path, actor="tui") as store:

        async def choose_namespace(pilot: Any) -> None:
            from memory_console.tui.widgets.topics import TopicsTree

            await settle(pilot)
            tree = pilot.app.screen.query_one(TopicsTree)
            alice = next(n for n in tree.root.children if n.data == ("alice", None, None))
            chosen = next(n for n in alice.children if n.data[1] == "memories")
            tree.select_node(chosen)  # which folds it, as Enter does
            await settle(pilot)
            chosen.expand()
            await settle(pilot)

        assert snap_compare(console(store), terminal_size=size, run_before=choose_namespace)


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
