"""Our JSONL format (DESIGN section 8): checked import, all or nothing, and export."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from memory_console.ingest.screen import SecretsPolicy, import_refusal
from memory_console.sensitive import mask_record
from memory_console.store import EventRecord, MemoryFilter, MemoryRecord, Store
from memory_console.store.errors import StoreError, ValidationError
from memory_console.store.validate import (
    MAX_TITLE,
    check_count,
    check_text,
    check_time,
    complete_memory,
)
from memory_console.store.vocab import EVENT_KINDS
from memory_console.timeutil import now_ts, to_iso

MAX_LINE_BYTES = 16 * 1024 * 1024
TIME_FIELDS = ("created_at", "updated_at", "last_accessed_at")


class ImportFileError(StoreError):
    """A line of an import file that cannot be imported; the message starts FILE:LINE:."""


@dataclass(frozen=True, slots=True)
class ImportReport:
    path: Path
    imported: int
    ids: list[int]


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
    """One JSONL line, UTF-8 where it can be: text the store holds from before lone surrogates
    were refused is written as JSON escapes, so exporting it never fails or loses it."""
    line = json.dumps(data, ensure_ascii=False) + "\n"
    try:
        line.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(data) + "\n"
    return line


def export_jsonl(
    store: Store,
    out: IO[str],
    *,
    include_all: bool = False,
    history: bool = False,
    reveal: bool = False,
) -> int:
    """Write memories (active only unless include_all) as JSONL; returns how many.

    Credentials are masked in every text of a memory and its history unless reveal."""
    memory_filter = MemoryFilter() if include_all else MemoryFilter(status="active")
    written = 0
    for record in store.iter_memories(memory_filter):
        events = store.history(record.id) if history else None
        data = export_record(record, events)
        out.write(json_line(data if reveal else mask_record(data)))
        written += 1
    return written


def read_lines(path: Path) -> Iterator[tuple[int, str]]:
    """(line number, text) of each non-blank line; bad bytes are an error naming the line."""
    try:
        handle = path.open("rb")
    except OSError as error:
        raise ImportFileError(f"{path}: cannot read: {error.strerror}") from error
    with handle:
        for number, raw in enumerate(handle, start=1):
            if len(raw) > MAX_LINE_BYTES:
                raise ImportFileError(f"{path}:{number}: line longer than {MAX_LINE_BYTES:,} bytes")
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as error:
                raise ImportFileError(
                    f"{path}:{number}: invalid UTF-8 at byte {error.start}"
                ) from error
            if text.strip():
                yield number, text


def parse_history(entries: Any) -> list[tuple[Any, ...]]:
    """Event tuples (without memory_id) from an export's `history` list."""
    if not isinstance(entries, list):
        raise ValidationError("history must be a list of events")
    events = []
    for position, entry in enumerate(entries, start=1):
        if not isinstance(entry, dict):
            raise ValidationError(f"history event {position} is not an object")
        kind = entry.get("kind")
        if kind not in EVENT_KINDS:
            raise ValidationError(f"history event {position}: unknown kind {kind!r}")
        at = check_time("history at", entry.get("at"))
        if at is None:
            raise ValidationError(f"history event {position}: at is required")
        run_id = entry.get("run_id")
        if run_id is not None:
            check_count("run_id", run_id)
        for name in ("before", "after", "scores"):
            if entry.get(name) is not None and not isinstance(entry[name], dict):
                raise ValidationError(f"history event {position}: {name} must be an object")
        query = entry.get("query")
        if query is not None:
            check_text(f"history event {position}: query", query, MAX_LINE_BYTES)
        actor = entry.get("actor")
        if actor is not None:
            check_text(f"history event {position}: actor", actor, MAX_TITLE)
        events.append(
            (
                at,
                actor or "import",
                kind,
                json.dumps(entry["before"]) if entry.get("before") else None,
                json.dumps(entry["after"]) if entry.get("after") else None,
                None,  # runs are not carried between stores
                query,
                json.dumps(entry["scores"]) if entry.get("scores") else None,
            )
        )
    return events


def parse_jsonl(
    path: Path, *, now: float, keep_ids: bool = True, policy: SecretsPolicy | None = None
) -> tuple[list[dict[str, Any]], list[list[tuple[Any, ...]] | None]]:
    """Check every line; the first bad one raises ImportFileError `FILE:LINE: reason`.
    A line holding a credential, or health data nobody asked to keep, is a bad line unless
    the policy allows it."""
    policy = SecretsPolicy() if policy is None else policy
    rows: list[dict[str, Any]] = []
    histories: list[list[tuple[Any, ...]] | None] = []
    seen_ids: dict[int, int] = {}
    for number, text in read_lines(path):
        where = f"{path}:{number}"
        try:
            data = json.loads(text)
        except json.JSONDecodeError as error:
            raise ImportFileError(
                f"{where}: invalid JSON: {error.msg} (column {error.colno})"
            ) from error
        except RecursionError as error:
            raise ImportFileError(f"{where}: invalid JSON: nested too deeply") from error
        except ValueError as error:  # e.g. an integer of more than 4,300 digits
            raise ImportFileError(f"{where}: invalid JSON: {error}") from error
        if not isinstance(data, dict):
            raise ImportFileError(
                f"{where}: a line must be a JSON object, not {type(data).__name__}"
            )
        try:
            history = parse_history(data.pop("history")) if "history" in data else None
            row = complete_memory(data, now)
            if keep_ids and data.get("id") is not None:
                ident = check_count("id", data["id"])
                if ident < 1:
                    raise ValidationError("id must be >= 1")
                if ident in seen_ids:
                    raise ValidationError(f"duplicate id {ident} (first on line {seen_ids[ident]})")
                seen_ids[ident] = number
                row["id"] = ident
                row["_line"] = number
        except ValidationError as error:
            raise ImportFileError(f"{where}: {error}") from error
        refused = import_refusal(row, history, policy)
        if refused is not None:
            raise ImportFileError(f"{where}: {refused}")
        rows.append(row)
        histories.append(history)
    if not rows:
        raise ImportFileError(f"{path}: no memories in the file")
    return rows, histories


def import_jsonl(
    store: Store,
    path: str | os.PathLike[str],
    *,
    now: float | None = None,
    keep_ids: bool = True,
    policy: SecretsPolicy | None = None,
) -> ImportReport:
    """Validate the whole file, then insert every memory in one transaction, or nothing."""
    source = Path(path)
    moment = now_ts() if now is None else now
    rows, histories = parse_jsonl(source, now=moment, keep_ids=keep_ids, policy=policy)
    lines = {row["id"]: row.pop("_line") for row in rows if "id" in row}
    for row in rows:
        row.pop("_line", None)
    ids_in_file = list(lines)
    if ids_in_file:
        clash = store.existing_ids(ids_in_file)
        if clash:
            raise ImportFileError(
                f"{source}:{lines[clash[0]]}: id {clash[0]} already exists in the store; "
                "import with --new-ids to add the file's memories as new ones"
            )
    ids = store.insert_rows(rows, moment, created_kind="created", histories=histories)
    return ImportReport(source, len(ids), ids)
