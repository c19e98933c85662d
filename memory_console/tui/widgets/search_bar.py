"""The search field shown by `/`: Enter searches, Escape returns to browsing."""

from __future__ import annotations

from dataclasses import dataclass

from textual import on
from textual.binding import Binding
from textual.message import Message
from textual.widgets import Input


class SearchBar(Input):
    """A one-line query field; it reports Submitted queries and Escape as Closed."""

    DEFAULT_CSS = """
    SearchBar { height: 1; width: 1fr; border-left: outer $accent; background: $boost; }
    """
    BINDINGS = [
        Binding("escape", "close", "Back to browsing", id="search.close",
                tooltip="Leave search and return to the memories as they were"),
    ]

    @dataclass
    class Query(Message):
        bar: SearchBar
        text: str

    @dataclass
    class Closed(Message):
        bar: SearchBar

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(placeholder="search: type words, then Enter (Escape: back to browsing)",
                         id=id, compact=True)

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if event.value.strip():
            self.post_message(self.Query(self, event.value.strip()))

    def action_close(self) -> None:
        self.post_message(self.Closed(self))
