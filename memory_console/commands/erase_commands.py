"""Subcommands that forget and erase: forget and purge (by ids at once, or by filters after a
preview and a question) and erase-report (what the store holds about a selection)."""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memory_console.commands import common
from memory_console.commands.common import UsageError, UserError
from memory_console.commands.protected import (
    add_protected_options,
    leave_out_protected,
    left_out_line,
)
from memory_console.commands.store_commands import cmd_action, report_missing
from memory_console.files import not_new
from memory_console.store.errors import StoreError
from memory_console.timeutil import to_iso

if TYPE_CHECKING:
    from memory_console.store import ErasureScope, PurgeResult, Store

PREVIEW_ROWS = 10  # the memories a preview lists before "and N more"
# What each count of an erasure's scope means, in the order a person reads them.
HELD_LABELS = {
    "memory": "memories",
    "memory_event": "history events",
    "accessed": "access records",
    "embedding": "vectors",
    "memory_fts": "full-text index rows",
    "queries_elsewhere": "queries also logged on other memories (redacted there)",
}


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    forget = subparsers.add_parser(
        "forget",
        description="Archive memories with a reason written to their history (restorable). "
        "Given ids it acts at once; given filters (the options of `list`) it lists what they "
        "select and asks first, or acts with --yes.",
        epilog=common.examples(
            "forget 42 --reason 'outdated'",
            "forget --owner alice --topic health --reason 'asked to forget' --yes",
        ),
    )
    common.add_common(forget)
    common.add_ids(forget, required=False)
    forget.add_argument(
        "--reason",
        type=common.text,
        default="forgotten by an operator",
        help="kept in each memory's history (default: forgotten by an operator)",
    )
    add_asking_options(forget, "forget")
    add_protected_options(forget, "forget", yes=False)
    common.add_filter_options(forget)
    forget.set_defaults(handler=cmd_forget, action="forget")

    purge = subparsers.add_parser(
        "purge",
        description="Write the memories and their history to a new JSONL file, then erase "
        "them from the store: their history, access records, vectors, text index entries and "
        "consolidation links, and the queries logged with them. Given ids it acts at once; "
        "given filters (the options of `list`) it shows what the erasure takes in and asks "
        "first, or acts with --yes. The purge file is the only copy left: importing it "
        "restores the memories. On PostgreSQL the tables touched are then rewritten (VACUUM "
        "FULL) so their files keep no byte of the text; the write-ahead log and backups keep "
        "it until recycled.",
        epilog=common.examples("purge --owner alice --dry-run", "purge --owner alice --yes"),
    )
    common.add_common(purge)
    common.add_ids(purge, required=False)
    purge.add_argument(
        "--out",
        help="where the purged memories go (default: beside the store; for a PostgreSQL "
        "store, in the user's data directory, named after the database)",
    )
    purge.add_argument(
        "--dry-run",
        action="store_true",
        help="show what the erasure would take in, per table, and change nothing",
    )
    purge.add_argument(
        "--delete-backups",
        action="store_true",
        help="delete the migration backups that still hold the purged text (else asked at a "
        "terminal, or named and kept)",
    )
    add_asking_options(purge, "purge")
    add_protected_options(purge, "purge", yes=False)
    common.add_filter_options(purge)
    purge.set_defaults(handler=cmd_purge)

    report = subparsers.add_parser(
        "erase-report",
        description="What the store holds about the memories the filters (or ids) select, "
        "per table, including the memories consolidation links take in and the migration "
        "backups that may hold their text; then the erasures recorded (when, by whom, how "
        "many memories, the purge file). Changes nothing.",
        epilog=common.examples("erase-report --owner alice", "erase-report 42 --json"),
    )
    common.add_common(report)
    common.add_ids(report, required=False)
    common.add_limit(report, 50, "erasures listed")
    common.add_filter_options(report)
    report.set_defaults(handler=cmd_erase_report)


def add_asking_options(parser: argparse.ArgumentParser, verb: str) -> None:
    parser.add_argument(
        "--yes",
        action="store_true",
        help=f"{verb} what the filters select without asking (for scripts)",
    )


# -- selecting ------------------------------------------------------------------------------


def selection_of(args: argparse.Namespace, *, required: bool = True) -> list[str]:
    """The filter names given (empty for ids); ids and filters together are a usage error."""
    names = common.filters_given(args)
    if args.ids and names:
        raise UsageError(
            f"give memory ids or filters (--{', --'.join(names)}), not both; nothing was changed"
        )
    if required and not args.ids and not names:
        raise UsageError(
            "give memory ids, or filters to select them (--owner, --topic, --status, --type, "
            "--tier, --text ...)"
        )
    return names


