"""mem0 memory records and history rows: import (with history as events) and export.

A file is JSONL (records and history rows, one per line, in any order) or one JSON document:
a list of records or {"results": [...], "history": [...]}, as mem0's get_all answers.

Record -> memory: id -> external_id, memory -> content, metadata -> metadata, created_at /
updated_at kept, owner = user_id (else agent_id, else run_id). Every other field (hash, user_id,
agent_id, run_id, actor_id, role, expiration_date, ...) is kept in metadata.mem0, so an export
gives them back. History rows become events: ADD -> created, UPDATE -> edited (content before and
after), DELETE -> archived; a memory whose last event is DELETE is archived. memory_type:
metadata.memory_type "procedural_memory" (mem0's procedural memory) -> procedural, a type carried
in metadata.memory_console is kept, and any other record is classified by its text as remember()
does (import's --type sets one instead). A record naming no user, agent or run takes import's
--owner (the summary says which). Export writes records (and with history, history rows) as
JSONL; our own fields (the external_id among them) ride along in metadata.memory_console so that
importing the export restores them. Exported ids are UUIDs, as mem0's vector stores need: a
memory's external_id when it is one (and no other memory of the store has it), else one derived
from the memory's id and creation time, so exporting again gives the same ids.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Iterable
from pathlib import Path
from typing import IO, Any

from memory_console.ingest.formats.common import (
    Entry,
    Event,
    Parsed,
    check_unique_ids,
    checked_row,
    event,
    fail,
    id_field,
    is_document,
    items_of,
    load_json,
    object_field,
    require_object,
    text_field,
    time_of,
)
from memory_console.ingest.jsonl import EXPORT_BATCH, ExportProgress
from memory_console.literal import json_text
from memory_console.sensitive import mask_keywords, mask_value, secret_words
from memory_console.store import EventRecord, MemoryFilter, MemoryRecord, Store
from memory_console.timeutil import to_iso

NAME = "mem0"
ACTOR = "mem0"
OWN_FIELDS = ("id", "memory", "metadata", "created_at", "updated_at")
HISTORY_EVENTS = ("ADD", "UPDATE", "DELETE")
DOCUMENT_KEYS = ("results", "history")
# Our fields carried in metadata.memory_console by an export (owner travels as user_id).
CARRIED = (
    "title",
    "topic",
    "tier",
    "memory_type",
    "keywords",
    "source",
    "importance",
    "confidence",
    "base_confidence",
    "retrieval_count",
    "last_accessed_at",
    "decay_policy",
    "is_protected",
    "status",
    "external_id",
)
ID_NAMESPACE = uuid.UUID("6f1c2b1e-7d1a-4d1e-9a37-6d656d6f7279")


def is_history_row(item: Any) -> bool:
    return isinstance(item, dict) and "memory_id" in item and "event" in item


def is_record(item: Any) -> bool:
    return isinstance(item, dict) and "memory" in item


def parse(path: Path, *, now: float, owner: str | None = None) -> Parsed:
    """Every record and history row of the file, checked."""
    parsed = Parsed()
    records: list[tuple[str, dict[str, Any]]] = []
    history: list[tuple[str, dict[str, Any]]] = []
    for where, item in items_of(path, "results"):
        item = require_object(item, where)
        if is_history_row(item):
            history.append((where, item))
        elif is_record(item):
            records.append((where, item))
        else:
            raise fail(where, "neither a mem0 record (memory) nor a history row (memory_id, event)")
    history += extra_history(path)
    events = history_events(history, now)
    known: set[str] = set()
    for where, record in records:
        entry = record_entry(record, where, now, owner)
        external_id = entry.row["external_id"]
        known.add(external_id)
        own_events = events.get(external_id)
        if own_events:
            if not any(kind == "created" for _, _, kind, *_ in own_events):
                at = entry.row["created_at"]
                own_events.insert(0, event(at, ACTOR, "created", None, {"status": "active"}))
            if own_events[-1][2] == "archived":
                entry.row["status"] = "archived"
            entry.history = own_events
        parsed.entries.append(entry)
    for memory_id, rows in events.items():
        if memory_id not in known:
            for _ in rows:
                parsed.skip("history rows of memories not in the file (deleted in mem0)")
    check_unique_ids(parsed.entries)
    if not parsed.entries:
        raise fail(str(path), "no mem0 memory records in the file")
    return parsed


def extra_history(path: Path) -> list[tuple[str, dict[str, Any]]]:
    """History rows under "history" in a JSON document ({"results": ..., "history": ...})."""
    if not is_document(path, DOCUMENT_KEYS):
        return []
    document = load_json(path)
    if not isinstance(document, dict) or "history" not in document:
        return []
    rows = document["history"]
    if not isinstance(rows, list):
        raise fail(str(path), "history must be a list")
    found = []
    for index, row in enumerate(rows):
        where = f"{path}:history[{index}]"
        if not is_history_row(row):
            raise fail(where, "a history row needs memory_id and event")
        found.append((where, row))
    return found


def record_entry(record: dict[str, Any], where: str, now: float, owner: str | None) -> Entry:
    external_id = id_field(record, "id", where)
    if external_id is None:
        raise fail(where, "id is required")
    content = text_field(record, "memory", where)
    metadata = dict(object_field(record, "metadata", where))
    carried = metadata.pop("memory_console", None)
    theirs = {k: v for k, v in record.items() if k not in OWN_FIELDS}
    for name in ("user_id", "agent_id", "run_id"):
        if theirs.get(name) is not None and not isinstance(theirs[name], str):
            raise fail(where, f"{name} must be a string")
    memory: dict[str, Any] = {
        "content": content,
        "external_id": external_id,
        "owner": theirs.get("user_id") or theirs.get("agent_id") or theirs.get("run_id") or owner,
        "created_at": record.get("created_at"),
        "updated_at": record.get("updated_at"),
        "metadata": {**metadata, "import_format": NAME, NAME: theirs},
    }
    if metadata.get("memory_type") == "procedural_memory":
        memory["memory_type"] = "procedural"
    if isinstance(carried, dict):
        memory.update({k: v for k, v in carried.items() if k in CARRIED and v is not None})
    elif carried is not None:
        raise fail(where, "metadata.memory_console must be an object")
    if not isinstance(memory["external_id"], str):
        raise fail(where, "metadata.memory_console.external_id must be a string")
    assumed = memory["owner"] is None or memory["owner"] is owner
    if memory["owner"] is None:
        memory.pop("owner")
    memory = {k: v for k, v in memory.items() if v is not None}
    typed = "memory_type" in memory
    return Entry(
        where,
        checked_row(memory, now, where),
        unique_id=True,
        typed=typed,
        owner_assumed=assumed,
    )


def history_events(
    rows: Iterable[tuple[str, dict[str, Any]]], now: float
) -> dict[str, list[Event]]:
    """Events by mem0 memory id, in time order (file order for equal times)."""
    found: dict[str, list[tuple[float, int, Event]]] = {}
    for order, (where, row) in enumerate(rows):
        memory_id = id_field(row, "memory_id", where)
        if memory_id is None:
            raise fail(where, "memory_id is required")
        kind = row.get("event")
        if not isinstance(kind, str) or kind.upper() not in HISTORY_EVENTS:
            raise fail(where, f"event must be one of {', '.join(HISTORY_EVENTS)}, not {kind!r}")
        kind = kind.upper()
        at = time_of(row.get("updated_at"), "updated_at", where) or time_of(
            row.get("created_at"), "created_at", where
        )
        if at is None:
            raise fail(where, "a history row needs created_at or updated_at")
        if at > now + 86400:
            raise fail(where, "the history row is dated in the future")
        old = row.get("old_memory")
        new = row.get("new_memory")
        for name, value in (("old_memory", old), ("new_memory", new)):
            if value is not None and not isinstance(value, str):
                raise fail(where, f"{name} must be a string")
        if kind == "ADD":
            item = event(at, ACTOR, "created", None, {"content": new, "status": "active"})
        elif kind == "UPDATE":
            item = event(at, ACTOR, "edited", {"content": old}, {"content": new})
        else:
            item = event(at, ACTOR, "archived", {"status": "active"}, {"status": "archived"})
        found.setdefault(memory_id, []).append((at, order, item))
    return {key: [item for *_, item in sorted(items)] for key, items in found.items()}


# -- export ----------------------------------------------------------------------------------


def is_uuid(text: str | None) -> bool:
    """Whether the text is a UUID in its canonical form (the form mem0 writes)."""
    try:
        return text is not None and str(uuid.UUID(text)) == text.lower()
    except ValueError:
        return False


def mem0_id(record: MemoryRecord, taken: set[str] | None = None) -> str:
    """The mem0 id of a memory: its external id when that is a UUID not `taken` by another
    memory of this export, else a UUID derived from the memory's id and creation time (stable:
    the same store exports the same ids)."""
    if is_uuid(record.external_id) and record.external_id not in (taken or ()):
        return str(record.external_id)
    return str(uuid.uuid5(ID_NAMESPACE, f"memory/{record.id}/{record.created_at!r}"))


def memory_hash(text: str) -> str:
    """mem0's hash of a memory: the MD5 of its text."""
    return hashlib.md5(text.encode("utf-8"), usedforsecurity=False).hexdigest()


