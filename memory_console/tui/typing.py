"""Keys typed as a word never act on memories.

A key that changes memories (protect, archive, forget, restore, purge, edit, undo) acts only
when it is pressed on its own: it waits a short window (WINDOW, 0.3 s) and acts only if no
other key follows within it (a letter, or a move that would change the memories it acts on),
and a key that comes within the window after another letter is ignored. So a word typed
where no text field has the focus (an Escape that did not close the search, then "kafka")
changes nothing, and says so once. An Escape and the letter typed right after it reach the
app as one "alt+letter" key; the app reads it as the Escape, then the letter within a burst
(MemoryConsoleApp.on_key).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from textual import events
from textual.timer import Timer
from textual.widget import Widget

WINDOW = 0.3  # seconds: faster than a deliberate second key, slower than typing a word
SAY_EVERY = 2.0  # seconds between two notices of ignored typing


@dataclass(frozen=True, slots=True)
class Typed:
    """What a key is to the guard: a printable one, and whether it came within the window
    after the one before."""

    printable: bool
    in_burst: bool


class TypingGuard:
    """The app's one record of when printable keys came, and the write action waiting."""

    def __init__(self, window: float = WINDOW) -> None:
        self.window = window
        self.last_typed: float | None = None
        self.pending: Timer | None = None
        self.pending_key = ""
        self.pending_what = ""
        self.said_at: float | None = None

    def typed(self, event: events.Key) -> Typed:
        """Note a key; a printable one within the window after another is in a burst."""
        printable = event.is_printable and event.character is not None and event.key != "space"
        if not printable:
            return Typed(False, False)
        now = time.monotonic()
        burst = self.last_typed is not None and now - self.last_typed < self.window
        self.last_typed = now
        return Typed(True, burst)

    def defer(self, widget: Widget, act: Callable[[], object], key: str, what: str) -> None:
        """Run `act` once the window has passed, unless another key comes first."""
        self.cancel_pending()

        def fire() -> None:
            self.pending = None
            act()

        self.pending = widget.set_timer(self.window, fire)
        self.pending_key, self.pending_what = key, what

    def cancel_pending(self) -> tuple[str, str] | None:
        """Drop the action waiting, if one is: its key and what it would have done."""
        if self.pending is None:
            return None
        self.pending.stop()
        self.pending = None
        return self.pending_key, self.pending_what

    def should_say(self) -> bool:
        """Whether to tell of ignored typing now (once a burst, not once a letter)."""
        now = time.monotonic()
        if self.said_at is not None and now - self.said_at < SAY_EVERY:
            return False
        self.said_at = now
        return True
