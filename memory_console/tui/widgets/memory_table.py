"""The memory table: one page of memories (or search hits), multi-select, edges that page."""

from __future__ import annotations

import time
from dataclasses import dataclass

from rich.text import Text
from textual import events, on
from textual.binding import Binding
from textual.message import Message
from textual.widgets import DataTable

from memory_console.embed.hits import SearchHit
from memory_console.store import MemoryRecord
from memory_console.tui.widgets.columns import Cell, Column, fit_columns
from memory_console.tui.widgets.window_table import WindowTable

SCROLLBAR = 2


class MemoryTable(WindowTable):
    """Rows are memories; the page behind them is fetched by the screen. Moving past the first
    or last row asks for the neighbouring page instead of holding every row in the widget."""

    BINDINGS = [
        Binding(
            "enter",
            "select_cursor",
            "Open",
            id="table.open",
            tooltip="Open this memory's whole story: history, chart, forecast",
        ),
        Binding(
            "j",
            "cursor_down",
            "Down",
            show=False,
            id="table.down",
            tooltip="Next memory (moves to the next page at the bottom)",
        ),
        Binding(
            "k",
            "cursor_up",
            "Up",
            show=False,
            id="table.up",
            tooltip="Previous memory (moves to the previous page at the top)",
        ),
        Binding(
            "space",
            "toggle_selection",
            "Select",
            id="table.select",
            tooltip="Select or unselect this memory for a bulk action",
        ),
        Binding(
            "asterisk",
            "select_page",
            "Select page",
            show=False,
            id="table.select_page",
            tooltip="Select every memory on this page (again: unselect them)",
        ),
        Binding(
            "home,g",
            "edge('first')",
            "First page",
            show=False,
            id="table.first",
            tooltip="Go to the first memory",
        ),
        Binding(
            "end,G",
            "edge('last')",
            "Last page",
            show=False,
            id="table.last",
            tooltip="Go to the last memory",
        ),
    ]

    @dataclass
    class EdgeReached(Message):
        """The cursor wants a neighbouring page: next, previous, first or last."""

        table: MemoryTable
        direction: str

    @dataclass
    class Highlighted(Message):
        """The cursor is on another memory (None: the table is empty)."""

        table: MemoryTable
        record: MemoryRecord | None

    @dataclass
    class Opened(Message):
        """Enter on a memory: show its whole story."""

        table: MemoryTable
        record: MemoryRecord

    @dataclass
    class SortRequested(Message):
        """A column header was clicked: sort by its store column."""

        table: MemoryTable
        sort: str

    @dataclass
    class SelectionChanged(Message):
        table: MemoryTable
        count: int

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=True, cell_padding=1)
        self.records: list[MemoryRecord] = []
        self.hits: dict[int, SearchHit] = {}
        self.search_mode = False
        self.selected: set[int] = set()
        self.changed: set[int] = set()  # rows another process changed since they were shown
        self.shown_at = time.time()
        self.reveal = False
        self.sort_key = "last_accessed_at"
        self.descending = True
        self.columns_in_view: list[Column] = []
        self.loaded = False  # given its rows at least once (before: no row is no answer)
        # Each shown memory's confidence as a decay run now would set it, by id (computed
        # with the page, in its worker).
        self.confidence_now: dict[int, float] = {}

    # -- content ------------------------------------------------------------------------

    def show_records(
        self,
        records: list[MemoryRecord],
        *,
        hits: list[SearchHit] | None = None,
        focus_id: int | None = None,
        focus_end: bool = False,
        moves: int = 0,
        focus_row: int | None = None,
        mark_changes: bool = False,
        confidence_now: dict[int, float] | None = None,
    ) -> None:
        """Replace the rows; the cursor lands on `focus_id` if present, else on `focus_row`
        (the place it held), else the first (or with focus_end the last) row, then `moves`
        rows further (negative: up). With `mark_changes`, rows that changed since they were
        shown, and rows made since then, are marked (rows that only moved in are not).
        `confidence_now`: the rows' confidence as of now, by id (else the last known)."""
        if mark_changes:
            shown = {record.id: record.revision for record in self.records}
            self.changed |= {
                r.id
                for r in records
                if (r.id in shown and shown[r.id] != r.revision)
                or (r.id not in shown and r.created_at >= self.shown_at)
            }
        self.shown_at = time.time()  # the real clock: other processes write with it
        self.records = records
        if confidence_now is not None:
            self.confidence_now = confidence_now
        self.loaded = True
        self.search_mode = hits is not None
        self.hits = {hit.record.id: hit for hit in hits or []}
        row = len(records) - 1 if focus_end else 0
        if focus_row is not None:
            row = focus_row
        if focus_id is not None:
            row = next((i for i, r in enumerate(records) if r.id == focus_id), row)
        self.rebuild(max(0, min(len(records) - 1, row + moves)))

    def rebuild(self, cursor_row: int | None = None) -> None:
        """Draw the rows again (after a resize, a selection or a reveal)."""
        row = self.cursor_row if cursor_row is None else cursor_row
        width = max(20, self.size.width - SCROLLBAR) if self.size.width else 78
        self.columns_in_view = fit_columns(
            width, search=self.search_mode, relevance=self.has_relevance
        )
        self.clear(columns=True)
        for column in self.columns_in_view:
            self.add_column(self.header(column), width=column.width, key=column.key)
        for record in self.records:
            self.add_row(*self.cells(record), key=str(record.id))
        if self.records:
            self.move_cursor(row=min(row, len(self.records) - 1), animate=False)
        self.post_message(self.Highlighted(self, self.current))

    @property
    def has_relevance(self) -> bool:
        """The hits carry the search's relevance word (strong, weak, unrelated)."""
        return any(getattr(hit, "relevance", None) for hit in self.hits.values())

    def header(self, column: Column) -> Text:
        label = column.label
        if column.sort is not None and column.sort == self.sort_key and not self.search_mode:
            label += " ▼" if self.descending else " ▲"
        return Text(label, justify="right" if column.right else "left", style="bold")

    def cells(self, record: MemoryRecord) -> list[Text | str]:
        cell = Cell(
            record,
            self.hits.get(record.id),
            record.id in self.selected,
            self.reveal,
            record.id in self.changed,
            self.confidence_now.get(record.id),
        )
        return [column.render(cell) for column in self.columns_in_view]

    def redraw_row(self, record_id: int) -> None:
        record = next((r for r in self.records if r.id == record_id), None)
        if record is not None:
            for column, value in zip(self.columns_in_view, self.cells(record), strict=True):
                self.update_cell(str(record_id), column.key, value)

    @property
    def current(self) -> MemoryRecord | None:
        if not self.records or not 0 <= self.cursor_row < len(self.records):
            return None
        return self.records[self.cursor_row]

    def targets(self) -> list[int]:
        """The memories an action applies to: the selection, else the cursor's memory."""
        if self.selected:
            return sorted(self.selected)
        return [self.current.id] if self.current else []

    def clear_selection(self) -> bool:
        if not self.selected:
            return False
        changed = list(self.selected)
        self.selected.clear()
        for ident in changed:
            self.redraw_row(ident)
        self.post_message(self.SelectionChanged(self, 0))
        return True

    # -- events and actions -------------------------------------------------------------

    def on_resize(self, event: events.Resize) -> None:
        fitted = fit_columns(
            max(20, event.size.width - SCROLLBAR),
            search=self.search_mode,
            relevance=self.has_relevance,
        )
        if [(c.key, c.width) for c in fitted] != [(c.key, c.width) for c in self.columns_in_view]:
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
        column = next((c for c in self.columns_in_view if c.key == event.column_key.value), None)
        if column is not None and column.sort is not None and not self.search_mode:
            self.post_message(self.SortRequested(self, column.sort))

    def action_toggle_selection(self) -> None:
        record = self.current
        if record is None:
            return
        self.selected.symmetric_difference_update({record.id})
        self.redraw_row(record.id)
        self.post_message(self.SelectionChanged(self, len(self.selected)))
        if self.cursor_row < len(self.records) - 1:
            super().action_cursor_down()

    def action_select_page(self) -> None:
        page = {record.id for record in self.records}
        if page <= self.selected:
            self.selected -= page
        else:
            self.selected |= page
        self.rebuild()
        self.post_message(self.SelectionChanged(self, len(self.selected)))