def export_record(record: MemoryRecord, ident: str | None = None) -> dict[str, Any]:
    """One memory as a mem0 record (with our own fields in metadata.memory_console), under
    the mem0 id `ident` (else mem0_id's)."""
    metadata = dict(record.metadata)
    theirs: dict[str, Any] = {}
    if metadata.get("import_format") == NAME and isinstance(metadata.get(NAME), dict):
        metadata.pop("import_format")
        theirs = metadata.pop(NAME)
    carried = {name: getattr(record, name) for name in CARRIED}
    carried["last_accessed_at"] = to_iso(record.last_accessed_at)
    data: dict[str, Any] = {
        "id": ident or mem0_id(record),
        "memory": record.content,
        "hash": memory_hash(record.content),
        "metadata": {**metadata, "memory_console": carried},
        "created_at": to_iso(record.created_at),
        "updated_at": to_iso(record.updated_at),
    }
    extra = {k: v for k, v in theirs.items() if k not in ("hash", "score")}
    derived = extra.get("user_id") or extra.get("agent_id") or extra.get("run_id")
    if derived != record.owner:
        extra["user_id"] = record.owner
    data.update(extra)
    return data


def history_rows(
    record: MemoryRecord, events: list[EventRecord], ident: str | None = None
) -> list[dict[str, Any]]:
    """mem0 history rows for a memory's events: created/restored -> ADD, a content edit ->
    UPDATE, archived/consolidated/purged -> DELETE."""
    ident = ident or mem0_id(record)
    content = record.content
    content_after: dict[int, str] = {}
    for item in reversed(events):
        content_after[item.id] = content
        if isinstance(item.before.get("content"), str):
            content = item.before["content"]
    rows = []
    for item in events:
        if item.kind in ("created", "restored"):
            kind, old, new = "ADD", None, content_after[item.id]
        elif item.kind == "edited" and "content" in item.after:
            kind, old, new = "UPDATE", item.before.get("content"), item.after["content"]
        elif item.kind in ("archived", "consolidated", "purged"):
            kind, old, new = "DELETE", content_after[item.id], None
        else:
            continue
        rows.append(
            {
                "id": str(uuid.uuid5(ID_NAMESPACE, f"{ident}/{item.id}")),
                "memory_id": ident,
                "old_memory": old,
                "new_memory": new,
                "event": kind,
                "created_at": to_iso(record.created_at if kind != "ADD" else item.at),
                "updated_at": to_iso(item.at) if kind != "ADD" else None,
                "is_deleted": int(kind == "DELETE"),
            }
        )
    return rows


