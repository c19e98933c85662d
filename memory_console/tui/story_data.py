"""One memory's story as data: the record, its events, its confidence past and forecast."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# Imported here, not in the worker: an import inside a worker thread can wait behind the
# background embedder's own (long) imports.
from memory_console.describe import forecast_line
from memory_console.maintenance.forecast import confidence_now, memory_forecast
from memory_console.store import EventRecord, MemoryRecord, Store


@dataclass(frozen=True, slots=True)
class Story:
    """Everything the detail pane and the story screen show about one memory."""

    record: MemoryRecord
    history: list[EventRecord]
    accesses: list[EventRecord]
    forecast: Any  # policies.forecast.MemoryForecast
    forecast_text: str  # "now 0.78, DATE 0.74; reaches the floor on DATE" or why not
    trajectory: list[tuple[float, float]]  # (unix time, confidence) from the events, then now
    now: float
    supersedes: tuple[int, ...] = ()  # the memories this one superseded (older values)
    confidence_now: float | None = None  # what a decay run at `now` would set


# Points drawn between the last event and now (at most one a day).
FADE_POINTS = 120


def trajectory(
    record: MemoryRecord, history: list[EventRecord], now: float, params: Any = None
) -> list[tuple[float, float]]:
    """The confidence over time: each event's after.confidence at the clock time it was
    written (`at`, never its evaluated time), from the created event on, then the fading
    since the last event, as the policy computes it (confidence_now at each time, the same
    computation as the forecast's first point), down to the confidence as of now. An access
    also gives the value it found (its before.current), so the line fades to it and then
    jumps by the boost. Nothing is drawn as past beyond `now`: an event written later than
    it (a console whose now is held) is drawn at now."""
    points: list[tuple[float, float]] = []
    for event in history:
        at = min(event.at, now)
        found = event.before.get("current")
        if isinstance(found, int | float) and not isinstance(found, bool):
            points.append((at, float(found)))
        value = event.after.get("confidence")
        if isinstance(value, int | float) and not isinstance(value, bool):
            points.append((at, float(value)))
    if not points:
        points.append((min(record.created_at, now), record.confidence))
    last = points[-1][0]
    if now > last:
        steps = int(min(FADE_POINTS, max(1.0, (now - last) / 86400.0)))
        for step in range(1, steps):
            at = last + (now - last) * step / steps
            points.append((at, confidence_now(record, at, params)))
    points.append((now, confidence_now(record, now, params)))
    return points


def load_story(store: Store, memory_id: int, now: float) -> Story:
    """Read one memory's story (a few indexed queries); NotFoundError if it is gone."""
    record = store.require(memory_id)
    history = store.history(memory_id)
    params = store.settings().params()
    return Story(
        record=record,
        history=history,
        accesses=store.accesses(memory_id, limit=50),
        forecast=memory_forecast(record, now, params=params),
        forecast_text=forecast_line(record, now, params),
        trajectory=trajectory(record, history, now, params),
        now=now,
        supersedes=tuple(store.superseded_by_each([memory_id]).get(memory_id, [])),
        confidence_now=confidence_now(record, now, params),
    )


def floor_line(story: Story) -> str:
    """The sentence under the chart: when the memory reaches the floor, or why it never does."""
    text = story.forecast_text
    if "; " in text:
        return text.split("; ", 1)[1]
    if "does not decay" in text:
        return text
    return f"stays above the floor ({story.forecast.threshold:.2f}) for the next months"
