"""A one-line busy indicator: what is being done, for how long, and whether Escape cancels."""

from __future__ import annotations

import time

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.timer import Timer
from textual.widgets import ProgressBar, Static
from textual.widgets._progress_bar import Bar

TICK = 0.25  # seconds between two updates of the elapsed time


class WorkProgress(Horizontal):
    """Hidden until `start`; an indeterminate bar (the work has no progress to report) with
    the elapsed seconds, and the time the same work took last, when known."""

    DEFAULT_CSS = """
    WorkProgress { height: 1; display: none; }
    WorkProgress.-busy { display: block; }
    WorkProgress > ProgressBar { width: 24; }
    WorkProgress > ProgressBar Bar { width: 20; }
    WorkProgress > Static { width: 1fr; color: $text-muted; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.what = ""
        self.hint = ""
        self.started = 0.0
        self.timer: Timer | None = None
        self.held = False

    def compose(self) -> ComposeResult:
        yield ProgressBar(total=None, show_percentage=False, show_eta=False)
        yield Static()

    @property
    def busy(self) -> bool:
        return self.has_class("-busy")

    def start(self, what: str, *, hint: str = "") -> None:
        self.what, self.hint = what, hint
        self.started = time.monotonic()
        self.add_class("-busy")
        self.query_one(ProgressBar).update(total=None, progress=0)
        if self.timer is None:
            self.timer = self.set_interval(TICK, self.tick)
        self.hold(self.held)
        self.tick()

    def stop(self) -> float:
        """Hide; returns the seconds the work took."""
        self.remove_class("-busy")
        if self.timer is not None:
            self.timer.stop()
            self.timer = None
        return time.monotonic() - self.started

    def hold(self, held: bool) -> None:
        """Still (`held`) while a screen covers this one: Textual repaints the screen on top
        wherever the one below it changes, and the bar's animation changes it 15 times a
        second (a review's list and tables repainted for a bar nobody sees)."""
        self.held = held
        bar = self.query_one(Bar)
        bar.auto_refresh = None if held or bar.percentage is not None else 1 / 15
        if self.timer is not None:
            if held:
                self.timer.pause()
            else:
                self.timer.resume()
        if not held and self.busy:
            self.tick()

    def tick(self) -> None:
        if self.held:
            return
        text = Text(
            f" {self.what} {time.monotonic() - self.started:.1f} s",
            no_wrap=True,
            overflow="ellipsis",
        )
        if self.hint:
            text.append(f" · {self.hint}", style="dim")
        self.query_one(Static).update(text)
