"""Typed dialogs: what will happen, a button for each answer, Escape to leave things be."""

from __future__ import annotations

from rich.console import RenderableType
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Static
from textual.widgets.button import ButtonVariant

from memory_console.tui.widgets.literal_table import as_cell


class ConfirmScreen(ModalScreen[bool]):
    """Answers True (the button) or False (Cancel or Escape)."""

    BINDINGS = [
        Binding(
            "escape",
            "cancel",
            "Cancel",
            id="confirm.cancel",
            tooltip="Close without doing anything",
        ),
    ]

    def __init__(
        self,
        title: str,
        body: RenderableType,
        yes: str,
        *,
        variant: ButtonVariant = "primary",
        no: str = "Cancel",
    ) -> None:
        super().__init__()
        self.title_text = title
        self.body = body
        self.yes = yes
        self.no = no
        self.variant = variant

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog confirm") as dialog:
            dialog.border_title = self.title_text
            yield Static(as_cell(self.body), classes="explain")
            with Horizontal(classes="buttons"):
                yield Button(self.yes, variant=self.variant, id="confirm-yes")
                yield Button(self.no, id="confirm-no")

    def on_mount(self) -> None:
        self.query_one("#confirm-yes", Button).focus()

    @on(Button.Pressed, "#confirm-yes")
    def _yes(self) -> None:
        self.dismiss(True)

    @on(Button.Pressed, "#confirm-no")
    def action_cancel(self) -> None:
        self.dismiss(False)


class ChoiceScreen(ModalScreen[str | None]):
    """Answers the id of the button pressed, or None (Cancel or Escape)."""

    BINDINGS = [
        Binding(
            "escape", "cancel", "Cancel", id="choice.cancel", tooltip="Close without doing anything"
        ),
    ]

    def __init__(
        self, title: str, body: RenderableType, choices: list[tuple[str, str, ButtonVariant]]
    ) -> None:
        super().__init__()
        self.title_text = title
        self.body = body
        self.choices = choices

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog confirm") as dialog:
            dialog.border_title = self.title_text
            yield Static(as_cell(self.body), classes="explain")
            with Horizontal(classes="buttons"):
                for ident, label, variant in self.choices:
                    yield Button(label, variant=variant, id=f"choice-{ident}")
                yield Button("Cancel", id="choice-cancel")

    def on_mount(self) -> None:
        self.query(Button).first().focus()

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        ident = (event.button.id or "").removeprefix("choice-")
        self.dismiss(None if ident == "cancel" else ident)

    def action_cancel(self) -> None:
        self.dismiss(None)
