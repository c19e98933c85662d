"""The confidence chart: past (from events) joined to the forecast, drawn by plotext."""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from typing import Any

from rich.text import Text

from memory_console.timeutil import DAY, to_date
from memory_console.tui.story_data import Story

# plotext keeps one global figure: every chart is built under this lock.
PLOTEXT_LOCK = threading.Lock()
BACKGROUND = re.compile(r"\x1b\[48;[0-9;]+m")
PAST_COLOR = "cyan"
FORECAST_COLOR = "yellow"
FLOOR_COLOR = "red"
NOW_COLOR = "gray"  # plotext's name; the legend uses Rich's NOW_STYLE
NOW_STYLE = "grey58"
MARKER = "hd"  # half blocks: drawn by every terminal font, unlike braille

Series = list[tuple[float, float]]


@dataclass(frozen=True, slots=True)
class ChartSpec:
    """What to draw, in days from now on x (negative: the past) and confidence on y."""

    past: Series
    future: Series
    floor: float
    width: int
    height: int
    ticks: list[float]
    labels: list[str]


def steps(points: list[tuple[float, float]], now: float) -> Series:
    """Points as a step line in days from now: each value holds until the next one."""
    line: Series = []
    for moment, value in points:
        x = (moment - now) / DAY
        if line and line[-1][1] != value:
            line.append((x, line[-1][1]))
        line.append((x, value))
    return line


def chart_spec(story: Story, width: int, height: int) -> ChartSpec:
    now = story.now
    past = steps(story.trajectory, now)
    future = steps(story.forecast.points, now)
    if past and future:
        future.insert(0, past[-1])
    xs = [x for x, _ in past + future]
    low, high = min(xs), max(xs)
    if high - low < 1:
        high = low + 1
    ticks = [low, 0.0, high] if low < -1 and high > 1 else [low, high]
    labels = [to_date(now + tick * DAY) for tick in ticks]
    return ChartSpec(
        past, future, story.forecast.threshold, max(30, width), max(8, height), ticks, labels
    )


def build_chart(story: Story, width: int, height: int) -> Text:
    """The chart as Rich text, sized to the cells given; backgrounds dropped so it sits on
    whatever theme the console uses."""
    spec = chart_spec(story, width, height)
    with PLOTEXT_LOCK:
        import plotext

        ansi = (
            draw_v5(plotext, spec) if hasattr(plotext, "clear_figure") else draw_v6(plotext, spec)
        )
    return Text.from_ansi(BACKGROUND.sub("", ansi), no_wrap=True)


def draw_v6(plotext: Any, spec: ChartSpec) -> str:
    """plotext 6: the explicit figure API."""
    figure = plotext.figure
    figure.clear()
    figure.plot_size(spec.width, spec.height)
    figure.theme("colorless")
    figure.canvas("default")
    for series, color in ((spec.past, PAST_COLOR), (spec.future, FORECAST_COLOR)):
        if len(series) > 1:
            marker = plotext.marker(MARKER, pixel=plotext.pixel(color, "default"))
            signal = figure.signal([x for x, _ in series], [y for _, y in series], marker=marker)
            figure.draw(signal.lines())
    figure.line(spec.floor, pixel=plotext.pixel(FLOOR_COLOR))
    figure.line(0.0, orientation="v", pixel=plotext.pixel(NOW_COLOR))
    figure.ruler("y").lim(0, 1)
    figure.ruler("x").ticks(spec.ticks, spec.labels)
    return str(figure.build().string())


def draw_v5(plotext: Any, spec: ChartSpec) -> str:
    """plotext 5: the pyplot-like module functions."""
    plotext.clear_figure()
    plotext.plotsize(spec.width, spec.height)
    plotext.theme("clear")
    for series, color in ((spec.past, PAST_COLOR), (spec.future, FORECAST_COLOR)):
        if len(series) > 1:
            plotext.plot([x for x, _ in series], [y for _, y in series], color=color, marker=MARKER)
    plotext.hline(spec.floor, color=FLOOR_COLOR)
    plotext.vline(0.0, color=NOW_COLOR)
    plotext.ylim(0, 1)
    plotext.xticks(spec.ticks, spec.labels)
    return str(plotext.build())


def chart_legend(story: Story) -> Text:
    """The key under the chart (plotext's own legend would cover the lines)."""
    text = Text()
    text.append("── past", style=PAST_COLOR)
    text.append("   ")
    text.append(f"── forecast ({story.forecast.policy})", style=FORECAST_COLOR)
    text.append("   ")
    text.append(f"── floor {story.forecast.threshold:.2f}", style=FLOOR_COLOR)
    text.append("   ")
    text.append("│ now", style=NOW_STYLE)
    return text