def export_mem0(
    store: Store,
    out: IO[str],
    *,
    include_all: bool = False,
    history: bool = False,
    reveal: bool = False,
    progress: ExportProgress | None = None,
) -> int:
    """Write memories (active only unless include_all) as mem0 records, one per line, each
    followed by its history rows if asked; returns how many memories. Credentials are masked
    in every text unless reveal (and the hash is then the masked text's). progress(written,
    total) follows every EXPORT_BATCH memories."""
    memory_filter = MemoryFilter() if include_all else MemoryFilter(status="active")
    total = store.count(memory_filter) if progress is not None else 0
    written = 0
    taken: set[str] = set()  # the mem0 ids written so far: each memory's id is its own
    carried: set[str] = set()  # the external ids carried so far, likewise
    for record in store.iter_memories(memory_filter):
        ident = mem0_id(record, taken)
        taken.add(ident)
        data = export_record(record, ident)
        if record.external_id in carried:  # two memories imported from one: the first keeps it
            data["metadata"]["memory_console"]["external_id"] = None
        elif record.external_id is not None:
            carried.add(record.external_id)
        if not reveal:
            data = mask_value(data)
            data["hash"] = memory_hash(data["memory"])
            ours = data["metadata"]["memory_console"]
            hidden = secret_words(record.title, record.content)
            ours["keywords"] = mask_keywords(ours.get("keywords") or [], hidden)
        out.write(json_text(data) + "\n")
        if history:
            for row in history_rows(record, store.history(record.id), ident):
                shown = row if reveal else mask_value(row)
                out.write(json_text(shown) + "\n")
        written += 1
        if progress is not None and written % EXPORT_BATCH == 0:
            progress(written, max(total, written))
    return written
