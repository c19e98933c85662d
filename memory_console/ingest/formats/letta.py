"""Letta agent files (.af), archival passages and archival export zips: import.

An agent file that is JSON-encoded twice (a JSON string holding the agent file, as some of
Letta's own are) is decoded once more, as Letta's importer does, when the string holds an
object. An agent file's memory blocks become protected semantic memories in the working tier (they
are the agent's always-in-context core memory): value -> content, id -> external_id, label,
limit, description and read_only kept in metadata.letta, the block's own metadata merged into
ours; the owner is the name of the agent whose block_ids (or inline memory_blocks) hold the
block (a block no agent holds takes import's --owner, and the summary says so). Block ids in
agent files are file-local ("block-0"): the external_id is derived from the owner, label and
value instead, so importing the same file again is recognised. Blocks with an empty value are
skipped (nothing to remember). Archival passages (a JSON list or JSONL of {id, text, metadata,
tags, created_at}, as Letta's API lists them, or a zip of `AGENT_memories.json` lists as the
letta-archival-export page writes) become long-term memories whose type is classified by
their text as remember() does (archival memory holds events as well as facts; import's --type
sets one instead): tags -> keywords; the owner is the agent (agent_id, or the agent named by
the zip member), else import's --owner; embeddings are dropped.
"""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import Any

from memory_console.agent.rules.describe import extract_keywords, infer_topic, make_title
from memory_console.ingest.formats.common import (
    Entry,
    Parsed,
    check_unique_ids,
    checked_row,
    decode_json,
    derived_id,
    fail,
    first_lines,
    holds_uuid,
    id_field,
    is_document,
    json_lines,
    load_json,
    object_field,
    require_object,
    text_field,
    time_of,
)
from memory_console.ingest.reading import MAX_DOCUMENT_BYTES, ImportFileError, too_large

NAME = "letta"
BLOCK_FIELDS = ("label", "limit", "description", "read_only", "template_name", "is_template")
LABEL_TOPICS = {"human": "user_info", "persona": "general"}
DROPPED = ("embedding",)  # vectors of another model: we embed our own
AGENT_FILE_KEYS = ("agents", "blocks", "core_memory")
ARCHIVAL_MEMBER = "_memories.json"  # letta-archival-export: `AGENT_ID_memories.json` in a zip


def parse(path: Path, *, now: float, owner: str | None = None) -> Parsed:
    """Every block of an agent file, or every passage of a passages file or zip, checked."""
    parsed = Parsed()
    if zipfile.is_zipfile(path):
        return parse_archival_zip(path, now=now, owner=owner)
    if not is_document(path, (*AGENT_FILE_KEYS, "passages")) and not encoded_twice(path):
        for where, item in json_lines(path):
            parsed.entries.append(passage_entry(item, where, now, owner, {}))
        return finish(parsed, str(path))
    document = decoded_again(load_json(path), str(path))
    label = str(path)
    if isinstance(document, list):
        for index, item in enumerate(document):
            parsed.entries.append(passage_entry(item, f"{label}[{index}]", now, owner, {}))
        return finish(parsed, label)
    document = require_object(document, label)
    agents = agent_names(document, label)
    if any(key in document for key in AGENT_FILE_KEYS):
        read_blocks(document, label, now, owner, agents, parsed)
    passages = document.get("passages") or []
    if not isinstance(passages, list):
        raise fail(label, "passages must be a list")
    for index, item in enumerate(passages):
        where = f"{label}:passages[{index}]"
        parsed.entries.append(passage_entry(item, where, now, owner, agents))
    return finish(parsed, label)


def encoded_twice(path: Path) -> bool:
    """Whether the file opens a JSON string (an agent file JSON-encoded twice)."""
    lines = first_lines(path, 1)
    return bool(lines) and lines[0].lstrip()[:1] == b'"'


