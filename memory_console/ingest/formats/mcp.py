"""The MCP memory server's knowledge-graph JSONL: entities' observations become memories.

Lines are {"type": "entity", "name", "entityType", "observations": [...]} or {"type": "relation",
"from", "to", "relationType"}. Each observation is one memory under its entity's topic: the topic
its entityType names (person -> contacts, the user's own entity -> user_info, project -> projects,
...), else the one its observations suggest. An observation is about its entity, so its content
names it ("John_Smith: Speaks fluent Spanish"; the user's own entity's observations are the
user's, and stay as written); keywords start with the entity's name, and metadata.mcp keeps the
entity and its types (a repeated entity line adds its type and observations). memory_type is
classified by the observation's text as remember() does (import's --type sets one instead). Each
relation is a memory too ("Alice works at Acme Corp") under the topic of its `from` entity. The
format has no owners, ids or times: memories take import's --owner (the summary says which),
external ids derived from the owner and what each memory says (so a second import of the same
graph is recognised), and are created now.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memory_console.agent.rules.describe import extract_keywords, infer_topic, make_title
from memory_console.ingest.formats.common import (
    Entry,
    Parsed,
    checked_row,
    derived_id,
    fail,
    json_lines,
    require_object,
    text_field,
)

NAME = "mcp"
USER_ENTITIES = ("default_user", "user", "me", "self")
ENTITY_TOPICS = {
    "person": "contacts",
    "people": "contacts",
    "contact": "contacts",
    "colleague": "contacts",
    "friend": "contacts",
    "family": "contacts",
    "organization": "contacts",
    "organisation": "contacts",
    "company": "contacts",
    "user": "user_info",
    "project": "projects",
    "repository": "projects",
    "task": "projects",
    "preference": "preferences",
    "decision": "decisions",
}


@dataclass(slots=True)
class Entity:
    name: str
    entity_types: list[str]
    where: str
    observations: list[tuple[str, str]] = field(default_factory=list)  # (where, text)

    @property
    def is_user(self) -> bool:
        return self.name.lower() in USER_ENTITIES

    @property
    def topic(self) -> str:
        if self.is_user:
            return "user_info"
        for entity_type in self.entity_types:
            by_type = ENTITY_TOPICS.get(entity_type.strip().lower())
            if by_type is not None:
                return by_type
        return infer_topic(" ".join(text for _, text in self.observations))


def parse(path: Path, *, now: float, owner: str | None = None) -> Parsed:
    """Every observation and relation of the graph, checked."""
    entities: dict[str, Entity] = {}
    relations: list[tuple[str, dict[str, str]]] = []
    seen_relations: set[tuple[str, str, str]] = set()
    parsed = Parsed()
    for where, item in json_lines(path):
        item = require_object(item, where)
        kind = item.get("type")
        if kind == "entity":
            read_entity(item, where, entities, parsed)
        elif kind == "relation":
            relation = {name: text_field(item, name, where) for name in ("from", "to")}
            relation["relationType"] = text_field(item, "relationType", where)
            key = (relation["from"], relation["relationType"], relation["to"])
            if key in seen_relations:  # the server keeps one of each
                parsed.skip("repeated relations")
                continue
            seen_relations.add(key)
            relations.append((where, relation))
        else:
            raise fail(where, f'type must be "entity" or "relation", not {kind!r}')
    for entity in entities.values():
        if not entity.observations:
            parsed.skip("entities without observations")
        for where, text in entity.observations:
            parsed.entries.append(observation_entry(entity, text, where, now, owner))
    for where, relation in relations:
        parsed.entries.append(relation_entry(relation, entities, where, now, owner))
    if not parsed.entries:
        raise fail(str(path), "no observations or relations in the file")
    return parsed


def read_entity(
    item: dict[str, Any], where: str, entities: dict[str, Entity], parsed: Parsed
) -> None:
    """Add an entity line; a repeated entity adds its new observations (as the server does)."""
    name = text_field(item, "name", where)
    if not name.strip():
        raise fail(where, "name is empty")
    entity_type = text_field(item, "entityType", where, required=False)
    observations = item.get("observations") or []
    if not isinstance(observations, list):
        raise fail(where, "observations must be a list of strings")
    entity = entities.setdefault(name, Entity(name, [], where))
    if entity_type not in entity.entity_types:
        entity.entity_types.append(entity_type)
    seen = {text for _, text in entity.observations}
    for index, text in enumerate(observations):
        if not isinstance(text, str) or not text.strip():
            raise fail(where, f"observations[{index}] must be a non-empty string")
        if text in seen:
            parsed.skip("repeated observations")
            continue
        seen.add(text)
        entity.observations.append((where, text))


def observation_entry(
    entity: Entity, text: str, where: str, now: float, owner: str | None
) -> Entry:
    content = text if entity.is_user else f"{entity.name}: {text}"
    theirs = {
        "entity": entity.name,
        "entityType": entity.entity_types[0],
        "entityTypes": entity.entity_types,
        "observation": text,
    }
    row: dict[str, Any] = {
        "content": content,
        "title": make_title(f"{entity.name}: {text}"),
        "external_id": derived_id(NAME, owner or "default", entity.name, text),
        "topic": entity.topic,
        "keywords": extract_keywords(text, first=[entity.name]),
        "metadata": {"import_format": NAME, NAME: theirs},
    }
    if owner:
        row["owner"] = owner
    return Entry(where, checked_row(row, now, where), unique_id=True, owner_assumed=True)


def relation_entry(
    relation: dict[str, str],
    entities: dict[str, Entity],
    where: str,
    now: float,
    owner: str | None,
) -> Entry:
    verb = " ".join(relation["relationType"].replace("_", " ").split())
    content = f"{relation['from']} {verb} {relation['to']}"
    source = entities.get(relation["from"])
    row: dict[str, Any] = {
        "content": content,
        "topic": source.topic if source is not None else infer_topic(content),
        "keywords": extract_keywords(content, first=[relation["from"], relation["to"]]),
        "external_id": derived_id(
            NAME, owner or "default", relation["from"], relation["relationType"], relation["to"]
        ),
        "metadata": {"import_format": NAME, NAME: {"relation": relation}},
    }
    if owner:
        row["owner"] = owner
    return Entry(where, checked_row(row, now, where), unique_id=True, owner_assumed=True)
