"""The search field shown by `/`: Enter searches, Escape returns to browsing."""

from __future__ import annotations

from dataclasses import dataclass

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import Input, Label, Static

from memory_console.tui.widgets.literal_input import LiteralInput


class SearchBar(Vertical):
    """`search ›` and a one-line query field; reports queries (Enter) and Escape. A second
    line, shown only when needed, says the results are keyword matches only and why."""

    DEFAULT_CSS = """
    SearchBar { height: auto; width: 1fr; background: $boost; }
    SearchBar > Horizontal { height: 1; }
    SearchBar Label { width: auto; padding: 0 1; color: $accent; text-style: bold; }
    SearchBar Input { width: 1fr; }
    SearchBar > #search-fallback { height: auto; padding: 0 1; color: $warning; display: none; }
    """
    BINDINGS = [
        Binding(
            "escape",
            "close",
            "Back to browsing",
            id="search.close",
            tooltip="Leave search and return to the memories as they were",
        ),
    ]

    @dataclass
    class Query(Message):
        bar: SearchBar
        text: str

    @dataclass
    class Closed(Message):
        bar: SearchBar

    def compose(self) -> ComposeResult:
        with Horizontal():
            yield Label("search ›")
            yield LiteralInput(
                placeholder="words or a question, then Enter (Escape: back to browsing)",
                id="search-input",
                compact=True,
            )
        yield Static(id="search-fallback")

    def show_fallback(self, sentence: str | None) -> None:
        """Say that the results come from keywords only (None: they do not)."""
        notice = self.query_one("#search-fallback", Static)
        notice.update(sentence or "")
        notice.display = bool(sentence)

    def focus(self, scroll_visible: bool = True) -> SearchBar:
        self.query_one(Input).focus(scroll_visible)
        return self

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if event.value.strip():
            self.post_message(self.Query(self, event.value.strip()))

    def action_close(self) -> None:
        self.post_message(self.Closed(self))
