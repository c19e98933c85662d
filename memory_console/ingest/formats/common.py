"""What the peer-format readers share: located errors, JSON and JSONL reading, checked rows."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from memory_console.agent.rules.classify import classify_type
from memory_console.agent.rules.describe import extract_keywords, infer_topic
from memory_console.ingest.reading import (
    MAX_DOCUMENT_BYTES,
    MAX_LINE_BYTES,
    READ_ERRORS,
    ImportFileError,
    bounded_lines,
    decode_json,
    open_source,
    read_document,
    too_large,
)
from memory_console.store import Store
from memory_console.store.errors import ValidationError
from memory_console.store.validate import check_time, complete_memory

Event = tuple[Any, ...]  # (at, actor, kind, before JSON, after JSON, run_id, query, scores JSON)
# The namespace of the ids derived for memories whose file gives none that is unique.
DERIVED_IDS = uuid.UUID("0f3a9d52-6c1e-4b7a-8e21-6d656d6f7279")
UUID_IN = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.I)


@dataclass(slots=True)
class Entry:
    """One memory read from a file: where it was, its checked row and its history, if any.

    unique_id: the external_id is globally unique (the file's UUID, or one derived from what
    the memory is), so a second import of the same memory can be recognised by it. typed: the
    file gave its memory_type (else it was classified, and import's --type replaces it).
    owner_assumed: the file names no owner, so the memory took import's --owner (or default)."""

    where: str
    row: dict[str, Any]
    history: list[Event] | None = None
    unique_id: bool = False
    typed: bool = False
    owner_assumed: bool = False


@dataclass(slots=True)
class Parsed:
    """Everything a file holds, checked; `skipped` counts what was left out, and why."""

    entries: list[Entry] = field(default_factory=list)
    skipped: dict[str, int] = field(default_factory=dict)
    warnings: dict[str, int] = field(default_factory=dict)

    def skip(self, why: str) -> None:
        self.skipped[why] = self.skipped.get(why, 0) + 1

    def warn(self, what: str) -> None:
        """Count memories imported with something guessed (the summary says what)."""
        self.warnings[what] = self.warnings.get(what, 0) + 1


def derived_id(kind: str, *parts: str) -> str:
    """A stable id for a memory whose file has no globally unique one: `KIND-UUID`, the UUID
    derived from what the memory is (owner, subject, text), so the same file imported again
    gives the same ids and is recognised, as a mem0 or OpenMemory file is by its UUIDs."""
    return f"{kind}-{uuid.uuid5(DERIVED_IDS, chr(31).join((kind, *parts)))}"


def holds_uuid(ident: str | None) -> bool:
    """Whether an id carries a UUID (Letta's `block-<uuid>`, mem0's bare UUIDs)."""
    return ident is not None and UUID_IN.search(ident) is not None


def fail(where: str, reason: str) -> ImportFileError:
    return ImportFileError(f"{where}: {reason}")


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def open_binary(path: Path) -> IO[bytes]:
    """The file's bytes, gunzipped when it is gzip-compressed."""
    return open_source(path)


def load_json(path: Path) -> Any:
    """A whole JSON document (gzip-compressed or not), refused above MAX_DOCUMENT_BYTES."""
    with open_source(path) as handle:
        data = read_document(handle, str(path))
    return decode_json(data, str(path))


def lines_of(handle: IO[bytes], label: str) -> Iterator[tuple[str, Any]]:
    """(`LABEL:LINE`, JSON value) of each non-blank line. Peer formats are held whole, so
    their lines stop at MAX_DOCUMENT_BYTES in all."""
    total = 0
    for number, raw in bounded_lines(handle, label):
        total += len(raw)
        if total > MAX_DOCUMENT_BYTES:
            raise fail(label, too_large())
        if raw.strip():
            where = f"{label}:{number}"
            yield where, decode_json(raw, where)


def json_lines(path: Path) -> Iterator[tuple[str, Any]]:
    """(`FILE:LINE`, JSON value) of each non-blank line of a JSONL file (gzip or not)."""
    with open_source(path) as handle:
        yield from lines_of(handle, str(path))


def first_lines(path: Path, wanted: int) -> list[bytes]:
    """Up to `wanted` non-blank lines from the top of the file, each read no further than
    MAX_LINE_BYTES: a longer line (a one-line JSON document) ends the list, cut there."""
    found: list[bytes] = []
    with open_source(path) as handle:
        while len(found) < wanted:
            try:
                raw = handle.readline(MAX_LINE_BYTES + 1)
            except READ_ERRORS as error:
                raise ImportFileError(f"{path}: cannot read: {error}") from error
            if not raw:
                break
            if raw.strip():
                found.append(raw)
            if len(raw) > MAX_LINE_BYTES:
                break
    return found


def is_document(path: Path, keys: tuple[str, ...] = ()) -> bool:
    """Whether the file is one JSON document rather than JSONL: it opens a list, or an object
    that spans lines, or its only line is an object holding one of `keys`."""
    lines = first_lines(path, 2)
    first = lines[0] if lines else b""
    second = lines[1] if len(lines) > 1 else None
    opening = first.lstrip()[:1]
    if opening == b"[":
        return True
    if opening != b"{":
        return False
    try:
        value = json.loads(first)
    except (ValueError, RecursionError):
        return True
    return second is None and isinstance(value, dict) and any(key in value for key in keys)


def items_of(path: Path, document_key: str) -> Iterator[tuple[str, Any]]:
    """The objects of a file that is either JSONL (one per line) or one JSON document: a list,
    or an object whose `document_key` holds the list. Places are FILE:LINE or FILE:key[i]."""
    if not is_document(path, (document_key,)):
        yield from json_lines(path)
        return
    document = load_json(path)
    if isinstance(document, list):
        yield from ((f"{path}[{i}]", item) for i, item in enumerate(document))
        return
    items = document.get(document_key) if isinstance(document, dict) else None
    if not isinstance(items, list):
        raise fail(str(path), f"expected a list, or an object with a {document_key} list")
    yield from ((f"{path}:{document_key}[{i}]", item) for i, item in enumerate(items))


def require_object(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise fail(where, f"expected a JSON object, not {type(value).__name__}")
    return value


def text_field(data: dict[str, Any], name: str, where: str, *, required: bool = True) -> str:
    value = data.get(name)
    if value is None and not required:
        return ""
    if not isinstance(value, str):
        if value is None:
            raise fail(where, f"{name} is required")
        raise fail(where, f"{name} must be a string, not {type(value).__name__}")
    return value


def object_field(data: dict[str, Any], name: str, where: str) -> dict[str, Any]:
    value = data.get(name)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise fail(where, f"{name} must be an object, not {type(value).__name__}")
    return value


def id_field(data: dict[str, Any], name: str, where: str) -> str | None:
    value = data.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, str | int) or str(value) == "":
        raise fail(where, f"{name} must be a non-empty string or number")
    return str(value)


def time_of(value: Any, name: str, where: str) -> float | None:
    try:
        return check_time(name, value)
    except ValidationError as error:
        raise fail(where, str(error)) from error


def checked_row(memory: dict[str, Any], now: float, where: str) -> dict[str, Any]:
    """The full, checked row for a memory; topic, keywords and memory_type inferred when not
    given (the type by the rules remember() follows)."""
    data = dict(memory)
    content = data.get("content")
    if isinstance(content, str):
        data.setdefault("topic", infer_topic(content))
        data.setdefault("keywords", extract_keywords(content))
        if data.get("memory_type") is None:
            data["memory_type"] = classify_type(content)[0]
    data.setdefault("source", "import")
    try:
        return complete_memory(data, now)
    except ValidationError as error:
        raise fail(where, str(error)) from error


def event(at: float, actor: str, kind: str, before: Any = None, after: Any = None) -> Event:
    """An event tuple as Store.insert_rows takes it (no run, query or scores)."""
    return (
        at,
        actor,
        kind,
        dumps(before) if before else None,
        dumps(after) if after else None,
        None,
        None,
        None,
    )


def check_unique_ids(entries: list[Entry]) -> None:
    """A file that holds the same memory id twice is refused, naming both places."""
    first: dict[str, str] = {}
    for entry in entries:
        external_id = entry.row.get("external_id")
        if not entry.unique_id or external_id is None:
            continue
        if external_id in first:
            raise fail(entry.where, f"duplicate id {external_id} (first at {first[external_id]})")
        first[external_id] = entry.where


def check_new_external_ids(store: Store, entries: list[Entry]) -> None:
    """Refuse a second import of the same memories: an entry whose globally unique id is
    already some memory's external_id is an error naming its place in the file."""
    wanted = {e.row["external_id"]: e for e in entries if e.unique_id and e.row.get("external_id")}
    known = store.ids_by_external_id(list(wanted))
    if known:
        external_id = next(key for key in wanted if key in known)
        ident = known[external_id]
        raise fail(
            wanted[external_id].where,
            f"id {external_id} was imported before (memory {ident}); "
            "import with --new-ids to add the file's memories again",
        )