def decoded_again(document: Any, label: str) -> Any:
    """A JSON string holding a JSON object, decoded once more (as Letta's importer does);
    anything else as it is."""
    if not isinstance(document, str):
        return document
    try:
        inner = decode_json(document, label)
    except ImportFileError:
        return document
    return inner if isinstance(inner, dict) else document


def parse_archival_zip(path: Path, *, now: float, owner: str | None) -> Parsed:
    """Each `AGENT_memories.json` member (a JSON list of passages) of an archival export zip;
    the member names the agent whose passages they are."""
    parsed = Parsed()
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as error:
        raise fail(str(path), f"not a readable zip file ({error})") from error
    with archive:
        members = [i for i in archive.infolist() if i.filename.endswith(ARCHIVAL_MEMBER)]
        if not members:
            raise fail(str(path), f"no *{ARCHIVAL_MEMBER} member in the zip")
        for info in members:
            label = f"{path}:{info.filename}"
            if info.file_size > MAX_DOCUMENT_BYTES:
                raise fail(label, too_large())
            try:
                data = archive.read(info)
            except (zipfile.BadZipFile, OSError, EOFError) as error:
                raise fail(label, f"cannot read ({error})") from error
            passages = decode_json(data, label)
            if not isinstance(passages, list):
                raise fail(label, f"expected a list of passages, not {type(passages).__name__}")
            agent = info.filename.rsplit("/", 1)[-1][: -len(ARCHIVAL_MEMBER)] or None
            for index, item in enumerate(passages):
                where = f"{label}[{index}]"
                parsed.entries.append(passage_entry(item, where, now, owner, {}, member=agent))
    return finish(parsed, str(path))


def finish(parsed: Parsed, where: str) -> Parsed:
    check_unique_ids(parsed.entries)
    if not parsed.entries:
        raise fail(where, "no memory blocks or passages with text in the file")
    return parsed


def agent_names(document: dict[str, Any], label: str) -> dict[str, str]:
    """Agent id -> name (the id when the agent has no name)."""
    agents = document.get("agents") or []
    if not isinstance(agents, list):
        raise fail(label, "agents must be a list")
    names = {}
    for index, agent in enumerate(agents):
        agent = require_object(agent, f"{label}:agents[{index}]")
        ident = id_field(agent, "id", f"{label}:agents[{index}]") or f"agent-{index}"
        name = agent.get("name")
        names[ident] = name if isinstance(name, str) and name.strip() else ident
    return names


def read_blocks(
    document: dict[str, Any],
    label: str,
    now: float,
    owner: str | None,
    agents: dict[str, str],
    parsed: Parsed,
) -> None:
    """Top-level blocks (owned through agents' block_ids), agents' inline memory_blocks and
    a legacy single-agent file's core_memory."""
    holders: dict[str, list[str]] = {}
    inline: list[tuple[str, Any, list[str]]] = []
    for index, agent in enumerate(document.get("agents") or []):
        where = f"{label}:agents[{index}]"
        ident = id_field(agent, "id", where) or f"agent-{index}"
        block_ids = agent.get("block_ids") or []
        if not isinstance(block_ids, list):
            raise fail(where, "block_ids must be a list")
        for block_id in block_ids:
            holders.setdefault(str(block_id), []).append(agents[ident])
        blocks = agent.get("memory_blocks") or []
        if not isinstance(blocks, list):
            raise fail(where, "memory_blocks must be a list")
        inline += [
            (f"{where}.memory_blocks[{i}]", block, [agents[ident]])
            for i, block in enumerate(blocks)
        ]
    top = document.get("blocks") or []
    if not isinstance(top, list):
        raise fail(label, "blocks must be a list")
    legacy = document.get("core_memory") or []
    if not isinstance(legacy, list):
        raise fail(label, "core_memory must be a list")
    legacy_owner = document.get("name") if isinstance(document.get("name"), str) else None
    created = time_of(document.get("created_at"), "created_at", label)
    located = [
        *((f"{label}:blocks[{i}]", block, None) for i, block in enumerate(top)),
        *inline,
        *(
            (f"{label}:core_memory[{i}]", b, [legacy_owner] if legacy_owner else [])
            for i, b in enumerate(legacy)
        ),
    ]
    for where, block, names in located:
        block = require_object(block, where)
        if names is None:
            names = holders.get(str(block.get("id")), [])
        entry = block_entry(block, where, now, names[0] if names else owner, names, created)
        if entry is not None:
            entry.owner_assumed = not names
        if entry is None:
            parsed.skip("memory blocks with an empty value")
        else:
            parsed.entries.append(entry)


