"""The preview's chart: active memories by confidence before and after a plan (plotext bars)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from rich.text import Text

from memory_console.maintenance import Plan
from memory_console.tui.chart import BACKGROUND, PLOTEXT_LOCK

EDGES = np.append(np.round(np.arange(0.0, 1.0, 0.1), 1), 1.0 + 1e-9)
LABELS = [f"{edge:.1f}" for edge in EDGES[:-1]]
BEFORE_COLOR = "cyan"
AFTER_COLOR = "yellow"
MARKER = "hd"


@dataclass(frozen=True)
class Distribution:
    """Active memories per confidence tenth (0.0-0.1 ... 0.9-1.0), before and after."""

    before: list[int]
    after: list[int]


def histogram(values: np.ndarray) -> list[int]:
    # A floor of 0.10 stored as 0.09999... still counts in its own tenth.
    counts, _ = np.histogram(np.clip(values + 1e-9, 0.0, 1.0), bins=EDGES)
    return [int(c) for c in counts]


def after_plan(ids: np.ndarray, confidence: np.ndarray, plan: Plan) -> np.ndarray:
    """The confidences of the active memories once `plan` is applied (plus its new ones);
    `ids` ascending, as store.readers.active_confidences reads them."""
    values = confidence.astype(np.float64).copy()
    active = np.ones(values.shape[0], dtype=bool)
    for change_set in plan.change_sets:
        if not len(ids):
            break
        found = np.minimum(np.searchsorted(ids, change_set.ids), len(ids) - 1)
        present = ids[found] == change_set.ids
        rows = found[present]
        if "confidence" in change_set.values:
            values[rows] = change_set.values["confidence"][1][present].astype(np.float64)
        if "status" in change_set.values:
            active[rows] = change_set.values["status"][1][present] == "active"
    added = [
        float(m.fields.get("confidence", 1.0))
        for m in plan.new_memories
        if m.fields.get("status", "active") == "active"
    ]
    return np.concatenate([values[active], np.array(added, dtype=np.float64)])


def distribution(ids: np.ndarray, confidence: np.ndarray, plan: Plan) -> Distribution:
    return Distribution(histogram(confidence), histogram(after_plan(ids, confidence, plan)))


def build_distribution_chart(spread: Distribution, width: int, height: int) -> Text:
    """Grouped bars, before and after, for each confidence tenth."""
    top = max([*spread.before, *spread.after, 1])
    ticks = sorted({0, top // 2, top})
    size = (max(30, width), max(8, height))
    with PLOTEXT_LOCK:
        import plotext

        draw = draw_v5 if hasattr(plotext, "clear_figure") else draw_v6
        ansi = draw(plotext, spread, size, ticks)
    return Text.from_ansi(BACKGROUND.sub("", ansi), no_wrap=True)


def draw_v6(plotext: Any, spread: Distribution, size: tuple[int, int], ticks: list[int]) -> str:
    """plotext 6: the explicit figure API."""
    figure = plotext.figure
    figure.clear()
    figure.plot_size(*size)
    figure.theme("colorless")
    figure.canvas("default")
    markers = [
        plotext.marker(MARKER, pixel=plotext.pixel(color, "default"))
        for color in (BEFORE_COLOR, AFTER_COLOR)
    ]
    figure.draw(figure.bar(LABELS, [spread.before, spread.after], marker=markers))
    figure.ruler("y").ticks(ticks, [f"{tick:,}" for tick in ticks])
    return str(figure.build().string())


def draw_v5(plotext: Any, spread: Distribution, size: tuple[int, int], ticks: list[int]) -> str:
    """plotext 5: the pyplot-like module functions."""
    plotext.clear_figure()
    plotext.plotsize(*size)
    plotext.theme("clear")
    plotext.multiple_bar(
        LABELS, [spread.before, spread.after], color=[BEFORE_COLOR, AFTER_COLOR], marker=MARKER
    )
    plotext.yticks(ticks, [f"{tick:,}" for tick in ticks])
    return str(plotext.build())


def distribution_legend(spread: Distribution) -> Text:
    text = Text()
    text.append("█ before", style=BEFORE_COLOR)
    text.append(f" {sum(spread.before):,}   ")
    text.append("█ after", style=f"bright_{AFTER_COLOR}")
    text.append(f" {sum(spread.after):,} active memories by confidence")
    return text
