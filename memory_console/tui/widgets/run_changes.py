"""The changes a run made, a window of its events at a time; the edges ask for the next one."""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual import on
from textual.binding import Binding
from textual.message import Message
from textual.widgets import DataTable

from memory_console.describe import change_text
from memory_console.store import EventRecord
from memory_console.tui.formatting import one_line
from memory_console.tui.widgets.window_table import WindowTable

FIXED = (("id", "memory", 6), ("kind", "kind", 9), ("change", "change", 18))
SCROLLBAR = 2
MIN_REASON = 16  # narrower, the reason column is left out (the story shows it)


def compact_change(event: EventRecord) -> str:
    """`0.725 → 0.695`, `active → archived`: one field without its name (the kind says
    which), several as the story writes them."""
    names = set(event.before) | set(event.after)
    if len(names) == 1:
        name = names.pop()
        before, after = event.before.get(name), event.after.get(name)
        if isinstance(before, float) and isinstance(after, float):
            return f"{before:.3f} → {after:.3f}"
        return f"{before if before is not None else '-'} → {after}"
    return change_text(event).replace(" -> ", " → ")


class RunChangesTable(WindowTable):
    """Rows are events of one run; the screen reads the neighbouring window at the edges."""

    BINDINGS = [
        Binding(
            "enter",
            "select_cursor",
            "Open",
            id="run_changes.open",
            tooltip="Open this memory's whole story",
        ),
    ]

    @dataclass
    class EdgeReached(Message):
        table: RunChangesTable
        direction: str

    @dataclass
    class Opened(Message):
        table: RunChangesTable
        memory_id: int

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=True)
        self.events: list[EventRecord] = []

        self.titles: dict[int, str] = {}
        self.widths = (0, 0)

    def column_widths(self) -> tuple[int, int]:
        """Title and reason widths sharing what the fixed columns leave."""
        width = (self.size.width or 70) - SCROLLBAR
        spare = width - sum(w + 2 for _, _, w in FIXED) - 4
        title = max(10, spare // 2)
        if spare - title < MIN_REASON:
            return max(8, spare + 2), 0
        return title, spare - title

    def show_events(
        self, events: list[EventRecord], titles: dict[int, str], *, cursor: int = 0
    ) -> None:
        self.events, self.titles = events, titles
        self.rebuild(cursor)

    def rebuild(self, cursor: int | None = None) -> None:
        row = self.cursor_row if cursor is None else cursor
        self.widths = title_width, reason_width = self.column_widths()
        self.clear(columns=True)
        self.add_column("memory", key="id", width=6)
        self.add_column("title", key="title", width=title_width)
        for key, label, width in FIXED[1:]:
            self.add_column(label, key=key, width=width)
        if reason_width:
            self.add_column("reason", key="reason", width=reason_width)
        for event in self.events:
            cells: list[Text | str] = [
                Text(str(event.memory_id), justify="right"),
                one_line(self.titles.get(event.memory_id, "(deleted since)"), title_width),
                event.kind,
                one_line(compact_change(event), 120),
            ]
            if reason_width:
                cells.append(one_line(event.query or "", 200))
            self.add_row(*cells)
        if self.events:
            self.move_cursor(row=max(0, min(row, len(self.events) - 1)), animate=False)

    def on_resize(self) -> None:
        if self.column_widths() != self.widths:
            self.rebuild()

    @on(DataTable.RowSelected)
    def _selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        if 0 <= self.cursor_row < len(self.events):
            self.post_message(self.Opened(self, self.events[self.cursor_row].memory_id))
