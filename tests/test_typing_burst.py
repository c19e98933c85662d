"""Letters typed as a word never act on memories: on every screen, a word typed quickly where
no text field has the focus changes nothing in the store; a key that changes memories,
pressed on its own, still acts once the typing window has passed."""

from __future__ import annotations

from typing import Any

import pytest

from memory_console.store import Store
from memory_console.tui.screens.main import MainScreen
from memory_console.tui.typing import WINDOW
from tests.helpers import console, db_rows, notes, settle

SIZE = (120, 36)
# Words that hold every single-key action that changes memories: a(rchive), p(rotect),
# P (unprotect), r(estore), f(orget), X (purge), e(dit), u(ndo); each key both first in a
# word and after another letter.
WORDS = ("kafka", "reXPort", "pupa", "upfe")
MEMORY_STATE = "SELECT id, status, is_protected, title, content, topic, memory_type FROM memory"


def state(store: Store) -> list[Any]:
    return db_rows(store.path, MEMORY_STATE + " ORDER BY id")


async def type_word(pilot: Any, word: str) -> None:
    await pilot.press(*word)
    await pilot.pause(WINDOW * 2)  # longer than the window: a key left waiting would act now
    await settle(pilot)


async def open_story(pilot: Any) -> None:
    await pilot.press("enter")


async def open_key(key: str, pilot: Any) -> None:
    await pilot.press(key)


SCREENS = {
    "main": None,
    "story": open_story,
    "health": lambda pilot: open_key("H", pilot),
    "runs": lambda pilot: open_key("R", pilot),
    "maintenance": lambda pilot: open_key("m", pilot),
}


@pytest.mark.parametrize("screen", list(SCREENS))
async def test_a_word_typed_on_a_screen_changes_no_memory(demo_store: Store, screen: str) -> None:
    app = console(demo_store)
    app.typing.window = WINDOW  # the console's own window, as a person meets it
    seen = notes(app)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        opener = SCREENS[screen]
        if opener is not None:
            await opener(pilot)
            await settle(pilot)
        before = state(demo_store)
        for word in WORDS:
            await type_word(pilot, word)
        assert state(demo_store) == before
    if screen in ("main", "story"):
        assert any("typing is not a command" in note for note in seen), seen


async def test_a_key_pressed_on_its_own_still_acts(demo_store: Store) -> None:
    app = console(demo_store)
    app.typing.window = WINDOW
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, MainScreen)
        record = app.screen.current_record()
        assert record is not None and not record.is_protected
        await pilot.press("p")
        assert not demo_store.require(record.id).is_protected  # waiting out the window
        await pilot.pause(WINDOW * 2)
        await settle(pilot)
        assert demo_store.require(record.id).is_protected
        # Two keys that change memories in a row, as fast as typing: neither acts.
        await pilot.press("P", "a")
        await pilot.pause(WINDOW * 2)
        await settle(pilot)
        assert demo_store.require(record.id).is_protected
        assert demo_store.require(record.id).status == "active"
        # A move right after the key: it would act on another row than the one it was
        # pressed on, so it does not act at all.
        await pilot.press("P", "down")
        await pilot.pause(WINDOW * 2)
        await settle(pilot)
        assert demo_store.require(record.id).is_protected
        following = app.screen.current_record()
        assert following is not None and not demo_store.require(following.id).is_protected


@pytest.mark.parametrize("letter", ["a", "k", "p"])
async def test_an_escape_that_arrives_with_a_letter_still_goes_back(
    demo_store: Store, letter: str
) -> None:
    # A terminal sends an Escape and a letter typed right after it as one "alt+letter" key.
    from memory_console.tui.screens.story import StoryScreen

    app = console(demo_store)
    app.typing.window = WINDOW
    seen = notes(app)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await open_story(pilot)
        await settle(pilot)
        assert isinstance(app.screen, StoryScreen)
        before = state(demo_store)
        await pilot.press(f"alt+{letter}")
        await pilot.pause(WINDOW * 2)
        await settle(pilot)
        assert isinstance(app.screen, MainScreen)  # the Escape acted
        assert state(demo_store) == before  # the letter came with it: typing, not a command
        if letter in ("a", "p"):
            assert any("typing is not a command" in note for note in seen), seen