def block_entry(
    block: dict[str, Any],
    where: str,
    now: float,
    owner: str | None,
    agents: list[str],
    created: float | None,
) -> Entry | None:
    value = text_field(block, "value", where, required=False)
    if not value.strip():
        return None
    block_label = text_field(block, "label", where)
    read_only = block.get("read_only", False)
    if not isinstance(read_only, bool):
        raise fail(where, "read_only must be true or false")
    letta: dict[str, Any] = {"kind": "block", "agents": agents}
    letta.update({name: block[name] for name in BLOCK_FIELDS if name in block})
    letta["read_only"] = read_only
    external_id = id_field(block, "id", where)
    if not holds_uuid(external_id):  # a file-local id ("block-0"): one from what the block is
        external_id = derived_id("letta-block", owner or "default", block_label, value)
    if block.get("id") is not None:
        letta["id"] = block["id"]  # the file's own id, kept where it can be read
    row: dict[str, Any] = {
        "content": value,
        "title": f"{block_label}: {make_title(value)}",
        "external_id": external_id,
        "topic": LABEL_TOPICS.get(block_label.lower(), infer_topic(value)),
        "keywords": extract_keywords(value, first=[block_label]),
        "tier": "working",
        "memory_type": "semantic",
        "importance": 1.0,
        "is_protected": True,
        "created_at": created,
        "metadata": {**object_field(block, "metadata", where), "import_format": NAME, NAME: letta},
    }
    if owner:
        row["owner"] = owner
    row = {k: v for k, v in row.items() if v is not None}
    return Entry(where, checked_row(row, now, where), unique_id=True, typed=True)


def passage_entry(
    item: Any,
    where: str,
    now: float,
    owner: str | None,
    agents: dict[str, str],
    *,
    member: str | None = None,
) -> Entry:
    passage = require_object(item, where)
    text = text_field(passage, "text", where)
    tags = passage.get("tags") or []
    if not isinstance(tags, list) or not all(isinstance(tag, str) for tag in tags):
        raise fail(where, "tags must be a list of strings")
    metadata = object_field(passage, "metadata", where) or object_field(passage, "metadata_", where)
    known = ("id", "text", "tags", "metadata", "metadata_", "created_at", "updated_at", *DROPPED)
    letta = {"kind": "passage", **{k: v for k, v in passage.items() if k not in known}}
    agent_id = passage.get("agent_id")
    agent = agents.get(str(agent_id)) or (agent_id if isinstance(agent_id, str) else None)
    agent = agent or member
    external_id = id_field(passage, "id", where) or derived_id(
        "letta-passage", agent or owner or "default", text
    )
    row: dict[str, Any] = {
        "content": text,
        "external_id": external_id,
        "keywords": extract_keywords(text, first=tags),
        "tier": "long_term",
        "status": "archived" if passage.get("is_deleted") is True else "active",
        "created_at": passage.get("created_at"),
        "updated_at": passage.get("updated_at"),
        "metadata": {**metadata, "import_format": NAME, NAME: letta},
        "owner": agent or owner,
    }
    row = {k: v for k, v in row.items() if v is not None}
    return Entry(where, checked_row(row, now, where), unique_id=True, owner_assumed=agent is None)
