"""The console's DataTable: a string cell or label is shown literally, never read as markup."""

from __future__ import annotations

from typing import Any, cast

from rich.text import Text
from textual.coordinate import Coordinate
from textual.widgets import DataTable
from textual.widgets.data_table import CellType, ColumnKey, RowKey

from memory_console.literal import literal


def as_cell(value: Any) -> Any:
    """A str cell as literal text: DataTable would parse it as markup (`[@click=...]` in a
    stored title would become an action run by a click)."""
    return literal(value) if isinstance(value, str) else value


class LiteralTable(DataTable[CellType]):
    """A DataTable whose str cells, row labels and column labels are shown as written."""

    def add_column(
        self,
        label: str | Text,
        *,
        width: int | None = None,
        key: str | None = None,
        default: CellType | None = None,
    ) -> ColumnKey:
        return super().add_column(as_cell(label), width=width, key=key, default=as_cell(default))

    def add_row(
        self,
        *cells: CellType,
        height: int | None = 1,
        key: str | None = None,
        label: str | Text | None = None,
    ) -> RowKey:
        shown = [cast(CellType, as_cell(cell)) for cell in cells]
        return super().add_row(*shown, height=height, key=key, label=as_cell(label))

    def update_cell(
        self,
        row_key: RowKey | str,
        column_key: ColumnKey | str,
        value: CellType,
        *,
        update_width: bool = False,
    ) -> None:
        super().update_cell(row_key, column_key, as_cell(value), update_width=update_width)

    def update_cell_at(
        self, coordinate: Coordinate, value: CellType, *, update_width: bool = False
    ) -> None:
        super().update_cell_at(coordinate, as_cell(value), update_width=update_width)
