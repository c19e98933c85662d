"""`--format auto`: which format a file is in, decided only where the file leaves no doubt."""

from __future__ import annotations

import json
import zipfile
from itertools import islice
from pathlib import Path
from typing import Any

from memory_console.ingest.formats.common import is_document, load_json, open_binary
from memory_console.ingest.jsonl import ImportFileError

SAMPLE_LINES = 50  # JSONL lines looked at; all of them must agree
DOCUMENT_KEYS = ("results", "history", "agents", "blocks", "core_memory", "passages", "memories")


def detect_format(path: Path) -> str:
    """jsonl, mem0, openmemory, letta or mcp; an ImportFileError says why it cannot tell."""
    if not path.is_file():
        raise ImportFileError(f"{path}: no such file")
    if zipfile.is_zipfile(path):
        return "openmemory"
    if path.suffix == ".af":
        return "letta"
    if is_document(path, DOCUMENT_KEYS):
        kind = document_format(load_json(path))
        if kind is None:
            raise ImportFileError(f"{path}: cannot tell the format of this JSON document; {HINT}")
        return kind
    found: dict[str, int] = {}
    with open_binary(path) as handle:
        lines = (raw for raw in handle if raw.strip())
        for number, raw in enumerate(islice(lines, SAMPLE_LINES), start=1):
            try:
                item = json.loads(raw)
            except (ValueError, RecursionError):
                raise ImportFileError(
                    f"{path}: line {number} of the file is not JSON; {HINT}"
                ) from None
            kind = line_format(item)
            if kind is None:
                raise ImportFileError(
                    f"{path}: cannot tell the format from its line {number}; {HINT}"
                )
            found.setdefault(kind, number)
    if not found:
        raise ImportFileError(f"{path}: the file is empty")
    if len(found) > 1:
        kinds = ", ".join(f"{kind} (line {number})" for kind, number in found.items())
        raise ImportFileError(f"{path}: lines look like different formats: {kinds}; {HINT}")
    return next(iter(found))


HINT = "give --format jsonl, mem0, openmemory, letta or mcp"


def line_format(item: Any) -> str | None:
    """The format one JSONL line belongs to, or None."""
    if not isinstance(item, dict):
        return None
    if item.get("type") in ("entity", "relation"):
        return "mcp"
    if "memory" in item or ("memory_id" in item and "event" in item):
        return "mem0"
    if "content" in item and item.get("state") in ("active", "paused", "archived", "deleted"):
        return "openmemory"
    if "text" in item and "content" not in item:
        return "letta"
    if "content" in item:
        return "jsonl"
    return None


def document_format(document: Any) -> str | None:
    """The format of one whole JSON document, or None."""
    if isinstance(document, list):
        kinds = {line_format(item) for item in document[:SAMPLE_LINES]}
        if len(kinds) == 1 and kinds & {"mem0", "letta"}:
            return kinds.pop()
        return None
    if not isinstance(document, dict):
        return None
    if any(key in document for key in ("agents", "blocks", "core_memory", "passages")):
        return "letta"
    if "results" in document or "history" in document:
        return "mem0"
    if "memories" in document and ("user" in document or "export_meta" in document):
        return "openmemory"
    return None
