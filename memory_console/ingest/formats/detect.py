"""`--format auto`: which format a file is in, decided only where the file leaves no doubt."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

from memory_console.ingest.formats.common import first_lines, is_document, load_json
from memory_console.ingest.reading import ImportFileError, TooLargeError

SAMPLE_LINES = 50  # JSONL lines looked at; all of them must agree
HINT = "give --format jsonl, mem0, openmemory, letta or mcp"
DOCUMENT_KEYS = ("results", "history", "agents", "blocks", "core_memory", "passages", "memories")


def detect_format(path: Path) -> str:
    """jsonl, mem0, openmemory, letta or mcp; an ImportFileError says why it cannot tell.

    JSONL lines are classified by their fields (the first SAMPLE_LINES must agree); a file
    none of whose lines looks like a peer format is taken as ours, the CLI's own format."""
    if not path.exists():
        raise ImportFileError(f"{path}: no such file")
    if not path.is_file():
        raise ImportFileError(f"{path}: not a regular file")
    if zipfile.is_zipfile(path):
        return zip_format(path)
    if path.suffix == ".af":
        return "letta"
    if is_document(path, DOCUMENT_KEYS):
        try:
            document = load_json(path)
        except TooLargeError:
            raise
        except ImportFileError:
            pass  # not one JSON value: JSONL with a bad line, which its reader names
        else:
            kind = document_format(document)
            if kind is None and not one_line(path):
                raise ImportFileError(
                    f"{path}: cannot tell the format of this JSON document; {HINT}"
                )
            return kind or "jsonl"  # a one-line file is also JSONL: ours, unless it says so
    found: dict[str, int] = {}
    for number, raw in enumerate(first_lines(path, SAMPLE_LINES), start=1):
        try:
            kind = line_format(json.loads(raw))
        except (ValueError, RecursionError):
            continue  # the reader names the bad line
        if kind is not None:
            found.setdefault(kind, number)
    if len(found) > 1:
        kinds = ", ".join(f"{kind} (line {number})" for kind, number in found.items())
        raise ImportFileError(f"{path}: lines look like different formats: {kinds}; {HINT}")
    # No line in a peer format: our own JSONL, whose reader says what is wrong and where.
    return next(iter(found), "jsonl")


def zip_format(path: Path) -> str:
    """letta for Letta's archival export (`AGENT_ID_memories.json` members), else openmemory
    (whose reader says what an OpenMemory export zip lacks)."""
    from memory_console.ingest.formats.letta import ARCHIVAL_MEMBER
    from memory_console.ingest.formats.openmemory import LOGICAL, MANIFEST

    try:
        with zipfile.ZipFile(path) as archive:
            names = [name.rsplit("/", 1)[-1] for name in archive.namelist()]
    except (zipfile.BadZipFile, OSError):
        return "openmemory"  # its reader says why the zip cannot be read
    if MANIFEST in names or LOGICAL in names:
        return "openmemory"
    if any(name.endswith(ARCHIVAL_MEMBER) for name in names):
        return "letta"
    return "openmemory"


def one_line(path: Path) -> bool:
    return len(first_lines(path, 2)) == 1


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
    if "content" in document:  # one line of ours (or of OpenMemory), whatever else it holds
        return line_format(document)
    if any(key in document for key in ("agents", "blocks", "core_memory", "passages")):
        return "letta"
    if "results" in document or "history" in document:
        return "mem0"
    if "memories" in document and ("user" in document or "export_meta" in document):
        return "openmemory"
    return None
