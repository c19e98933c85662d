"""The forget confirmation: says what will happen, names the protected memories and lets the
operator include or skip them, asks for a reason, answers with it and the ids to forget."""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Checkbox, Input, Label, Static

from memory_console.sensitive import mask
from memory_console.tui.actions import FORGET_REASON, plural
from memory_console.tui.formatting import one_line
from memory_console.tui.screens.confirm import ChoiceScreen
from memory_console.tui.widgets.literal_input import LiteralInput

NAMED = 6  # protected memories named before "and N more"


def consequences(count: int) -> str:
    them = "it" if count == 1 else "them"
    return (
        f"Forgetting archives {plural(count)} with the reason below, written to "
        f"{'its' if count == 1 else 'their'} history. Agents stop recalling {them} and no pass "
        f"touches {them} any more. Nothing is deleted: r (restore) or u (undo) brings "
        f"{them} back; deleting for good is `memory-console purge`, after an export."
    )


def protected_text(protected: dict[int, str]) -> Text:
    """`2 of these are protected:` and each one's id and title, masked, on one line each."""
    count = len(protected)
    text = Text(f"{count:,} of these {'is' if count == 1 else 'are'} protected:", style="bold")
    for ident, title in list(protected.items())[:NAMED]:
        text.append(f"\n  #{ident} ")
        text.append(one_line(mask(title), 56))
    if count > NAMED:
        text.append(f"\n  … and {count - NAMED:,} more", style="dim")
    return text


def protected_choice(verb: str, ids: list[int], protected: dict[int, str]) -> ChoiceScreen:
    """The question an archive of protected memories asks: skip them (first) or take all."""
    body = protected_text(protected)
    others = len(ids) - len(protected)
    skipped = f"{verb}s the other {plural(others)}" if others else f"{verb}s nothing"
    body.append(f"\n\nProtected means no pass touches them. Skipping them {skipped}.")
    return ChoiceScreen(
        f"{verb.capitalize()} {plural(len(ids))}, {len(protected):,} protected?",
        body,
        [
            ("skip", f"Skip the protected ({len(protected):,})", "primary"),
            ("all", f"{verb.capitalize()} all {len(ids):,}", "error"),
        ],
    )


@dataclass(frozen=True)
class ForgetAnswer:
    """The reason, and the ids to forget (the protected ones left out unless included)."""

    reason: str
    ids: list[int]


class ForgetScreen(ModalScreen[ForgetAnswer | None]):
    """Answers the reason and the ids to forget (Enter or the button), or None (Escape)."""

    DEFAULT_CSS = """
    ForgetScreen #dialog {
        height: auto;
    }
    """

    BINDINGS = [
        Binding("escape", "cancel", "Cancel", id="forget.cancel", tooltip="Keep the memories"),
    ]

    def __init__(
        self, ids: list[int], titles: list[str], protected: dict[int, str] | None = None
    ) -> None:
        super().__init__()
        self.ids = ids
        self.titles = titles
        self.protected = protected or {}

    def compose(self) -> ComposeResult:
        # It scrolls: with protected memories named it is taller than a 24-row terminal.
        with VerticalScroll(id="dialog", classes="dialog") as dialog:
            dialog.border_title = f"Forget {plural(len(self.ids))}?"
            if self.titles:
                yield Label(one_line(mask(self.titles[0]), 70, style="bold"))
            else:
                listed = ", ".join(f"#{i}" for i in self.ids[:8])
                more = f" and {len(self.ids) - 8:,} more" if len(self.ids) > 8 else ""
                yield Label(Text(f"{listed}{more}", style="bold"))
            yield Static(consequences(len(self.ids)), classes="explain")
            if self.protected:
                yield Static(protected_text(self.protected), id="forget-protected-list")
                yield Checkbox(
                    f"Forget the protected ones too ({len(self.protected):,})",
                    False,
                    id="forget-protected",
                    tooltip="Unticked, the protected memories are skipped",
                )
            yield Label("reason")
            yield LiteralInput(FORGET_REASON, id="forget-reason")
            with Horizontal(classes="buttons"):
                yield Button("Forget", variant="error", id="forget-yes")
                yield Button("Cancel", id="forget-no")

    def on_mount(self) -> None:
        # The reason is what an operator types first; Enter in it forgets.
        self.query_one("#forget-reason", Input).focus()

    @on(Button.Pressed, "#forget-yes")
    @on(Input.Submitted, "#forget-reason")
    def confirm(self) -> None:
        reason = self.query_one("#forget-reason", Input).value.strip() or FORGET_REASON
        ids = self.ids
        if self.protected and not self.query_one("#forget-protected", Checkbox).value:
            ids = [i for i in self.ids if i not in self.protected]
        self.dismiss(ForgetAnswer(reason, ids))

    @on(Button.Pressed, "#forget-no")
    def action_cancel(self) -> None:
        self.dismiss(None)
