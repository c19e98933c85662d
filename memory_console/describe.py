"""Plain-text descriptions shared by the CLI and the console: forecasts and event changes."""

from __future__ import annotations

from typing import Any

from memory_console.store import EventRecord, MemoryRecord
from memory_console.timeutil import to_date


def forecast_line(record: MemoryRecord, now: float, params: Any = None) -> str:
    """`0.78 -> 0.74 -> 0.70; reaches the floor on 2027-03-01`, or why it does not decay;
    under `params` (the store's policy parameters), else relevance's defaults."""
    if record.is_protected:
        return "protected: does not decay"
    if record.decay_policy == "none":
        return "decay policy none: does not decay"
    if record.memory_type == "semantic":
        return "semantic memory: does not decay"
    if record.status != "active":
        return f"{record.status}: does not decay"
    # Imported here: the maintenance package (a third of a second) is not needed to search.
    from memory_console.maintenance.forecast import memory_forecast

    forecast = memory_forecast(record, now, params=params)
    tail = (
        f"; reaches the floor on {to_date(forecast.floor_date)}"
        if forecast.floor_date is not None
        else ""
    )
    return forecast.text() + tail


def change_text(event: EventRecord) -> str:
    """`confidence 0.95 -> 0.90, status active -> archived` from an event's before/after; an
    access's as-of-then value (before.current) reads `confidence 0.800 (0.588 by then) -> ...`."""
    if event.kind == "supersedes" and "supersedes" in event.after:
        return f"supersedes #{event.after['supersedes']}"
    parts = []
    current = event.before.get("current")
    for name in dict.fromkeys([*event.before, *event.after]):
        if name == "current":
            continue
        before, after = event.before.get(name), event.after.get(name)
        if name == "superseded_by":
            link = f"superseded by #{after}" if after else f"no longer superseded by #{before}"
            parts.append(link)
            continue
        if name.endswith("_at") and isinstance(after, int | float):
            after = to_date(after)
            before = to_date(before) if isinstance(before, int | float) else before
        if isinstance(before, float):
            before = f"{before:.3f}"
        if isinstance(after, float):
            after = f"{after:.3f}"
        if name == "confidence" and isinstance(current, int | float):
            before = f"{before} ({current:.3f} by then)"
        parts.append(f"{name} {before if before is not None else '-'} -> {after}")
    return ", ".join(parts)
