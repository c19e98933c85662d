"""Checking and completing a memory's fields before they reach the database."""

from __future__ import annotations

import json
import math
import re
from typing import Any

from memory_console.store.errors import ValidationError
from memory_console.store.records import INSERT_COLUMNS
from memory_console.store.schema import defaults
from memory_console.store.vocab import CHOICES
from memory_console.timeutil import TIME_RANGE, in_range, parse_iso

MAX_TEXT = 1_000_000  # characters of content; longer texts are refused, not truncated
MAX_TITLE = 500
MAX_KEYWORDS = 1000
TITLE_LENGTH = 50
# JSON the store keeps (metadata, an event's before/after/scores) nests at most this deep:
# deeper values could be stored but not printed back (JSON with indentation recurses per level).
MAX_JSON_DEPTH = 32

TIME_FIELDS = ("created_at", "updated_at", "last_accessed_at")
FIELDS = set(INSERT_COLUMNS) | {"id"}
# What a new memory holds where its description says nothing (store/tables.py's defaults).
DEFAULTS = {name: value for name, value in defaults("memory").items() if name in INSERT_COLUMNS}
SURROGATE = re.compile("[\ud800-\udfff]")


def brief(value: Any, limit: int = 60) -> str:
    """A value as an error message shows it: its repr, cut short when long."""
    text = repr(value) if not isinstance(value, int) or abs(value) < 10**limit else "a huge number"
    return text if len(text) <= limit else text[: limit - 1] + "…"


def default_title(content: str) -> str:
    """The first sentence, or the first 50 characters, of the content."""
    text = " ".join(content.split())
    for stop in (". ", "! ", "? ", "\n"):
        cut = text.find(stop)
        if 0 < cut < TITLE_LENGTH:
            return text[: cut + 1].rstrip()
    return text if len(text) <= TITLE_LENGTH else text[: TITLE_LENGTH - 1].rstrip() + "…"


def check_text(name: str, value: Any, limit: int) -> str:
    if not isinstance(value, str):
        raise ValidationError(f"{name} must be a string, not {type(value).__name__}")
    if "\x00" in value:
        raise ValidationError(f"{name} contains a NUL byte")
    if len(value) > limit:
        raise ValidationError(f"{name} is {len(value):,} characters; at most {limit:,} allowed")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as error:
        code = ord(value[error.start])
        raise ValidationError(
            f"{name} holds an unpaired surrogate (\\u{code:04x}), which is not text"
        ) from error
    return value


