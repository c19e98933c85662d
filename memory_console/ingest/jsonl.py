"""Our JSONL format: checked import, all or nothing, and export.

See docs/ARCHITECTURE.md, "Import and export format".
"""

from __future__ import annotations

import hashlib
import os
import queue
import threading
from collections.abc import Callable, Generator, Iterable, Iterator
from contextlib import closing
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import IO, Any

from memory_console.agent.rules.classify import classify_type
from memory_console.ingest.reading import (
    MAX_LINE_BYTES,
    ImportFileError,
    bounded_lines,
    decode_json,
    open_source,
)
from memory_console.ingest.secrets_policy import SecretsPolicy, import_refusal
from memory_console.sensitive import mask_record
from memory_console.store import MemoryFilter, Store
from memory_console.store.errors import ValidationError
from memory_console.store.validate import (
    MAX_TITLE,
    check_count,
    check_json,
    check_text,
    check_time,
    complete_memory,
)
from memory_console.store.vocab import EVENT_KINDS
from memory_console.store.wire import export_record, json_line
from memory_console.timeutil import now_ts

BATCH_ROWS = 2000  # memories inserted at a time: the second pass holds one batch in memory
PROGRESS_ROWS = 500  # an import tells its progress this often (memories read for insertion)
EXPORT_BATCH = 500  # memories whose histories an export reads in one statement
# Batches the second reading may be ahead of the database (see read_ahead); 0 reads in the
# inserting thread, as imports did before (benchmarks/bench_pg_import.py measures both).
READ_AHEAD = 2
ExportProgress = Callable[[int, int], None]  # (memories written, how many there are)


@dataclass(frozen=True, slots=True)
class ImportReport:
    path: Path
    imported: int
    ids: list[int]
    refused: list[str] = field(default_factory=list)  # `FILE:LINE: reason` of each left out


def export_jsonl(
    store: Store,
    out: IO[str],
    *,
    include_all: bool = False,
    history: bool = False,
    reveal: bool = False,
    progress: ExportProgress | None = None,
) -> int:
    """Write memories (active only unless include_all) as JSONL; returns how many.

    Credentials are masked in every text of a memory and its history unless reveal.
    progress(written, total) follows each page of memories."""
    memory_filter = MemoryFilter() if include_all else MemoryFilter(status="active")
    total = store.count(memory_filter) if progress is not None else 0
    written = 0
    for page in batched(store.iter_memories(memory_filter), EXPORT_BATCH):
        histories = store.histories([record.id for record in page]) if history else {}
        for record in page:
            data = export_record(record, histories.get(record.id) if history else None)
            out.write(json_line(data if reveal else mask_record(data)))
        written += len(page)
        if progress is not None:
            progress(written, max(total, written))
    return written


def read_ahead(items: Generator[Any, None, None], depth: int) -> Iterator[Any]:
    """The items, made by a thread of their own up to `depth` ahead of the consumer.

    An import's second reading (JSON and the checks, Python's work) goes on while the
    database writes the batch before it: PostgreSQL's server, or SQLite's step, which lets go
    of the interpreter while it writes. An error in the thread is raised here, where the item
    it stopped would have come; a consumer that stops early stops the thread."""
    if depth < 1:
        yield from items
        return
    ready: queue.Queue[tuple[bool, Any]] = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def hand_over(item: tuple[bool, Any]) -> bool:
        while not stop.is_set():
            try:
                ready.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        try:
            with closing(items):
                for item in items:
                    if not hand_over((True, item)):
                        return
        except BaseException as error:  # handed over whatever it is, to be raised there
            hand_over((False, error))
            return
        hand_over((False, None))

    thread = threading.Thread(target=produce, name="import-read-ahead", daemon=True)
    thread.start()
    try:
        while True:
            more, item = ready.get()
            if not more:
                if item is not None:
                    raise item
                return
            yield item
    finally:
        stop.set()
        thread.join()


def batched(items: Iterable[Any], size: int) -> Iterator[list[Any]]:
    """The items in lists of `size` (the last one shorter)."""
    iterator = iter(items)
    while page := list(islice(iterator, size)):
        yield page


def read_lines(path: Path, digest: hashlib._Hash | None = None) -> Iterator[tuple[int, str]]:
    """(line number, text) of each non-blank line, read a bounded line at a time (gzip is
    read as it decompresses); bad bytes are an error naming the line. `digest` sees every byte."""
    with open_source(path) as handle:
        for number, raw in bounded_lines(handle, str(path)):
            if digest is not None:
                digest.update(raw)
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
        kept: dict[str, str | None] = {}
        for name in ("before", "after", "scores"):
            if entry.get(name) is not None and not isinstance(entry[name], dict):
                raise ValidationError(f"history event {position}: {name} must be an object")
            value = entry.get(name)
            kept[name] = check_json(f"history event {position}: {name}", value) if value else None
        query = entry.get("query")
        if query is not None:
            check_text(f"history event {position}: query", query, MAX_LINE_BYTES)
        actor = entry.get("actor")
        if actor is not None:
            check_text(f"history event {position}: actor", actor, MAX_TITLE)
        evaluated_at = check_time("history evaluated_at", entry.get("evaluated_at"))
        events.append(
            (
                at,
                actor or "import",
                kind,
                kept["before"],
                kept["after"],
                None,  # runs are not carried between stores
                query,
                kept["scores"],
                evaluated_at,
            )
        )
    return events


