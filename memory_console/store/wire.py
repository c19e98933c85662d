"""A memory's wire form: the JSON object an export line, `show --json` and purge carry."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from memory_console.literal import json_text
from memory_console.store.records import EventRecord, MemoryRecord
from memory_console.store.validate import TIME_FIELDS
from memory_console.timeutil import to_iso


def export_record(
    record: MemoryRecord, history: Iterable[EventRecord] | None = None
) -> dict[str, Any]:
    """One memory as an export line: every field, times in ISO 8601, history if given."""
    data = record.as_dict()
    data.pop("revision")
    for name in TIME_FIELDS:
        data[name] = to_iso(data[name])
    if history is not None:
        data["history"] = [event.as_json() for event in history]
    return data


def json_line(data: Any) -> str:
    """One JSONL line: UTF-8, with hidden characters and any lone surrogate the store holds
    from before they were refused written as JSON escapes, so exporting never fails or
    loses them."""
    return json_text(data) + "\n"