def filter_words(args: argparse.Namespace, names: list[str]) -> str:
    """`--owner alice --topic health`: the filters as the person typed them, for messages."""
    words = []
    for name in names:
        value = getattr(args, common.FILTER_DESTS[f"--{name}"])
        if isinstance(value, bool):
            words.append(f"--{name}" if value else f"--no-{name}")
        else:
            words.append(f"--{name} {shlex.quote(str(value))}")
    return " ".join(words)


def selected_ids(store: Store, args: argparse.Namespace) -> list[int]:
    return [int(i) for i in store.ids_matching(common.filter_of(args))]


def print_preview(store: Store, ids: list[int], *, stream: Any) -> None:
    """The first memories of a selection as `list` shows them, then how many more."""
    from memory_console.commands import render

    shown = store.get_many(ids[:PREVIEW_ROWS])
    out = common.console()
    out.file = stream
    with_rows = [shown[i] for i in ids[:PREVIEW_ROWS] if i in shown]
    render.print_memory_table(with_rows, out=out)
    if len(ids) > PREVIEW_ROWS:
        out.print(f"and {len(ids) - PREVIEW_ROWS:,} more", style="dim")


def nothing_matches(args: argparse.Namespace, names: list[str], verb: str) -> int:
    """An empty selection is not an error (an erasure request for someone the store holds
    nothing about is answered by saying so)."""
    words = filter_words(args, names)
    if args.json:
        common.print_json({"matched": 0, "selection": ", ".join(names), "changed": []})
    else:
        print(f"nothing matches {words}: no memories held; nothing {verb}")
    return 0


def refusal(verb: str, count: int) -> str:
    from memory_console.commands import render

    return (
        f"{verb} of {render.memories(count)} selected by filters needs an answer at a terminal; "
        "give --yes to act without asking (nothing was changed)"
    )


# -- forget ---------------------------------------------------------------------------------


def cmd_forget(args: argparse.Namespace) -> int:
    from memory_console.commands import render

    names = selection_of(args)
    if args.ids:
        return cmd_action(args)
    now = common.now_of(args)
    store = common.open_store(args, write="forget")
    try:
        ids = selected_ids(store, args)
        if not ids:
            return nothing_matches(args, names, "forgotten")
        talk = sys.stderr if args.json else sys.stdout
        print(f"{filter_words(args, names)} selects {render.memories(len(ids))}:", file=talk)
        print_preview(store, ids, stream=talk)
        ids, left_out = leave_out_protected(store, ids, args, "forget", common.filter_of(args))
        question = f"Forget {render.memories(len(ids))}?"
        if not ids or not common.confirmed(
            question, yes=args.yes, refusal=refusal("forget", len(ids))
        ):
            print("nothing forgotten", file=talk)
            return 0
        result = store.forget(ids, args.reason, now=now)
    except StoreError as error:
        raise UserError(str(error)) from error
    finally:
        store.close()
    if args.json:
        common.print_json(
            {
                "action": "forget",
                "selection": ", ".join(names),
                "changed": result.changed,
                "unchanged": result.unchanged,
                "missing": result.missing,
                "left_out_protected": left_out,
            }
        )
    else:
        print(
            f"forgot {render.memories(len(result.changed))}"
            + (f"; {len(result.unchanged)} already archived" if result.unchanged else "")
        )
        if left_out:
            print(left_out_line(left_out, "forget"))
    return 0


# -- purge and erase-report -----------------------------------------------------------------


def holding(scope: ErasureScope) -> list[Path]:
    """The migration backups that hold some of these memories, or could not be read to tell."""
    return [path for path in scope.backups if scope.backup_memories.get(path) != 0]


def backup_line(scope: ErasureScope, path: Path) -> str:
    from memory_console.commands import render

    held = scope.backup_memories.get(path)
    what = "could not be read" if held is None else f"holds {render.memories(held)} of these"
    return f"  {path} ({what})"


def scope_json(scope: ErasureScope) -> dict[str, Any]:
    return {
        "selected": scope.selected,
        "missing": scope.missing,
        "joined": [{"id": j.id, "via": j.via, "why": j.why} for j in scope.joined],
        "held": dict(scope.held),
        "backups": [str(path) for path in holding(scope)],
    }


