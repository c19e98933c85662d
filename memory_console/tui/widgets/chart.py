"""The confidence chart's box: it says when its width changes so the chart is drawn again."""

from __future__ import annotations

from dataclasses import dataclass

from textual import events
from textual.message import Message
from textual.widgets import Static


class ConfidenceChart(Static):
    """Shows a chart built elsewhere (off the interface thread) at the box's width."""

    DEFAULT_CSS = """
    ConfidenceChart { height: 12; text-wrap: nowrap; text-overflow: clip; overflow: hidden; }
    """

    @dataclass
    class Resized(Message):
        chart: ConfidenceChart
        width: int

    def on_resize(self, event: events.Resize) -> None:
        self.post_message(self.Resized(self, event.size.width))
