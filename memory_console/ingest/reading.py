"""Reading import files in bounded memory: gzip by its magic bytes, lines and documents of
bounded size, JSON of bounded depth holding only text that can be written back."""

from __future__ import annotations

import gzip
import json
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from memory_console.store.errors import StoreError
from memory_console.store.validate import json_problem

MAX_LINE_BYTES = 16 * 1024 * 1024  # one JSONL line, read at most this far
MAX_DOCUMENT_BYTES = 64 * 1024 * 1024  # a file read whole (a JSON document, a peer format)
MAX_FILE_DEPTH = 64  # a line or document; what the store keeps is bounded at MAX_JSON_DEPTH
GZIP_MAGIC = b"\x1f\x8b"
ZIP_MAGIC = b"PK\x03\x04"
READ_ERRORS = (OSError, EOFError, zlib.error)  # gzip.BadGzipFile is an OSError


class ImportFileError(StoreError):
    """A line of an import file that cannot be imported; the message starts FILE:LINE:."""


class TooLargeError(ImportFileError):
    """A file to be read whole is larger than MAX_DOCUMENT_BYTES."""


def open_source(path: Path) -> IO[bytes]:
    """The file's bytes, gunzipped as they are read when it starts with gzip's magic bytes
    (whatever its name)."""
    try:
        handle = path.open("rb")
        magic = handle.read(2)
        handle.seek(0)
    except OSError as error:
        raise ImportFileError(f"{path}: cannot read: {error.strerror}") from error
    if magic == GZIP_MAGIC:
        return gzip.GzipFile(fileobj=handle, mode="rb")  # type: ignore[return-value]
    return handle


def bounded_lines(handle: IO[bytes], label: str) -> Iterator[tuple[int, bytes]]:
    """(line number, bytes) of every line, each read no further than MAX_LINE_BYTES: a longer
    line (or a gzip bomb without newlines) is an error before it is held in memory."""
    number = 0
    while True:
        try:
            raw = handle.readline(MAX_LINE_BYTES + 1)
        except READ_ERRORS as error:
            raise ImportFileError(f"{label}: cannot read: {error}") from error
        if not raw:
            return
        number += 1
        if len(raw) > MAX_LINE_BYTES:
            raise ImportFileError(f"{label}:{number}: line longer than {MAX_LINE_BYTES:,} bytes")
        yield number, raw


def read_document(handle: IO[bytes], label: str) -> bytes:
    """A whole file (decompressed), refused above MAX_DOCUMENT_BYTES."""
    try:
        data = handle.read(MAX_DOCUMENT_BYTES + 1)
    except READ_ERRORS as error:
        raise ImportFileError(f"{label}: cannot read: {error}") from error
    if len(data) > MAX_DOCUMENT_BYTES:
        raise TooLargeError(f"{label}: {too_large()}")
    return data


def too_large() -> str:
    return (
        f"larger than {MAX_DOCUMENT_BYTES // 2**20} MB, the limit for a file read whole "
        "(a JSON document or a peer format); split it, or convert it to JSONL lines"
    )


def decode_json(data: bytes | str, where: str, *, one_line: bool = False) -> Any:
    """One JSON value, or an error naming the place (and line and column, or only the column
    of one line) of the fault. Values nested deeper than MAX_FILE_DEPTH, or holding lone
    surrogates, are refused here."""
    try:
        value = json.loads(data)
    except UnicodeDecodeError as error:
        raise ImportFileError(f"{where}: invalid UTF-8 at byte {error.start}") from error
    except json.JSONDecodeError as error:
        position = f"column {error.colno}"
        if not one_line:
            position = f"line {error.lineno} {position}"
        raise ImportFileError(f"{where}: invalid JSON: {error.msg} ({position})") from error
    except RecursionError as error:
        raise ImportFileError(f"{where}: invalid JSON: nested too deeply") from error
    except ValueError as error:  # e.g. an integer of more than 4,300 digits
        raise ImportFileError(f"{where}: invalid JSON: {error}") from error
    check_plain(value, data, where)
    return value


def check_plain(value: Any, data: bytes | str, where: str) -> None:
    """Refuse a value nested deeper than MAX_FILE_DEPTH or holding a lone surrogate. Both need
    the raw text to hold many brackets or a \\u escape; other values skip the walk."""
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    if b"\\u" not in raw and raw.count(b"{") + raw.count(b"[") <= MAX_FILE_DEPTH:
        return
    problem = json_problem(value, MAX_FILE_DEPTH)
    if problem is not None:
        raise ImportFileError(f"{where}: the JSON {problem}")
