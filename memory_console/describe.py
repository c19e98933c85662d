"""Plain-text descriptions shared by the CLI and the console: forecasts and event changes."""

from __future__ import annotations

from typing import Any

from memory_console.store import EventRecord, MemoryRecord
from memory_console.timeutil import DAY, to_date

# The forecast steps a line shows after now (1-based): the first, third and sixth period, so
# the line (with the floor's date) fits two lines of a detail pane at 80 columns.
SHOWN_STEPS = (1, 3, 6)


def forecast_line(record: MemoryRecord, now: float, params: Any = None) -> str:
    """`now 0.78, 2026-12-25 0.74, 2027-02-23 0.70, 2027-05-24 0.65; reaches the floor on
    2027-09-01`, or why it does not decay; under `params` (the store's policy parameters),
    else relevance's defaults."""
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
    shown = [point for step, point in enumerate(forecast.points) if step in (0, *SHOWN_STEPS)]
    return forecast_steps(shown, now) + tail


def forecast_steps(points: list[tuple[float, float]], now: float) -> str:
    """`now 0.33, 2026-12-25 0.30, 2027-01-24 0.27`: each step with its date, so nobody
    reads the steps as days or runs."""
    return ", ".join(f"{'now' if at <= now else to_date(at)} {value:.2f}" for at, value in points)


def is_simulated(evaluated: float, clock: float) -> bool:
    """A run (or plan) evaluated a day or more away from the clock time it was made at: its
    `now` was simulated (--now, or a preview's date)."""
    return abs(evaluated - clock) >= DAY


def evaluated_note(event: EventRecord) -> str:
    """` (evaluated as of 2027-02-21)` for a change evaluated on another day than the one it
    was written on (a run previewed at a simulated date); else nothing."""
    if event.evaluated_at is None or to_date(event.evaluated_at) == to_date(event.at):
        return ""
    return f" (evaluated as of {to_date(event.evaluated_at)})"


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


def created_note(record: MemoryRecord, history: list[EventRecord]) -> str:
    """` (earliest member's; merged on 2026-11-25)` for a memory a maintenance run made (a
    merge): its created field is its earliest member's time, not when it was written."""
    for event in history:
        if event.kind == "created" and event.run_id is not None:
            return f" (earliest member's; merged on {to_date(event.at)})"
    return ""


def simulated_note(evaluated: float, clock: float) -> str:
    """`evaluated as of 2027-02-21, 88 days after now` when a plan or run was evaluated at
    another date than the clock's (a simulated `now`); else nothing."""
    if to_date(evaluated) == to_date(clock):
        return ""
    days = round(abs(evaluated - clock) / 86400)
    unit = "day" if days == 1 else "days"
    side = "after" if evaluated > clock else "before"
    return f"evaluated as of {to_date(evaluated)}, {days} {unit} {side} now"