def print_scope(scope: ErasureScope, *, stream: Any, after: dict[str, int] | None = None) -> None:
    """What an erasure takes in: memories joined by consolidation and why, the rows held per
    table (and after the erasure, what is left), and migration backups holding the text."""
    from rich.table import Table

    from memory_console.commands import render

    out = common.console()
    out.file = stream
    if scope.joined:
        out.print(f"joined by consolidation ({render.memories(len(scope.joined))}, erased too):")
        for joined in scope.joined:
            out.print(f"  #{joined.id}: {joined.why}")
    table = Table(show_edge=False, pad_edge=False, header_style="bold", box=None)
    table.add_column("held about them", no_wrap=True)
    table.add_column("table", no_wrap=True, style="dim")
    table.add_column("before" if after is not None else "rows", justify="right")
    if after is not None:
        table.add_column("after", justify="right")
    keys = [*HELD_LABELS, *(k for k in scope.held if k not in HELD_LABELS)]
    for key in keys:
        if key not in scope.held:
            continue
        cells = [HELD_LABELS.get(key, key), key, f"{scope.held[key]:,}"]
        if after is not None:
            cells.append(f"{after.get(key, 0):,}")
        table.add_row(*cells)
    out.print(table)
    if holding(scope):
        out.print("migration backups beside the store that hold their text:")
        for path in holding(scope):
            out.print(backup_line(scope, path))


def restore_command(location: str, out: Path) -> str:
    """The one command that brings purged memories back whole, secrets and health data
    included, since the store held them. `location` is the store's file, or its URL
    without the password (the operator gives it as PostgreSQL clients do, never here)."""
    return (
        f"memory-console import {shlex.quote(str(out))} --db {shlex.quote(location)} "
        "--allow-secrets --allow-health"
    )


def out_path_of(args: argparse.Namespace) -> Path | None:
    """--out checked before the store is opened: purge writes a new file."""
    if args.out is None:
        return None
    if args.out in ("", "-"):
        raise UserError(f"--out {args.out!r}: purge writes a new file, not a stream")
    taken = not_new(Path(args.out))
    if taken is not None:
        raise UserError(f"{taken}; purge writes a new file, so nothing was purged")
    return Path(args.out)


def cmd_purge(args: argparse.Namespace) -> int:
    from memory_console.commands import render
    from memory_console.settings import data_dir
    from memory_console.store.erase import default_purge_file

    names = selection_of(args)
    now = common.now_of(args)
    given_out = out_path_of(args)
    talk = sys.stderr if args.json else sys.stdout
    store = common.open_store(args, write=None if args.dry_run else "purge")
    try:
        if names:
            ids = selected_ids(store, args)
            if not ids:
                return nothing_matches(args, names, "purged")
        else:
            ids = common.parse_ids(args.ids)
        if args.dry_run:
            return dry_run(store, ids, names, args)
        left_out: list[int] = []
        if names:
            print(f"{filter_words(args, names)} selects {render.memories(len(ids))}:", file=talk)
            print_preview(store, ids, stream=talk)
            ids, left_out = leave_out_protected(store, ids, args, "purge", common.filter_of(args))
            if not ids:
                print("nothing purged", file=talk)
                return 0
            scope = store.erasure_scope(ids)
            erased = len(scope.ids)
            print_scope(scope, stream=talk)
            question = f"Purge {render.memories(erased)} for good?"
            if not common.confirmed(question, yes=args.yes, refusal=refusal("purge", erased)):
                print("nothing purged", file=talk)
                return 0
        try:
            out = given_out or default_purge_file(store, now, data_dir())
            if out is None:
                raise UserError(
                    f"{store.location}: too many purge files named for this second; give --out"
                )
            result = store.purge(ids, out, now=now, selection=", ".join(names) or "ids")
        except (StoreError, OSError) as error:
            raise UserError(str(error)) from error
        store_path = store.location
    finally:
        store.close()
    deleted = delete_backups(result, args, talk, ask=bool(names)) if result.changed else []
    if args.json:
        made = purge_json(result, out, store_path, names, deleted)
        common.print_json({**made, "left_out_protected": left_out})
    elif result.changed:
        print_purged(result, out, store_path, deleted, report=bool(names))
    if left_out and not args.json:
        print(left_out_line(left_out, "purge"))
    return report_missing(result.missing, failed=not result.changed)


def dry_run(store: Store, ids: list[int], names: list[str], args: argparse.Namespace) -> int:
    from memory_console.commands import render

    scope = store.erasure_scope(ids)
    if args.json:
        head = {"dry_run": True, "selection": ", ".join(names) or "ids"}
        common.print_json(head | scope_json(scope))
        return 0
    what = filter_words(args, names) if names else "the ids given"
    print(f"purge --dry-run: {what} selects {render.memories(len(scope.selected))}:")
    print_preview(store, scope.selected, stream=sys.stdout)
    print_scope(scope, stream=sys.stdout)
    if scope.missing:
        print(f"no such memories: {', '.join(map(str, scope.missing))}")
    print(f"purge would erase {render.memories(len(scope.ids))}; nothing was changed")
    return 0


