"""OpenMemory export zips (memories.json and memories.jsonl.gz): import, states mapped to status.

memories.json is read when the zip has it (it carries the status history); otherwise the
logical memories.jsonl.gz. A bare memories.json or memories.jsonl(.gz) is read the same way.

Memory -> ours: id -> external_id, content, metadata, created_at and updated_at kept; owner = the
export's user.user_id; categories -> keywords (and a topic where one fits); app, state, archived_at
and deleted_at kept in metadata.openmemory; memory_type classified by the content as remember()
does (the format has none; import's --type sets one instead). States: active -> active; paused,
archived and deleted -> archived (restorable; the original state stays in metadata, and a purge
removes what was deleted for good). status_history rows become archived / restored events,
except the row OpenMemory writes when it adds a memory (deleted -> active, the memory's first
row), which is its creation. A memory without created_at is dated at the import time, with a
warning in the summary and metadata.openmemory.created_at_unknown set. memories.jsonl.gz alone
names no user: its memories take import's --owner, and the summary says which.
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path
from typing import Any

from memory_console.agent.rules.describe import extract_keywords, infer_topic
from memory_console.ingest.formats.common import (
    Entry,
    Event,
    Parsed,
    check_unique_ids,
    checked_row,
    decode_json,
    event,
    fail,
    id_field,
    is_document,
    json_lines,
    lines_of,
    load_json,
    object_field,
    require_object,
    text_field,
    time_of,
)
from memory_console.ingest.reading import MAX_DOCUMENT_BYTES, too_large

NAME = "openmemory"
ACTOR = "openmemory"
STATES = {"active": "active", "paused": "archived", "archived": "archived", "deleted": "archived"}
MANIFEST = "memories.json"
LOGICAL = "memories.jsonl.gz"
MAX_MEMBER_BYTES = MAX_DOCUMENT_BYTES  # a member is read whole
# OpenMemory category names that say which of our topics a memory belongs to.
CATEGORY_TOPICS = {
    "preferences": "preferences",
    "personal": "user_info",
    "relationships": "contacts",
    "work": "projects",
    "projects": "projects",
}
DOCUMENT_KEYS = ("memories", "export_meta", "user")


def parse(path: Path, *, now: float, owner: str | None = None) -> Parsed:
    """Every memory of an OpenMemory export, checked."""
    if zipfile.is_zipfile(path):
        return parse_zip(path, now=now, owner=owner)
    if is_document(path, DOCUMENT_KEYS):
        return parse_manifest(load_json(path), str(path), now=now, owner=owner)
    parsed = Parsed()
    for where, item in json_lines(path):
        parsed.entries.append(logical_entry(item, where, now, owner, parsed))
    return finish(parsed, str(path))


def parse_zip(path: Path, *, now: float, owner: str | None) -> Parsed:
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as error:
        raise fail(str(path), f"not a readable zip file ({error})") from error
    with archive:
        members = {info.filename.rsplit("/", 1)[-1]: info for info in archive.infolist()}
        for name in (MANIFEST, LOGICAL):
            info = members.get(name)
            if info is not None and info.file_size > MAX_MEMBER_BYTES:
                raise fail(f"{path}:{name}", too_large())
        if MANIFEST in members:
            data = read_member(archive, members[MANIFEST], path)
            return parse_manifest(
                decode_json(data, f"{path}:{MANIFEST}"), f"{path}:{MANIFEST}", now=now, owner=owner
            )
        if LOGICAL in members:
            import gzip

            blob = read_member(archive, members[LOGICAL], path)
            parsed = Parsed()
            with gzip.GzipFile(fileobj=io.BytesIO(blob), mode="rb") as handle:
                for where, item in lines_of(handle, f"{path}:{LOGICAL}"):  # type: ignore[arg-type]
                    parsed.entries.append(logical_entry(item, where, now, owner, parsed))
            return finish(parsed, str(path))
    raise fail(str(path), f"neither {MANIFEST} nor {LOGICAL} in the zip")


def read_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, path: Path) -> bytes:
    try:
        return archive.read(info)
    except (zipfile.BadZipFile, OSError, EOFError) as error:
        raise fail(f"{path}:{info.filename}", f"cannot read ({error})") from error


def finish(parsed: Parsed, where: str) -> Parsed:
    check_unique_ids(parsed.entries)
    if not parsed.entries:
        raise fail(where, "no memories in the export")
    return parsed


def parse_manifest(data: Any, label: str, *, now: float, owner: str | None) -> Parsed:
    """memories.json: user, apps, categories, memories, memory_categories, status_history."""
    data = require_object(data, label)
    user = object_field(data, "user", label)
    user_name = user.get("user_id") if isinstance(user.get("user_id"), str) else None
    apps = {str(a.get("id")): a.get("name") for a in list_of(data, "apps", label)}
    categories = {str(c.get("id")): c.get("name") for c in list_of(data, "categories", label)}
    links: dict[str, list[str]] = {}
    for index, link in enumerate(list_of(data, "memory_categories", label)):
        name = categories.get(str(link.get("category_id")))
        if name is None:
            raise fail(f"{label}:memory_categories[{index}]", "unknown category_id")
        links.setdefault(str(link.get("memory_id")), []).append(name)
    history: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    for index, row in enumerate(list_of(data, "status_history", label)):
        history.setdefault(str(row.get("memory_id")), []).append(
            (f"{label}:status_history[{index}]", row)
        )
    parsed = Parsed()
    for index, memory in enumerate(list_of(data, "memories", label)):
        where = f"{label}:memories[{index}]"
        ident = str(memory.get("id"))
        names = list(links.get(ident, []))
        for position, category_id in enumerate(memory.get("category_ids") or []):
            name = categories.get(str(category_id))
            if name is None:
                raise fail(where, f"category_ids[{position}] is not in categories")
            if name not in names:
                names.append(name)
        app = apps.get(str(memory.get("app_id"))) if memory.get("app_id") else None
        entry = memory_entry(
            memory, where, now, user_name or owner, app=app, categories=names, parsed=parsed
        )
        entry.owner_assumed = user_name is None
        entry.history = status_events(entry.row, history.pop(ident, []))
        parsed.entries.append(entry)
    for rows in history.values():
        for where, _ in rows:
            raise fail(where, "memory_id is not in memories")
    return finish(parsed, label)


def list_of(data: dict[str, Any], key: str, label: str) -> list[dict[str, Any]]:
    value = data.get(key) or []
    if not isinstance(value, list):
        raise fail(label, f"{key} must be a list")
    return [require_object(item, f"{label}:{key}[{i}]") for i, item in enumerate(value)]


def logical_entry(item: Any, where: str, now: float, owner: str | None, parsed: Parsed) -> Entry:
    """One line of memories.jsonl.gz: id, content, metadata, times, state, app, categories
    (no user: the owner is assumed)."""
    item = require_object(item, where)
    names = item.get("categories") or []
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise fail(where, "categories must be a list of names")
    app = item.get("app")
    if app is not None and not isinstance(app, str):
        raise fail(where, "app must be a string")
    entry = memory_entry(item, where, now, owner, app=app, categories=names, parsed=parsed)
    entry.owner_assumed = True
    return entry


def memory_entry(
    memory: dict[str, Any],
    where: str,
    now: float,
    owner: str | None,
    *,
    app: str | None,
    categories: list[str],
    parsed: Parsed,
) -> Entry:
    external_id = id_field(memory, "id", where)
    if external_id is None:
        raise fail(where, "id is required")
    content = text_field(memory, "content", where)
    state = memory.get("state", "active")
    if state not in STATES:
        raise fail(where, f"state must be one of {', '.join(STATES)}, not {state!r}")
    theirs: dict[str, Any] = {"state": state, "app": app, "categories": categories}
    for name in ("user_id", "app_id", "archived_at", "deleted_at"):
        if memory.get(name) is not None:
            theirs[name] = memory[name]
    if memory.get("created_at") is None:
        theirs["created_at_unknown"] = True
        parsed.warn("memories without created_at, dated at the import time")
    topic = next(
        (CATEGORY_TOPICS[c.lower()] for c in categories if c.lower() in CATEGORY_TOPICS),
        infer_topic(content),
    )
    row: dict[str, Any] = {
        "content": content,
        "external_id": external_id,
        "topic": topic,
        "keywords": extract_keywords(content, first=[c.lower() for c in categories]),
        "status": STATES[state],
        "created_at": memory.get("created_at"),
        "updated_at": memory.get("updated_at"),
        "metadata": {
            **object_field(memory, "metadata", where),
            "import_format": NAME,
            NAME: theirs,
        },
    }
    if owner:
        row["owner"] = owner
    row = {k: v for k, v in row.items() if v is not None}
    return Entry(where, checked_row(row, now, where), unique_id=True)


def status_events(row: dict[str, Any], history: list[tuple[str, dict[str, Any]]]) -> list[Event]:
    """A created event, then one event per state change, in time order. The memory's first
    row, when it is deleted -> active, is the creation: OpenMemory writes that row for every
    memory it adds (its old state is `deleted` once the new memory exists)."""
    created = event(row["created_at"], ACTOR, "created", None, {"status": "active"})
    changes: list[tuple[float, int, tuple[str, str]]] = []
    for order, (where, item) in enumerate(history):
        old, new = item.get("old_state", "active"), item.get("new_state", "active")
        for name, state in (("old_state", old), ("new_state", new)):
            if state not in STATES:
                raise fail(where, f"{name} must be one of {', '.join(STATES)}, not {state!r}")
        at = time_of(item.get("changed_at"), "changed_at", where) or row["created_at"]
        changes.append((at, order, (old, new)))
    changes.sort()
    if changes and changes[0][2] == ("deleted", "active"):
        changes.pop(0)  # the row of the memory's creation, not a restore
    events = [created]
    for at, _, (old, new) in changes:
        kind = "restored" if new == "active" else "archived" if old == "active" else "edited"
        before = {"status": STATES[old], "state": old}
        after = {"status": STATES[new], "state": new}
        events.append(event(at, ACTOR, kind, before, after))
    return events
