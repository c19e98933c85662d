"""A DataTable showing one window of a longer list; moving past its edges asks for another."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from rich.text import Text
from textual.message import Message

from memory_console.tui.widgets.literal_table import LiteralTable


class WindowTable(LiteralTable[Text | str]):
    """The cursor keys of a table that holds one window (a page) of rows at a time.

    Moving down from the last row or up from the first, by line or by page, posts
    EdgeReached(table, "next") or (table, "previous") instead, and action_edge asks for the
    "first" or "last" window; the screen answers by showing that window. Each subclass
    defines its own EdgeReached(table, direction) message, so screens tell tables apart.
    """

    EdgeReached: ClassVar[Callable[[Any, str], Message]]

    def edge_reached(self, direction: str) -> None:
        self.post_message(type(self).EdgeReached(self, direction))

    def _at_last_row(self) -> bool:
        return self.row_count > 0 and self.cursor_row >= self.row_count - 1

    def _at_first_row(self) -> bool:
        return self.row_count > 0 and self.cursor_row <= 0

    def action_cursor_down(self) -> None:
        if self._at_last_row():
            self.edge_reached("next")
        else:
            super().action_cursor_down()

    def action_cursor_up(self) -> None:
        if self._at_first_row():
            self.edge_reached("previous")
        else:
            super().action_cursor_up()

    def action_page_down(self) -> None:
        if self._at_last_row():
            self.edge_reached("next")
        else:
            super().action_page_down()

    def action_page_up(self) -> None:
        if self._at_first_row():
            self.edge_reached("previous")
        else:
            super().action_page_up()

    def action_edge(self, direction: str) -> None:
        self.edge_reached(direction)