def delete_backups(
    result: PurgeResult, args: argparse.Namespace, talk: Any, *, ask: bool
) -> list[Path]:
    """Delete the migration backups that still hold the purged text, when --delete-backups
    says so or (`ask`: a purge by filters) the person agrees at a terminal; never silently:
    --yes alone keeps them, and `purge ID...` asks nothing, as ever."""
    backups = [path for path in holding(result.scope) if path.exists()]
    if not backups:
        return []
    if not args.delete_backups:
        if not ask or args.yes or not sys.stdin.isatty():
            return []
        print("these migration backups still hold the purged text:", file=talk)
        for path in backups:
            print(backup_line(result.scope, path), file=talk)
        if not common.confirmed(
            f"Delete {len(backups)} migration backup{'s' if len(backups) > 1 else ''}?",
            yes=False,
            refusal="",
        ):
            return []
    deleted = []
    for path in backups:
        try:
            path.unlink()
        except FileNotFoundError:
            continue
        except OSError as error:
            common.log.warning("%s: not deleted: %s", path, error.strerror)
            continue
        deleted.append(path)
    return deleted


def purge_json(
    result: PurgeResult, out: Path, store_path: str, names: list[str], deleted: list[Path]
) -> dict[str, Any]:
    kept = [str(p) for p in holding(result.scope) if p not in deleted]
    return {
        "purged": result.changed,
        "missing": result.missing,
        "out": str(out),
        "selection": ", ".join(names) or "ids",
        "joined": scope_json(result.scope)["joined"],
        "before": dict(result.scope.held),
        "after": dict(result.after),
        "wal": result.wal,
        "tables": result.tables,
        "erasure_id": result.erasure_id,
        "backups_kept": kept,
        "backups_deleted": [str(p) for p in deleted],
        "restore": restore_command(store_path, out) if result.changed else None,
    }


def print_purged(
    result: PurgeResult, out: Path, store_path: str, deleted: list[Path], *, report: bool
) -> None:
    """What a purge did. By ids: one line, as ever (plus the WAL and backups notes). As an
    erasure request (by filters): the counts per table before and after, the audit row, the
    backups and the one command that restores the memories."""
    print(f"purged {len(result.changed)} memories; they were written to {out} first")
    if report:
        print_scope(result.scope, stream=sys.stdout, after=result.after)
        if result.wal is None:
            print("the write-ahead log was checkpointed and truncated")
    if result.wal is not None:
        common.log.warning("note: %s", result.wal)  # kept at --quiet: the text may linger
    if result.tables is not None:
        common.log.warning("note: %s", result.tables)
    if report and result.erasure_id is not None:
        print(
            f"recorded as erasure {result.erasure_id} (when, by whom, how many memories and "
            "the purge file's name; none of their text)"
        )
    for path in deleted:
        print(f"deleted migration backup {path}")
    kept = [p for p in holding(result.scope) if p not in deleted]
    if kept:
        print(
            "kept, and still holding the purged text (give --delete-backups to delete): "
            + ", ".join(map(str, kept))
        )
    if report:
        print(
            "the purge file is the only copy left; to restore: " + restore_command(store_path, out)
        )


def cmd_erase_report(args: argparse.Namespace) -> int:
    from memory_console.commands import render

    common.check_range("--limit", args.limit, 1)
    names = selection_of(args, required=False)
    store = common.open_store(args)
    try:
        selecting = bool(names or args.ids)
        if names:
            ids = selected_ids(store, args)
        else:
            ids = common.parse_ids(args.ids) if args.ids else []
        scope = store.erasure_scope(ids) if selecting else None
        erasures = store.erasures(limit=args.limit)
    finally:
        store.close()
    listed = [
        {
            "id": e.id,
            "at": to_iso(e.at),
            "actor": e.actor,
            "memories": e.memories,
            "purge_file": e.purge_file,
            "selection": e.selection,
        }
        for e in erasures
    ]
    if args.json:
        data: dict[str, Any] = {"selection": ", ".join(names) or ("ids" if args.ids else None)}
        if scope is not None:
            data |= scope_json(scope)
        data["erasures"] = listed
        common.print_json(data)
        return 0
    if scope is not None:
        what = filter_words(args, names) if names else "the ids given"
        print(f"{what} selects {render.memories(len(scope.selected))}")
        print_scope(scope, stream=sys.stdout)
    print_erasures(listed)
    return 0


def print_erasures(listed: list[dict[str, Any]]) -> None:
    from rich.table import Table

    out = common.console()
    if not listed:
        out.print("no erasures recorded")
        return
    table = Table(show_edge=False, pad_edge=False, header_style="bold", title_justify="left")
    table.title = "erasures recorded"
    for name in ("id", "at", "by", "memories", "selected by", "purge file"):
        table.add_column(name, no_wrap=name != "purge file", overflow="fold")
    for e in listed:
        table.add_row(
            str(e["id"]),
            e["at"],
            e["actor"],
            f"{e['memories']:,}",
            e["selection"] or "",
            e["purge_file"] or "",
        )
    out.print(table)
