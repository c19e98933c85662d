"""The edit form: title, content, topic and type of one memory; answers the changed fields."""

from __future__ import annotations

from typing import Any

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Select, TextArea

from memory_console.literal import literal
from memory_console.store import MemoryRecord
from memory_console.store.vocab import MEMORY_TYPES, TOPICS
from memory_console.tui.widgets.literal_input import LiteralInput, LiteralTextArea


class EditScreen(ModalScreen[dict[str, Any] | None]):
    """Answers {field: new value} for the fields that changed, or None (Escape)."""

    # On a short terminal the content box shrinks so that Save and Cancel stay on screen.
    VERTICAL_BREAKPOINTS = [(0, "-short"), (30, "-tall")]

    BINDINGS = [
        Binding("escape", "cancel", "Cancel", id="edit.cancel", tooltip="Close without saving"),
        Binding("ctrl+s", "save", "Save", id="edit.save", tooltip="Save the changed fields"),
    ]

    def __init__(self, record: MemoryRecord, values: dict[str, Any], reason: str = "") -> None:
        super().__init__()
        self.record = record
        self.values = {
            "title": record.title,
            "content": record.content,
            "topic": record.topic,
            "memory_type": record.memory_type,
            **values,
        }
        self.reason = reason

    def compose(self) -> ComposeResult:
        topics = list(dict.fromkeys([*TOPICS, self.record.topic]))
        with Vertical(id="dialog", classes="dialog edit") as dialog:
            dialog.border_title = f"Edit memory #{self.record.id}"
            if self.reason:
                yield Label(literal(self.reason), classes="error")
            yield Label("title")
            yield LiteralInput(str(self.values["title"]), id="edit-title")
            yield Label("content")
            yield LiteralTextArea(
                str(self.values["content"]),
                id="edit-content",
                soft_wrap=True,
                show_line_numbers=False,
            )
            with Horizontal(classes="choices"):
                with Vertical():
                    yield Label("topic")
                    yield Select(
                        [(literal(t), t) for t in topics],
                        value=self.values["topic"],
                        allow_blank=False,
                        id="edit-topic",
                    )
                with Vertical():
                    yield Label("type")
                    yield Select(
                        [(t, t) for t in MEMORY_TYPES],
                        value=self.values["memory_type"],
                        allow_blank=False,
                        id="edit-type",
                    )
            with Horizontal(classes="buttons"):
                yield Button("Save", variant="primary", id="edit-save")
                yield Button("Cancel", id="edit-cancel")

    def on_mount(self) -> None:
        self.query_one("#edit-title", Input).focus()

    def changes(self) -> dict[str, Any]:
        entered = {
            "title": self.query_one("#edit-title", Input).value,
            "content": self.query_one("#edit-content", TextArea).text,
            "topic": self.query_one("#edit-topic", Select).value,
            "memory_type": self.query_one("#edit-type", Select).value,
        }
        return {
            name: value for name, value in entered.items() if value != getattr(self.record, name)
        }

    @on(Button.Pressed, "#edit-save")
    @on(Input.Submitted, "#edit-title")
    def action_save(self) -> None:
        self.dismiss(self.changes())

    @on(Button.Pressed, "#edit-cancel")
    def action_cancel(self) -> None:
        self.dismiss(None)
