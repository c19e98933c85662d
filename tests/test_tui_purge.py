"""The console's bulk purge (X) and bulk forget: the dialog, the store, the table, undo."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from memory_console.store import MemoryFilter, Store
from memory_console.tui.screens.main import MainScreen
from memory_console.tui.screens.story import StoryScreen
from tests.helpers import console, dialog_text, notes, open_on, settle

SIZE = (120, 36)


def active_unprotected(store: Store, count: int) -> list[int]:
    rows = store.page(MemoryFilter(status="active", is_protected=False), limit=count).rows
    return [r.id for r in rows]


def purge_files(store: Store) -> list[Path]:
    return sorted(store.path.parent.glob(f"{store.path.stem}.purged-*.jsonl"))


async def test_purge_two_selected_memories(demo_store: Store) -> None:
    ids = active_unprotected(demo_store, 3)
    app = console(demo_store)
    seen = notes(app)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_on(app, pilot, ids)
        await pilot.press("space", "space")
        chosen = sorted(screen.table.selected)
        assert len(chosen) == 2
        await pilot.press("X")
        await settle(pilot)
        said = dialog_text(app)
        assert "Purge 2 memories for good?" in said
        assert ".purged-" in said and "Undo (u) cannot take a purge back" in said
        assert "memory-console import FILE --allow-secrets --allow-health" in said
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, MainScreen) and not purge_files(demo_store)
        assert all(demo_store.get(i) is not None for i in chosen), "escape keeps them"
        await pilot.press("X")
        await settle(pilot)
        await pilot.click("#confirm-yes")
        await settle(pilot)
        assert isinstance(app.screen, MainScreen)
        shown = [r.id for r in screen.table.records]
        assert shown == sorted(set(ids) - set(chosen))
        assert not screen.table.selected
        await pilot.press("u")
        await settle(pilot)
        assert all(demo_store.get(i) is None for i in chosen), "u cannot bring them back"
    (out,) = purge_files(demo_store)
    assert all(demo_store.get(i) is None for i in chosen)
    assert any(f"purged 2 memories; written to {out.name} first" in text for text in seen)
    assert demo_store.history(chosen[0]) == []
    (erasure,) = demo_store.erasures()
    assert erasure.memories == 2 and erasure.actor == "tui" and erasure.selection == "ids"


async def test_purge_from_a_story_goes_back_to_the_list(demo_store: Store) -> None:
    ident = active_unprotected(demo_store, 1)[0]
    app = console(demo_store)
    async with app.run_test(size=SIZE) as pilot:
        await open_on(app, pilot, [ident])
        app.push_screen(StoryScreen(ident))
        await settle(pilot)
        await pilot.press("X")
        await settle(pilot)
        assert "Purge 1 memory for good?" in dialog_text(app)
        await pilot.click("#confirm-yes")
        await settle(pilot)
        assert isinstance(app.screen, MainScreen)
    assert demo_store.get(ident) is None


async def test_read_only_refuses_purge(demo_file: Any, tmp_path: Path) -> None:
    path = tmp_path / "ro.db"
    shutil.copy(demo_file, path)
    with Store(path, read_only=True, actor="tui") as store:
        ident = active_unprotected(store, 1)[0]
        app = console(store)
        seen = notes(app)
        async with app.run_test(size=SIZE) as pilot:
            screen = await open_on(app, pilot, [ident])
            assert screen.active_bindings["X"].enabled is False
            await pilot.press("X")
            await settle(pilot)
            assert isinstance(app.screen, MainScreen), "no purge dialog on a read-only store"
        assert store.get(ident) is not None
    assert any("read-only store: purge is disabled" in text for text in seen)


async def test_forget_in_bulk_archives_every_selected_memory(demo_store: Store) -> None:
    ids = active_unprotected(demo_store, 4)
    app = console(demo_store)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_on(app, pilot, ids)
        await pilot.press("space", "space", "space")
        chosen = sorted(screen.table.selected)
        assert len(chosen) == 3
        await pilot.press("f")
        await settle(pilot)
        await pilot.click("#forget-yes")
        await settle(pilot)
    assert [demo_store.require(i).status for i in ids] == [
        "archived" if i in chosen else "active" for i in ids
    ]


async def test_the_palette_and_help_offer_purge(demo_store: Store) -> None:
    from memory_console.tui.palette import ConsoleCommands
    from memory_console.tui.screens.help import key_sections

    rows = {action: key for _, section in key_sections() for key, action, _ in section}
    assert rows["Purge"] == "X"
    ident = active_unprotected(demo_store, 1)[0]
    app = console(demo_store)
    async with app.run_test(size=SIZE) as pilot:
        await open_on(app, pilot, [ident])
        provider = ConsoleCommands(app.screen)
        titles = {title: help_text for title, help_text, _ in provider.commands()}
        assert "Purge" in titles and "purge file" in titles["Purge"]


def test_the_dialog_names_joined_memories_and_backups(tmp_path: Path) -> None:
    from memory_console.store import ErasureScope, Joined
    from memory_console.tui.screens.purge import purge_body, purge_title

    scope = ErasureScope(
        selected=[12, 13],
        joined=[Joined(40, 12, "consolidated into #40"), Joined(7, 13, "absorbed #13")],
        backups=[tmp_path / "memories.db.schema3.bak"],
    )
    body = str(purge_body(scope, tmp_path / "memories.purged-x.jsonl"))
    assert purge_title(scope) == "Purge 4 memories for good?"
    assert "Erases 2 memories" in body and "erased too (2)" in body
    assert "#40: consolidated into #40" in body and "#7: absorbed #13" in body
    assert "memories.purged-x.jsonl" in body and "memories.db.schema3.bak" in body
