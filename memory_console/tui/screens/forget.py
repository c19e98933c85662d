"""The forget confirmation: says what will happen, asks for a reason, answers with it."""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Static

from memory_console.sensitive import mask
from memory_console.tui.actions import FORGET_REASON, plural
from memory_console.tui.formatting import one_line
from memory_console.tui.widgets.literal_input import LiteralInput


def consequences(count: int) -> str:
    them = "it" if count == 1 else "them"
    return (
        f"Forgetting archives {plural(count)} with the reason below, written to "
        f"{'its' if count == 1 else 'their'} history. Agents stop recalling {them} and no pass "
        f"touches {them} any more. Nothing is deleted: r (restore) or u (undo) brings "
        f"{them} back; deleting for good is `memory-console purge`, after an export."
    )


class ForgetScreen(ModalScreen[str | None]):
    """Answers the reason to forget with (Enter or the button), or None (Escape)."""

    BINDINGS = [
        Binding("escape", "cancel", "Cancel", id="forget.cancel", tooltip="Keep the memories"),
    ]

    def __init__(self, ids: list[int], titles: list[str]) -> None:
        super().__init__()
        self.ids = ids
        self.titles = titles

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog", classes="dialog") as dialog:
            dialog.border_title = f"Forget {plural(len(self.ids))}?"
            if self.titles:
                yield Label(one_line(mask(self.titles[0]), 70, style="bold"))
            else:
                listed = ", ".join(f"#{i}" for i in self.ids[:8])
                more = f" and {len(self.ids) - 8:,} more" if len(self.ids) > 8 else ""
                yield Label(Text(f"{listed}{more}", style="bold"))
            yield Static(consequences(len(self.ids)), classes="explain")
            yield Label("reason")
            yield LiteralInput(FORGET_REASON, id="forget-reason")
            with Horizontal(classes="buttons"):
                yield Button("Forget", variant="error", id="forget-yes")
                yield Button("Cancel", id="forget-no")

    def on_mount(self) -> None:
        self.query_one("#forget-yes", Button).focus()

    @on(Button.Pressed, "#forget-yes")
    @on(Input.Submitted, "#forget-reason")
    def confirm(self) -> None:
        reason = self.query_one("#forget-reason", Input).value.strip() or FORGET_REASON
        self.dismiss(reason)

    @on(Button.Pressed, "#forget-no")
    def action_cancel(self) -> None:
        self.dismiss(None)