def check_unit(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValidationError(f"{name} must be a number between 0 and 1, not {brief(value)}")
    try:
        number = float(value)
    except OverflowError as error:
        raise ValidationError(f"{name} must be between 0 and 1, not {brief(value)}") from error
    if math.isnan(number) or not 0.0 <= number <= 1.0:
        raise ValidationError(f"{name} must be between 0 and 1, not {brief(value)}")
    return number


def check_time(name: str, value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool):
        raise ValidationError(f"{name} must be an ISO 8601 time, not {brief(value)}")
    if isinstance(value, int | float):
        try:
            number = float(value)
        except OverflowError as error:
            raise ValidationError(f"{name} is out of range: {brief(value)}") from error
    elif isinstance(value, str):
        if len(value) > 64:
            raise ValidationError(f"{name} must be an ISO 8601 time, not {brief(value)}")
        try:
            number = parse_iso(value)
        except ValueError as error:
            raise ValidationError(f"{name}: {error}") from error
    else:
        raise ValidationError(f"{name} must be an ISO 8601 time, not {type(value).__name__}")
    if not math.isfinite(number) or not in_range(number):
        raise ValidationError(f"{name} is out of range ({TIME_RANGE}): {brief(value)}")
    return number


def check_choice(name: str, value: Any) -> str:
    allowed = CHOICES[name]
    if value not in allowed:
        raise ValidationError(f"{name} must be one of {', '.join(allowed)}, not {brief(value)}")
    return str(value)


def check_keywords(value: Any) -> str:
    if isinstance(value, str):
        value = [part.strip() for part in value.split(",") if part.strip()]
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ValidationError("keywords must be a list of strings")
    if len(value) > MAX_KEYWORDS:
        raise ValidationError(f"keywords: {len(value):,} of them; at most {MAX_KEYWORDS:,} allowed")
    for item in value:
        check_text("keyword", item, MAX_TITLE)
    return json.dumps(value, ensure_ascii=False)


def json_problem(value: Any, max_depth: int) -> str | None:
    """Why a parsed JSON value cannot be kept and written back: nested deeper than max_depth
    (a scalar is depth 0, {} or [] depth 1), or a string or key holding a lone surrogate
    (from a \\ud800 escape; not text, it cannot be written as UTF-8). None when it is fine."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            if not item.isascii() and SURROGATE.search(item):
                return f"holds an unpaired surrogate ({brief(item)}), which is not text"
        elif isinstance(item, dict | list):
            if depth + 1 > max_depth:
                return f"is nested more than {max_depth} levels deep"
            if isinstance(item, dict):
                stack.extend((key, depth) for key in item)
                stack.extend((child, depth + 1) for child in item.values())
            else:
                stack.extend((child, depth + 1) for child in item)
    return None


def check_json(name: str, value: Any, limit: int = MAX_TEXT) -> str:
    """A JSON value as the store keeps it (compact UTF-8 text), or ValidationError naming it."""
    problem = json_problem(value, MAX_JSON_DEPTH)
    if problem is not None:
        raise ValidationError(f"{name} {problem}")
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    except ValueError as error:
        raise ValidationError(f"{name} holds NaN or Infinity, not allowed in JSON") from error
    except TypeError as error:
        raise ValidationError(f"{name} cannot be written as JSON: {error}") from error
    return check_text(name, text, limit)


def check_metadata(value: Any) -> str:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as error:
            raise ValidationError(f"metadata is not valid JSON: {error.msg}") from error
        except RecursionError as error:
            raise ValidationError(
                f"metadata is nested more than {MAX_JSON_DEPTH} levels deep"
            ) from error
    if not isinstance(value, dict):
        raise ValidationError("metadata must be a JSON object")
    return check_json("metadata", value)


def check_count(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValidationError(f"{name} must be a whole number >= 0, not {brief(value)}")
    if value > 2**62:
        raise ValidationError(f"{name} is too large: {brief(value)}")
    return value


def check_namespace(value: Any) -> str | None:
    """A namespace path: labels joined by ".", none of them empty (None or "": no namespace)."""
    if value is None or value == "":
        return None
    text = check_text("namespace", value, MAX_TITLE)
    if any(not label.strip() for label in text.split(".")):
        raise ValidationError(f"namespace has an empty label: {brief(text)}")
    return text


def check_field(name: str, value: Any) -> Any:
    """The database value of one field, or ValidationError naming the field."""
    if name in ("title",):
        return check_text(name, value, MAX_TITLE)
    if name == "content":
        text = check_text(name, value, MAX_TEXT)
        if not text.strip():
            raise ValidationError("content is empty")
        return text
    if name in ("owner", "external_id"):
        if name == "external_id" and value is None:
            return None
        if name == "external_id" and isinstance(value, int):
            value = str(value)
        text = check_text(name, value, MAX_TITLE)
        if name == "owner" and not text.strip():
            raise ValidationError("owner is empty")
        return text
    if name in CHOICES:
        return check_choice(name, value)
    if name in ("importance", "confidence", "base_confidence"):
        return check_unit(name, value)
    if name == "retrieval_count":
        return check_count(name, value)
    if name in TIME_FIELDS:
        return check_time(name, value)
    if name == "keywords":
        return check_keywords(value)
    if name == "metadata":
        return check_metadata(value)
    if name == "is_protected":
        if not isinstance(value, bool | int) or value not in (0, 1):
            raise ValidationError(f"is_protected must be true or false, not {brief(value)}")
        return int(bool(value))
    if name == "namespace":
        return check_namespace(value)
    if name in ("consolidated_into", "superseded_by"):
        if value is None:
            return None
        return check_count(name, value)
    raise ValidationError(f"unknown field {name!r}")


def complete_memory(data: dict[str, Any], now: float) -> dict[str, Any]:
    """A full, checked row for the memory table from a partial description of a memory.

    Unknown fields go into metadata (as an import line's do); `id` is ignored here (the caller
    decides whether to keep it).
    """
    if not isinstance(data, dict):
        raise ValidationError("a memory must be a JSON object")
    if data.get("content") is None:
        raise ValidationError("content is required")
    extra = {k: v for k, v in data.items() if k not in FIELDS}
    row: dict[str, Any] = {}
    for name in INSERT_COLUMNS:
        if name in data and data[name] is not None:
            row[name] = check_field(name, data[name])
    metadata = json.loads(row.get("metadata", "{}"))
    if extra:
        metadata.update(extra)
        row["metadata"] = check_metadata(metadata)
    # Values that follow from others first; the rest are the table's column defaults.
    row.setdefault("title", default_title(row["content"]))
    row.setdefault("confidence", row.get("base_confidence", DEFAULTS["confidence"]))
    row.setdefault("base_confidence", row["confidence"])
    row.setdefault("created_at", now)
    row.setdefault("updated_at", row["created_at"])
    for name, value in DEFAULTS.items():
        row.setdefault(name, value)
    if row["created_at"] > now + 86400:
        raise ValidationError("created_at is in the future")
    if row["last_accessed_at"] is not None and row["last_accessed_at"] < row["created_at"]:
        raise ValidationError("last_accessed_at is before created_at")
    return row
