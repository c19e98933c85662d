"""Import from our JSONL and the peer formats (mem0, OpenMemory, Letta, MCP), all or nothing."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memory_console.timeutil import now_ts

if TYPE_CHECKING:
    from memory_console.ingest.formats.common import Parsed
    from memory_console.ingest.secrets_policy import SecretsPolicy
    from memory_console.store import Store

FORMATS = ("jsonl", "mem0", "openmemory", "letta", "mcp")
EXPORT_FORMATS = ("jsonl", "mem0")
Reader = Callable[..., "Parsed"]


@dataclass(frozen=True, slots=True)
class FormatReport:
    """What an import did: the format read, the new ids, what was left out and why.

    refused: `WHERE: reason` of each memory the secrets policy refused (with skip_refused).
    assumed_owner: the owner given to the `assumed` memories whose file names none.
    warnings: what was guessed, by how many memories (e.g. a missing created_at)."""

    path: Path
    format: str
    ids: list[int]
    skipped: dict[str, int] = field(default_factory=dict)
    refused: list[str] = field(default_factory=list)
    assumed_owner: str | None = None
    assumed: int = 0
    warnings: dict[str, int] = field(default_factory=dict)

    @property
    def imported(self) -> int:
        return len(self.ids)


def reader(name: str) -> Reader:
    """The parse function of a peer format (imported only when used)."""
    if name == "mem0":
        from memory_console.ingest.formats.mem0 import parse
    elif name == "openmemory":
        from memory_console.ingest.formats.openmemory import parse
    elif name == "letta":
        from memory_console.ingest.formats.letta import parse
    elif name == "mcp":
        from memory_console.ingest.formats.mcp import parse
    else:
        raise ValueError(f"unknown format {name!r}; one of {', '.join(FORMATS)}")
    return parse


def import_file(
    store: Store,
    path: str | os.PathLike[str],
    *,
    file_format: str = "auto",
    now: float | None = None,
    keep_ids: bool = True,
    owner: str | None = None,
    policy: SecretsPolicy | None = None,
    memory_type: str | None = None,
    skip_refused: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> FormatReport:
    """Read and check the whole file, then insert every memory (and its history) in one
    transaction, or nothing. Errors name FILE:LINE or FILE:path and the reason.

    keep_ids: our JSONL keeps its ids; peer formats refuse memories whose (globally unique)
    id was imported before. Without it, both add the file's memories as new ones.
    owner: for memories whose file names no owner (else "default").
    policy: a memory holding a credential, or health data whose metadata.user_requested is not
    true, fails the whole import unless the policy allows it (default: it does not); with
    skip_refused such memories are left out instead (report.refused says which and why). A
    malformed record still fails the whole import.
    memory_type: for memories whose file gives none; without it they are classified by their
    content, as remember() does (each format's docstring says which of its memories are typed).
    progress(read, total) follows the memories as they are inserted (every PROGRESS_ROWS)."""
    from memory_console.ingest.formats.common import check_new_external_ids, fail
    from memory_console.ingest.formats.detect import detect_format
    from memory_console.ingest.jsonl import PROGRESS_ROWS, import_jsonl
    from memory_console.ingest.secrets_policy import SecretsPolicy, import_refusal
    from memory_console.store import held
    from memory_console.store.validate import check_field

    source = Path(path)
    if held.holds(source):  # reading it would close a descriptor of a store we hold: refused
        raise fail(str(source), "is a store file (or its -wal/-shm) open here, not an import file")
    moment = now_ts() if now is None else now
    name = detect_format(source) if file_format == "auto" else file_format
    if name == "jsonl":
        report = import_jsonl(
            store,
            source,
            now=moment,
            keep_ids=keep_ids,
            policy=policy,
            memory_type=memory_type,
            skip_refused=skip_refused,
            progress=progress,
        )
        return FormatReport(source, name, report.ids, refused=report.refused)
    parsed = reader(name)(source, now=moment, owner=owner)
    if memory_type is not None:
        check_field("memory_type", memory_type)
        for entry in parsed.entries:
            if not entry.typed:
                entry.row["memory_type"] = memory_type
    kept, refusals = [], []
    for entry in parsed.entries:
        refused = import_refusal(entry.row, entry.history, policy or SecretsPolicy())
        if refused is None:
            kept.append(entry)
        elif skip_refused:
            refusals.append(f"{entry.where}: {refused}")
        else:
            raise fail(entry.where, refused)
    if not kept:
        raise fail(str(source), f"all {len(refusals):,} memories were refused: {refusals[0]}")
    if keep_ids:
        check_new_external_ids(store, kept)
    has_history = any(entry.history for entry in kept)

    def batches() -> Iterator[tuple[list[dict[str, Any]], list[Any] | None]]:
        # A batch at a time in the one transaction, so a long import can tell its progress.
        for start in range(0, len(kept), PROGRESS_ROWS):
            part = kept[start : start + PROGRESS_ROWS]
            yield (
                [entry.row for entry in part],
                ([entry.history for entry in part] if has_history else None),
            )
            if progress is not None:
                progress(start + len(part), len(kept))

    ids = store.insert_batches(batches(), moment)
    assumed = sum(entry.owner_assumed for entry in kept)
    return FormatReport(
        source,
        name,
        ids,
        dict(parsed.skipped),
        refusals,
        (owner or "default") if assumed else None,
        assumed,
        dict(parsed.warnings),
    )
