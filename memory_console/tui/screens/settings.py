"""The settings screen: the store's settings with where each comes from; change one."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import DataTable, Header, Input, Static

from memory_console.maintenance.registry import parameter_classes
from memory_console.tui.screens.base import ConsoleScreen
from memory_console.tui.widgets.footer import FittedFooter
from memory_console.tui.widgets.literal_input import LiteralInput
from memory_console.tui.widgets.literal_table import LiteralTable

ACTOR = "console"


class SettingsScreen(ConsoleScreen):
    """Every setting the store keeps for all its processes (as `memory-console config`)."""

    BINDINGS = [
        Binding(
            "enter",
            "change",
            "Change",
            id="settings.change",
            tooltip="Type a new value for the setting under the cursor (default: back to "
            "the built-in value); recorded with who and when",
        ),
        Binding("escape", "back", "Back", id="settings.back", tooltip="Back to where you were"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[tuple[Any, Any, str]] = []
        self.editing: str | None = None

    def compose(self) -> ComposeResult:
        yield Header()
        yield LiteralTable(id="settings-table", cursor_type="row", zebra_stripes=True)
        yield Static(id="settings-help")
        yield LiteralInput(id="settings-input", placeholder="new value")
        yield FittedFooter()

    @property
    def table(self) -> DataTable[str | Text]:
        return self.query_one("#settings-table", DataTable)

    def on_mount(self) -> None:
        self.sub_title = "store settings"
        for key, label, width in (
            ("key", "key", 34),
            ("value", "value", 12),
            ("source", "from", 8),
            ("help", "meaning", 80),
        ):
            self.table.add_column(label, key=key, width=width)
        self.query_one("#settings-input", Input).display = False
        self.load()
        self.table.focus()

    def store_changed(self) -> None:
        self.load(self.table.cursor_row)

    def load(self, cursor: int = 0) -> None:
        self.rows = self.context.store.settings().rows(parameter_classes())
        self.table.clear()
        for spec, value, source in self.rows:
            style = "bold" if source == "store" else ""
            self.table.add_row(
                Text(spec.key, style=style),
                Text(spec.show(value), style=style),
                source,
                spec.help,
            )
        if self.rows:
            self.table.move_cursor(row=min(cursor, len(self.rows) - 1))
        self.show_help()

    @on(DataTable.RowHighlighted, "#settings-table")
    def show_help(self) -> None:
        row = self.table.cursor_row
        if not self.rows or not 0 <= row < len(self.rows):
            return
        spec, value, source = self.rows[row]
        line = Text(f"{spec.key} = {spec.show(value)} ({source})", style="bold")
        if not self.context.read_only:
            line.append("  enter: change", style="bold")
        line.append(f"\n{spec.help}", style="dim")
        self.query_one("#settings-help", Static).update(line)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "change" and self.context.read_only:
            return False
        return super().check_action(action, parameters)

    @on(DataTable.RowSelected, "#settings-table")
    def selected(self) -> None:
        """Enter on the table (which takes the key before the screen does)."""
        if self.context.read_only:
            self.notify(
                "read-only store: changing a setting is disabled (opened with --read-only)",
                severity="warning",
            )
            return
        self.action_change()

    def action_change(self) -> None:
        row = self.table.cursor_row
        if not self.rows or not 0 <= row < len(self.rows):
            return
        spec, value, _ = self.rows[row]
        self.editing = spec.key
        field = self.query_one("#settings-input", Input)
        field.display = True
        field.value = spec.show(value)
        field.border_title = f"new value of {spec.key} (default: the built-in value)"
        field.focus()

    @on(Input.Submitted, "#settings-input")
    def submitted(self, event: Input.Submitted) -> None:
        key, text = self.editing, event.value.strip()
        if key is None:
            return
        value = None if text.lower() == "default" else text
        try:
            self.context.store.set_setting(
                key,
                value,
                ACTOR,
                parameter_sets=parameter_classes(),
                now=self.context.action_moment(),
            )
        except ValueError as error:
            self.notify(str(error), severity="error")
            return
        self.notify(f"{key} set to {text} (recorded in config history)")
        self.close_input()
        self.load(self.table.cursor_row)

    def close_input(self) -> None:
        self.editing = None
        field = self.query_one("#settings-input", Input)
        field.display = False
        self.table.focus()

    def action_back(self) -> None:
        if self.editing is not None:
            self.close_input()
            return
        self.app.pop_screen()