Checked = tuple[int, dict[str, Any], list[tuple[Any, ...]] | None]


def checked_lines(
    path: Path,
    *,
    now: float,
    keep_ids: bool = True,
    policy: SecretsPolicy | None = None,
    digest: hashlib._Hash | None = None,
    screen: bool = True,
    memory_type: str | None = None,
    refused: dict[int, str] | None = None,
) -> Iterator[Checked]:
    """(line number, checked row, history) of every memory in the file, one line at a time;
    the first bad line raises ImportFileError `FILE:LINE: reason`. A line holding a credential,
    or health data nobody asked to keep, is a bad line unless the policy allows it (not
    looked for again with `screen` off: a reading of bytes already screened). With `refused`,
    such a line is not an error: its number and reason go there and it is not yielded. A line
    without a memory_type takes `memory_type`, else the type its content is classified as."""
    policy = SecretsPolicy() if policy is None else policy
    for number, text in read_lines(path, digest):
        where = f"{path}:{number}"
        data = decode_json(text, where, one_line=True)
        if not isinstance(data, dict):
            raise ImportFileError(
                f"{where}: a line must be a JSON object, not {type(data).__name__}"
            )
        try:
            history = parse_history(data.pop("history")) if "history" in data else None
            if data.get("memory_type") is None and isinstance(data.get("content"), str):
                data["memory_type"] = memory_type or classify_type(data["content"])[0]
            row = complete_memory(data, now)
            if keep_ids and data.get("id") is not None:
                ident = check_count("id", data["id"])
                if ident < 1:
                    raise ValidationError("id must be >= 1")
                row["id"] = ident
        except ValidationError as error:
            raise ImportFileError(f"{where}: {error}") from error
        reason = import_refusal(row, history, policy) if screen else None
        if reason is not None:
            if refused is None:
                raise ImportFileError(f"{where}: {reason}")
            refused[number] = reason
            continue
        yield number, row, history


def import_jsonl(
    store: Store,
    path: str | os.PathLike[str],
    *,
    now: float | None = None,
    keep_ids: bool = True,
    policy: SecretsPolicy | None = None,
    memory_type: str | None = None,
    skip_refused: bool = False,
    progress: ExportProgress | None = None,
) -> ImportReport:
    """Check every line, keeping only the ids, then read the file again and insert every
    memory in one transaction, a batch at a time, or nothing; the second reading is done a
    batch or two ahead of the database (read_ahead). Memory stays bounded by a line and a few
    batches, whatever the file's size. A file that changes between the two
    readings is refused (its bytes are hashed both times). memory_type: for lines that give
    none (else each is classified by its content). skip_refused: lines the secrets policy
    refuses are left out (and listed in the report) instead of failing the import."""
    source = Path(path)
    moment = now_ts() if now is None else now
    options: dict[str, Any] = {
        "now": moment,
        "keep_ids": keep_ids,
        "policy": policy,
        "memory_type": memory_type,
    }
    checked = hashlib.sha256()
    lines: dict[int, int] = {}  # the file's ids and the line each is on
    refused: dict[int, str] | None = {} if skip_refused else None
    found = 0
    for number, row, _ in checked_lines(source, digest=checked, refused=refused, **options):
        found += 1
        ident = row.get("id")
        if ident is not None:
            if ident in lines:
                raise ImportFileError(
                    f"{source}:{number}: duplicate id {ident} (first on line {lines[ident]})"
                )
            lines[ident] = number
    if not found and refused:
        number, reason = next(iter(refused.items()))
        raise ImportFileError(
            f"{source}: all {len(refused):,} memories were refused: {source}:{number}: {reason}"
        )
    if not found:
        raise ImportFileError(f"{source}: no memories in the file")
    if lines:
        clash = store.existing_ids(list(lines))
        if clash:
            raise ImportFileError(
                f"{source}:{lines[clash[0]]}: id {clash[0]} already exists in the store; "
                "import with --new-ids to add the file's memories as new ones"
            )
    del lines

    def second_reading() -> Generator[list[Checked], None, None]:
        inserted = hashlib.sha256()
        batch: list[Checked] = []
        # The same bytes as the first reading (the digests must match, or nothing is kept), so
        # the secret screen is not run twice.
        for line in checked_lines(source, digest=inserted, screen=False, **options):
            if not (refused and line[0] in refused):
                batch.append(line)
            if len(batch) == BATCH_ROWS:
                yield batch
                batch = []
        if inserted.digest() != checked.digest():
            raise ImportFileError(f"{source}: the file changed while it was imported")
        if batch:
            yield batch

    def batches() -> Iterator[tuple[list[dict[str, Any]], list[Any]]]:
        taken = 0  # memories read for insertion so far
        for batch in read_ahead(second_reading(), READ_AHEAD):
            for _ in batch:
                taken += 1
                if progress is not None and taken % PROGRESS_ROWS == 0:
                    progress(taken, found)
            yield [row for _, row, _ in batch], [history for _, _, history in batch]

    ids = store.insert_batches(batches(), moment)
    left_out = [f"{source}:{number}: {reason}" for number, reason in (refused or {}).items()]
    return ImportReport(source, len(ids), ids, left_out)
