"""The console's forget and archive of a selection holding protected memories: the dialog
names them and the operator includes or skips them; the forget dialog starts in its reason."""

from __future__ import annotations

from typing import Any

from textual.pilot import Pilot
from textual.widgets import Checkbox, Input

from memory_console.store import Store
from memory_console.tui.app import MemoryConsoleApp
from memory_console.tui.screens.confirm import ChoiceScreen
from memory_console.tui.screens.forget import ForgetScreen
from memory_console.tui.screens.main import MainScreen
from tests.helpers import NOW, console, memory, open_on, settle

SIZE = (100, 30)


def three(store: Store) -> list[int]:
    """Three memories, the last two protected."""
    return store.add_many(
        [
            memory("Plain note", days_old=3, title="Plain note"),
            memory("Kept one", days_old=3, title="Kept one", is_protected=True),
            memory("Kept two", days_old=3, title="Kept two", is_protected=True),
        ],
        now=NOW,
    )


def statuses(store: Store, ids: list[int]) -> list[str]:
    return [store.require(i).status for i in ids]


async def select_all(app: MemoryConsoleApp, pilot: Pilot[Any], ids: list[int]) -> MainScreen:
    screen = await open_on(app, pilot, ids)
    for ident in ids:
        screen.table.move_cursor(row=[r.id for r in screen.table.records].index(ident))
        await pilot.press("space")
    await settle(pilot)
    assert sorted(screen.action_targets()) == sorted(ids)
    return screen


async def test_forget_of_three_with_two_protected_skips_them_unless_ticked(store: Store) -> None:
    ids = three(store)
    app = console(store)
    async with app.run_test(size=SIZE) as pilot:
        await select_all(app, pilot, ids)
        await pilot.press("f")
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, ForgetScreen)
        assert app.focused is dialog.query_one("#forget-reason", Input)
        said = str(dialog.query_one("#forget-protected-list").render())
        assert "2 of these are protected" in said
        assert f"#{ids[1]} Kept one" in said and f"#{ids[2]} Kept two" in said
        assert dialog.query_one("#forget-protected", Checkbox).value is False
        await pilot.press(*"moved on", "enter")  # typed straight into the reason
        await settle(pilot)
        assert isinstance(app.screen, MainScreen)
        assert statuses(store, ids) == ["archived", "active", "active"]
        assert store.require(ids[0]).metadata["forget_reason"] == "moved on"

        await select_all(app, pilot, ids[1:])
        await pilot.press("f")
        await settle(pilot)
        app.screen.query_one("#forget-protected", Checkbox).value = True
        await pilot.press("enter")
        await settle(pilot)
    assert statuses(store, ids) == ["archived"] * 3


async def test_archive_of_protected_memories_asks_and_skips_them(store: Store) -> None:
    ids = three(store)
    app = console(store)
    async with app.run_test(size=SIZE) as pilot:
        await select_all(app, pilot, ids)
        await pilot.press("a")
        await settle(pilot)
        assert isinstance(app.screen, ChoiceScreen)
        assert "Kept one" in str(app.screen.query_one(".explain").render())
        await pilot.press("enter")  # the first, focused choice: skip the protected
        await settle(pilot)
    assert statuses(store, ids) == ["archived", "active", "active"]


async def test_the_forget_dialog_with_protected_ones_fits_a_small_terminal(store: Store) -> None:
    ids = store.add_many(
        [
            memory(f"Note {i}", days_old=3, title=f"Title {i} " + "long " * 12, is_protected=i > 0)
            for i in range(9)
        ],
        now=NOW,
    )
    app = console(store)
    async with app.run_test(size=(80, 24)) as pilot:
        await open_on(app, pilot, ids)
        await pilot.press("asterisk", "f")
        await settle(pilot)
        assert isinstance(app.screen, ForgetScreen)
        screen = app.screen.region
        for part in ("#forget-reason", "#forget-yes", "#forget-protected"):
            region = app.screen.query_one(part).region
            assert screen.contains_region(region), part
        assert app.focused is app.screen.query_one("#forget-reason", Input)
