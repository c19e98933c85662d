"""The parameter form: one row per parameter the chosen passes read, empty meaning default."""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.validation import Integer, Number
from textual.widgets import Input, Label

from memory_console.tui.plan_request import ParamField
from memory_console.tui.widgets.literal_input import LiteralInput


class ParamForm(Vertical):
    """Rows of name, value and default; `values` holds what was typed, kept across changes
    of passes and policy so a value typed once is not lost."""

    DEFAULT_CSS = """
    ParamForm { height: auto; }
    ParamForm .param-row { height: 1; margin-bottom: 0; }
    ParamForm .param-name { width: 26; }
    ParamForm Input { width: 12; margin-right: 2; background: $boost; }
    ParamForm .param-default { width: 1fr; color: $text-muted; }
    ParamForm .param-set { margin-top: 1; text-style: bold; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.fields: list[ParamField] = []
        self.values: dict[str, str] = {}

    def compose(self) -> ComposeResult:
        current = None
        for item in self.fields:
            heading = ", ".join(item.sets)
            if heading != current:
                current = heading
                yield Label(f"{heading} parameters", classes="param-set")
            validator = Integer() if item.is_int else Number()
            with Horizontal(classes="param-row"):
                yield Label(item.name, classes="param-name")
                yield LiteralInput(
                    self.values.get(item.name, ""),
                    placeholder=item.default_text,
                    id=f"param-{item.name}",
                    compact=True,
                    validators=[validator],
                    tooltip=f"{item.name}: empty uses the default {item.default_text}",
                )
                default = Text(f"default {item.default_text}")
                yield Label(default, classes="param-default")

    def show(self, fields: list[ParamField]) -> None:
        """Offer these parameters (the rows are built again)."""
        if [f for f in fields] == self.fields:
            return
        self.fields = fields
        self.refresh(recompose=True)

    def overrides(self) -> dict[str, str]:
        """The values typed for the parameters offered now (empty ones use the default)."""
        offered = {item.name for item in self.fields}
        return {
            name: text for name, text in self.values.items() if name in offered and text.strip()
        }

    def clear(self) -> None:
        self.values.clear()
        for field in self.query(Input):
            field.value = ""

    @on(Input.Changed)
    def _changed(self, event: Input.Changed) -> None:
        if event.input.id and event.input.id.startswith("param-"):
            self.values[event.input.id.removeprefix("param-")] = event.value.strip()
