"""The maintenance form's list of passes: a check mark when chosen, an empty box when not."""

from __future__ import annotations

from rich.segment import Segment
from textual.strip import Strip
from textual.widgets import SelectionList
from textual.widgets.option_list import OptionDoesNotExist

CHOSEN = "✓"
NOT_CHOSEN = " "


class PassList(SelectionList[str]):
    """A SelectionList whose boxes differ by glyph, not only by colour: Textual draws the
    same X on and off, which reads the same on a monochrome or colour-blind terminal."""

    def render_line(self, y: int) -> Strip:
        line = super().render_line(y)
        try:
            option = self.get_option_at_index(self.scroll_offset.y + y)
        except OptionDoesNotExist:
            return line
        segments = list(line)
        if len(segments) < 2:
            return line
        chosen = getattr(option, "value", None) in self.selected
        text, style, control = segments[1]
        segments[1] = Segment(CHOSEN if chosen else NOT_CHOSEN, style, control)
        return Strip(segments, line.cell_length)
