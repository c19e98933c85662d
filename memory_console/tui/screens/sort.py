"""The sort chooser: every sortable column; choosing the current one reverses the order."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from memory_console.store.vocab import SORTABLE
from memory_console.tui.widgets.status_line import SORT_NAMES

# Columns whose natural first look is biggest or newest first.
DESCENDING_FIRST = frozenset(
    {
        "importance",
        "confidence",
        "retrieval_count",
        "created_at",
        "updated_at",
        "last_accessed_at",
        "is_protected",
    }
)


def next_order(column: str, current: str, descending: bool) -> tuple[str, bool]:
    """Choosing the current column reverses it; another column starts in its natural order."""
    if column == current:
        return column, not descending
    return column, column in DESCENDING_FIRST


class SortScreen(ModalScreen[tuple[str, bool] | None]):
    """Answers (column, descending), or None (Escape)."""

    BINDINGS = [
        Binding("escape", "cancel", "Cancel", id="sort.cancel", tooltip="Keep the current order"),
    ]

    def __init__(self, current: str, descending: bool) -> None:
        super().__init__()
        self.current = current
        self.descending = descending

    def compose(self) -> ComposeResult:
        options = []
        for column in SORTABLE:
            name = SORT_NAMES[column]
            if column == self.current:
                arrow = "▼ descending" if self.descending else "▲ ascending"
                name = f"{name}  ({arrow}; choose again to reverse)"
            options.append(Option(name, id=column))
        with Vertical(id="dialog", classes="dialog sort") as dialog:
            dialog.border_title = "Sort by"
            yield OptionList(*options, id="sort-options")

    def on_mount(self) -> None:
        options = self.query_one(OptionList)
        options.highlighted = SORTABLE.index(self.current) if self.current in SORTABLE else 0
        options.focus()

    @on(OptionList.OptionSelected)
    def chosen(self, event: OptionList.OptionSelected) -> None:
        column = event.option.id or self.current
        self.dismiss(next_order(column, self.current, self.descending))

    def action_cancel(self) -> None:
        self.dismiss(None)
