"""A table of figures where Enter on a figure asks for the memories behind it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich.text import Text
from textual import on
from textual.binding import Binding
from textual.message import Message
from textual.widgets import DataTable
from textual.widgets.data_table import CursorType

from memory_console.maintenance.health import Target
from memory_console.tui.widgets.literal_table import LiteralTable

Cell = Text | str


class FigureTable(LiteralTable[Cell]):
    """Rows of figures; a target per row, or per cell for a grid (cursor_type "cell")."""

    BINDINGS = [
        Binding(
            "enter",
            "select_cursor",
            "Show memories",
            id="figures.show",
            tooltip="Show the memories behind this figure in the memory list",
        ),
    ]

    @dataclass
    class Chosen(Message):
        table: FigureTable
        target: Target

    def __init__(
        self,
        columns: Sequence[tuple[str, int | None]],
        *,
        id: str | None = None,
        cursor_type: CursorType = "row",
    ) -> None:
        super().__init__(id=id, cursor_type=cursor_type, zebra_stripes=True)
        self.column_specs = list(columns)
        self.targets: dict[tuple[int, int], Target] = {}

    def on_mount(self) -> None:
        for position, (label, width) in enumerate(self.column_specs):
            self.add_column(
                Text(label, justify="right" if position else "left"), key=str(position), width=width
            )

    def show_rows(self, rows: Sequence[tuple[Sequence[Cell], Target | None]]) -> None:
        """Rows of cells, each with the target of the whole row."""
        self.show_grid([(cells, {-1: target} if target else {}) for cells, target in rows])

    def show_grid(self, rows: Sequence[tuple[Sequence[Cell], dict[int, Target]]]) -> None:
        """Rows of cells with a target per column (-1: the whole row)."""
        cursor = self.cursor_coordinate
        self.clear()
        self.targets = {}
        for number, (cells, targets) in enumerate(rows):
            self.add_row(*cells)
            for column, target in targets.items():
                self.targets[(number, column)] = target
        if rows:
            self.move_cursor(
                row=min(cursor.row, len(rows) - 1), column=cursor.column, animate=False
            )

    def target_at(self, row: int, column: int) -> Target | None:
        return self.targets.get((row, column)) or self.targets.get((row, -1))

    @on(DataTable.RowSelected)
    def _row(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self.choose(event.cursor_row, -1)

    @on(DataTable.CellSelected)
    def _cell(self, event: DataTable.CellSelected) -> None:
        event.stop()
        self.choose(event.coordinate.row, event.coordinate.column)

    def choose(self, row: int, column: int) -> None:
        target = self.target_at(row, column)
        if target is not None:
            self.post_message(self.Chosen(self, target))
        else:
            self.notify("no memories behind this cell: choose a number", severity="warning")
