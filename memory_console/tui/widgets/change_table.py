"""The preview's table: a window of a plan's proposed changes; its edges ask for the next one."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from rich.text import Text
from textual import events, on
from textual.binding import Binding
from textual.message import Message
from textual.widgets import DataTable

from memory_console.literal import literal
from memory_console.tui.formatting import SELECTED_MARK, one_line
from memory_console.tui.plan_rows import RowChange
from memory_console.tui.widgets.window_table import WindowTable

LEFT_OUT_MARK = "×"
FIXED = (
    ("mark", " ", 1),
    ("id", "id", 7),
    ("pass", "pass", 11),
    ("field", "field", 11),
    ("change", "before → after", 18),
)
SCROLLBAR = 2
MIN_REASON = 30  # narrower, the reason is left to the detail below the table


def value_text(name: str, value: Any) -> str:
    if value is None:
        return "-"
    if name == "consolidated_into":
        return "new memory" if isinstance(value, int) and value < 0 else f"#{value}"
    if name == "superseded_by":
        return f"#{value}"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def change_text(change: RowChange, name: str) -> str:
    before, after = change.fields[name]
    if change.is_new:
        return f"new, {value_text(name, after)}"
    return f"{value_text(name, before)} → {value_text(name, after)}"


FIELD_NAMES = {
    "decay_policy": "policy",
    "memory_type": "type",
    "consolidated_into": "merged",
    "superseded_by": "superseded",
}


def field_text(change: RowChange) -> str:
    if change.is_new:
        return "created"
    name = FIELD_NAMES.get(change.main_field, change.main_field)
    more = len(change.fields) - 1
    return f"{name} +{more}" if more else name


class ChangeTable(WindowTable):
    """Rows are RowChanges of one window; the screen pages the window over the sorted rows."""

    BINDINGS = [
        Binding(
            "enter",
            "select_cursor",
            "Open",
            id="changes.open",
            tooltip="Open this memory's whole story (a merge: the merge review)",
        ),
        Binding(
            "space",
            "toggle_selection",
            "Select",
            id="changes.select",
            tooltip="Mark this change's memory for exclude or protect",
        ),
        Binding(
            "home,g",
            "edge('first')",
            "First",
            show=False,
            id="changes.first",
            tooltip="Go to the first change",
        ),
        Binding(
            "end,G",
            "edge('last')",
            "Last",
            show=False,
            id="changes.last",
            tooltip="Go to the last change",
        ),
    ]

    @dataclass
    class Highlighted(Message):
        table: ChangeTable
        change: RowChange | None

    @dataclass
    class Opened(Message):
        table: ChangeTable
        change: RowChange

    @dataclass
    class EdgeReached(Message):
        """next, previous, first or last window."""

        table: ChangeTable
        direction: str

    @dataclass
    class SelectionChanged(Message):
        table: ChangeTable
        count: int

    @dataclass
    class SortRequested(Message):
        table: ChangeTable
        column: str

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=True)
        self.changes: list[RowChange] = []
        self.titles: dict[int, str] = {}
        self.left_out: Collection[int] = ()
        self.selected: set[int] = set()
        self.widths: tuple[int, int] = (0, 0)

    def show_window(
        self, changes: list[RowChange], left_out: Collection[int], *, cursor: int = 0
    ) -> None:
        """Show these changes; `left_out` are the positions in it the edits take out."""
        self.changes = changes
        self.left_out = left_out
        self.rebuild(cursor)

    def show_titles(self, titles: dict[int, str]) -> None:
        self.titles = titles
        self.rebuild()

    def column_widths(self) -> tuple[int, int]:
        """Title and reason widths sharing what the fixed columns leave; where the reason
        would be cut to a few words it is left out (0) and the title takes its room: the
        detail below the table says the selected change's reason whole."""
        width = max(60, (self.size.width or 118) - SCROLLBAR)
        spare = width - sum(w + 2 for _, _, w in FIXED) - 4
        title = max(6, spare * 9 // 20)
        if spare - title < MIN_REASON:
            return spare + 2, 0
        return title, spare - title

    def rebuild(self, cursor_row: int | None = None) -> None:
        row = self.cursor_row if cursor_row is None else cursor_row
        self.widths = self.column_widths()
        title_width, reason_width = self.widths
        self.clear(columns=True)
        for key, label, width in FIXED[:2]:
            self.add_column(label, key=key, width=width)
        self.add_column("title", key="title", width=title_width)
        for key, label, width in FIXED[2:]:
            self.add_column(label, key=key, width=width)
        if reason_width:
            self.add_column("reason", key="reason", width=reason_width)
        for position, change in enumerate(self.changes):
            self.add_row(*self.cells(change, position in self.left_out), key=str(position))
        if self.changes:
            self.move_cursor(row=max(0, min(row, len(self.changes) - 1)), animate=False)
        self.post_message(self.Highlighted(self, self.current))

    def cells(self, change: RowChange, left_out: bool) -> list[Text | str]:
        style = "dim strike" if left_out else ""
        mark = SELECTED_MARK if change.id in self.selected else LEFT_OUT_MARK if left_out else ""
        ident = "new" if change.is_new else str(change.id)
        title = self.titles.get(change.id, "…")
        return [
            Text(mark, style="bold"),
            Text(ident, style=style),
            one_line(title, self.widths[0], style=style),
            literal(change.pass_name, style),
            literal(field_text(change), style),
            literal(change_text(change, change.main_field), style),
            *([one_line(change.reason, 200, style=style)] if self.widths[1] else []),
        ]

    @property
    def current(self) -> RowChange | None:
        if not self.changes or not 0 <= self.cursor_row < len(self.changes):
            return None
        return self.changes[self.cursor_row]

    def targets(self) -> list[int]:
        """Memories an exclude or protect applies to: the marked ones, else the current."""
        if self.selected:
            return sorted(self.selected)
        current = self.current
        return [current.id] if current is not None and not current.is_new else []

    def clear_selection(self) -> bool:
        if not self.selected:
            return False
        self.selected.clear()
        self.rebuild()
        self.post_message(self.SelectionChanged(self, 0))
        return True

    # -- events and actions ---------------------------------------------------------------

    def on_resize(self, event: events.Resize) -> None:
        if self.column_widths() != self.widths:
            self.rebuild()

    @on(DataTable.RowHighlighted)
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        self.post_message(self.Highlighted(self, self.current))

    @on(DataTable.RowSelected)
    def _selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        if self.current is not None:
            self.post_message(self.Opened(self, self.current))

    @on(DataTable.HeaderSelected)
    def _header(self, event: DataTable.HeaderSelected) -> None:
        event.stop()
        self.post_message(self.SortRequested(self, str(event.column_key.value)))

    def action_toggle_selection(self) -> None:
        change = self.current
        if change is None or change.is_new:
            return
        self.selected.symmetric_difference_update({change.id})
        row = self.cursor_row
        for column, value in zip(
            ("mark",), self.cells(change, row in self.left_out)[:1], strict=True
        ):
            self.update_cell(str(row), column, value)
        self.post_message(self.SelectionChanged(self, len(self.selected)))
        if self.cursor_row < len(self.changes) - 1:
            super().action_cursor_down()
