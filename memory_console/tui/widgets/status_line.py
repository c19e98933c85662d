"""The status line: what the table shows (count, page, order, selection) and search readiness."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

BAR_CELLS = 10

SORT_NAMES = {
    "id": "id",
    "title": "title",
    "owner": "owner",
    "topic": "topic",
    "tier": "tier",
    "memory_type": "type",
    "importance": "importance",
    "confidence": "confidence",
    "retrieval_count": "retrievals",
    "created_at": "created",
    "updated_at": "updated",
    "last_accessed_at": "last access",
    "status": "status",
    "decay_policy": "decay policy",
    "is_protected": "protected",
}


def progress_bar(done: int, total: int) -> str:
    filled = 0 if total <= 0 else min(BAR_CELLS, round(BAR_CELLS * done / total))
    return "▰" * filled + "▱" * (BAR_CELLS - filled)


class StatusLine(Static):
    """Left: the table's position; right: the search mode (or embedding progress)."""

    DEFAULT_CSS = """
    StatusLine { height: 1; width: 1fr; padding: 0 1; background: $panel; color: $text-muted; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.position = ""
        self.search_state = "keyword search"

    def show_position(self, text: str) -> None:
        self.position = text
        self.redraw()

    def show_search_state(self, text: str) -> None:
        self.search_state = text
        self.redraw()

    def redraw(self) -> None:
        width = max(0, self.size.width - 2) if self.size.width else 118
        left = Text(self.position, no_wrap=True, overflow="ellipsis")
        right = Text(self.search_state, no_wrap=True)
        gap = max(1, width - left.cell_len - right.cell_len)
        self.update(Text.assemble(left, " " * gap, right))

    def on_resize(self) -> None:
        self.redraw()
