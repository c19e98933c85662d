"""The search field shown by `/`: Enter searches, Escape returns to browsing."""

from __future__ import annotations

from dataclasses import dataclass

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.message import Message
from textual.widgets import Input, Label

from memory_console.tui.widgets.literal_input import LiteralInput


class SearchBar(Horizontal):
    """`search ›` and a one-line query field; reports queries (Enter) and Escape."""

    DEFAULT_CSS = """
    SearchBar { height: 1; width: 1fr; background: $boost; }
    SearchBar > Label { width: auto; padding: 0 1; color: $accent; text-style: bold; }
    SearchBar > Input { width: 1fr; }
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
        yield Label("search ›")
        yield LiteralInput(
            placeholder="words or a question, then Enter (Escape: back to browsing)",
            id="search-input",
            compact=True,
        )

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
