"""The status line: what the table shows (count, page, order, selection)."""

from __future__ import annotations

from textual.widgets import Static

from memory_console.literal import literal

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


class StatusLine(Static):
    """One line under the table saying where the person is."""

    DEFAULT_CSS = """
    StatusLine {
        height: 1; width: 1fr; padding: 0 1; background: $panel; color: $text-muted;
        text-wrap: nowrap; text-overflow: ellipsis;
    }
    """

    position = ""

    def show_position(self, text: str) -> None:
        self.position = text
        # The line holds a search query, an owner or a figure's label: stored or typed text.
        line = literal(text, layout=False)
        line.no_wrap, line.overflow = True, "ellipsis"
        self.update(line, layout=False)
