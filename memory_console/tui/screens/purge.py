"""The purge confirmation's words: what an erasure takes in and the file that restores it."""

from __future__ import annotations

from pathlib import Path

from rich.text import Text

from memory_console.store import ErasureScope, PurgeResult
from memory_console.tui.actions import plural

SHOWN_JOINED = 4  # joined memories named in the dialog before "and N more"


def purge_title(scope: ErasureScope) -> str:
    return f"Purge {plural(len(scope.ids))} for good?"


def purge_body(scope: ErasureScope, out: Path) -> Text:
    """Count, memories joined by consolidation and why, the purge file, and the way back."""
    body = Text()
    body.append(
        f"Erases {plural(len(scope.selected))} from the store: their history, access "
        "records, vectors and text index entries, and the queries logged with them."
    )
    if scope.joined:
        body.append(f"\nJoined by consolidation, erased too ({len(scope.joined):,}):", "bold")
        for joined in scope.joined[:SHOWN_JOINED]:
            body.append(f"\n  #{joined.id}: {joined.why}")
        if len(scope.joined) > SHOWN_JOINED:
            body.append(f"\n  and {len(scope.joined) - SHOWN_JOINED:,} more")
    body.append("\nWritten first to a new file beside the store:\n  ")
    body.append(out.name, "bold")
    body.append(
        "\nUndo (u) cannot take a purge back: importing that file restores them "
        "(memory-console import FILE --allow-secrets --allow-health)."
    )
    holding = [path for path in scope.backups if scope.backup_memories.get(path) != 0]
    if holding:
        names = ", ".join(path.name for path in holding)
        body.append(f"\nMigration backups may still hold their text: {names}", "dim")
    return body


def describe_purge(result: PurgeResult, out: Path) -> str:
    """`purged 2 memories; written to FILE first (import it to restore them)`."""
    if not result.changed:
        return "nothing purged: these memories are no longer in the store"
    text = (
        f"purged {plural(len(result.changed))}; written to {out.name} first (import it to restore)"
    )
    for kept in (result.tables, result.wal):  # what the database's files still keep, and why
        if kept:
            text += f"; {kept}"
    return text
