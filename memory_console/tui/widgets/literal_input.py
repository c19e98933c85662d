"""The console's Input and TextArea: a value holding control characters (an edited title or
content) draws them as visible symbols instead of sending them to the terminal."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Input, TextArea

from memory_console.literal import pictured


class LiteralInput(Input):
    """An Input whose value is drawn with its control characters made visible, one symbol
    each, so the cursor stays where the characters are."""

    @property
    def _value(self) -> Text:
        if self.password:
            return super()._value
        text = Text(pictured(self.value), no_wrap=True, overflow="ignore", end="")
        return self.highlighter(text) if self.highlighter is not None else text


class LiteralTextArea(TextArea):
    """A TextArea whose lines are drawn with their control characters made visible."""

    def get_line(self, line_index: int) -> Text:
        return Text(pictured(self.document.get_line(line_index)), end="", no_wrap=True)
