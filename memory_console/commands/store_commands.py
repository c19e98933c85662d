"""Subcommands over the store itself: demo, import, export, list, show, edit, the flag actions
(protect, unprotect, archive, restore) and stats."""

from __future__ import annotations

import argparse
import contextlib
import errno
import os
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

from memory_console.commands import common
from memory_console.commands.common import UserError
from memory_console.commands.protected import (
    add_protected_options,
    leave_out_protected,
    left_out_line,
)
from memory_console.files import not_regular
from memory_console.ingest.formats import EXPORT_FORMATS
from memory_console.ingest.formats import FORMATS as IMPORT_FORMATS
from memory_console.store.db import SQLITE_MAGIC, in_use
from memory_console.store.errors import StoreError
from memory_console.store.vocab import (
    MEMORY_TYPES,
    SORTABLE,
    TOPICS,
)

MAX_DEMO_COUNT = 10_000_000


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    demo = subparsers.add_parser(
        "demo",
        description="Create a demo store: several owners, six topics, "
        "12 months of history, near-duplicates, a few secrets.",
        epilog=common.examples("demo --db demo.db", "demo --db big.db --count 100000 --force"),
    )
    common.add_common(demo)
    demo.add_argument("--count", type=int, default=2000, help="how many memories (default 2000)")
    demo.add_argument("--seed", type=int, default=7, help="random seed (default 7)")
    demo.add_argument("--force", action="store_true", help="replace an existing store file")
    demo.set_defaults(handler=cmd_demo)

    imp = subparsers.add_parser(
        "import",
        description="Validate the whole file first, then import all in one transaction; "
        "a bad record prints FILE:LINE: reason (FILE:path for zip and JSON documents). "
        "Reads our JSONL, mem0 records with their history rows, OpenMemory export zips, "
        "Letta agent files and archival passages, and MCP memory server JSONL.",
        epilog=common.examples(
            "import memories.jsonl --db memories.db",
            "import - --format mem0 --owner alice < mem0-export.json",
        ),
    )
    common.add_common(imp)
    imp.add_argument(
        "file", help="the file to import; - reads standard input (a file named - is ./-)"
    )
    imp.add_argument(
        "--format",
        default="auto",
        choices=("auto", *IMPORT_FORMATS),
        help="the file's format (default auto: detected where the file leaves no doubt)",
    )
    imp.add_argument(
        "--new-ids",
        action="store_true",
        help="ignore the file's ids and add the memories as new ones "
        "(peer formats: import memories whose ids were imported before again)",
    )
    imp.add_argument(
        "--owner",
        type=common.text,
        help="owner of memories whose file names none (peer formats; default: default)",
    )
    imp.add_argument(
        "--type",
        dest="memory_type",
        choices=MEMORY_TYPES,
        help="memory_type of memories whose file gives none (default: each is classified by "
        "its text: facts and preferences semantic, events and plans episodic, how-to procedural)",
    )
    imp.add_argument(
        "--allow-secrets",
        action="store_true",
        help="keep memories holding credentials (passwords, keys, tokens, card numbers, SSNs); "
        "without it such a memory fails the import",
    )
    imp.add_argument(
        "--allow-health",
        action="store_true",
        help="keep health data whose metadata.user_requested is not true; "
        "without it such a memory fails the import",
    )
    imp.add_argument(
        "--skip-refused",
        action="store_true",
        help="import the memories that pass and leave out those refused for credentials or "
        "health data, each listed on stderr as FILE:LINE: reason (a malformed record still "
        "imports nothing)",
    )
    imp.set_defaults(handler=cmd_import)

    exp = subparsers.add_parser(
        "export",
        description="Write memories in the import format (with ids), or as mem0 records "
        "(our own fields in metadata.memory_console; --history adds mem0 history rows). "
        "Credentials are masked unless --reveal; a file given with --out is readable by its "
        "owner only.",
        epilog=common.examples(
            "export --out backup.jsonl --all --history",
            "export --format mem0 | gzip > memories-mem0.jsonl.gz",
            "export - --all > everything.jsonl",
        ),
    )
    common.add_common(exp, json_output=False)
    exp.add_argument(
        "file",
        nargs="?",
        help="the file to write, as --out names it (- is standard output, as `import -` reads "
        "standard input)",
    )
    exp.add_argument(
        "--out",
        help="the file to write (default, and with -: standard output; a file named - is ./-)",
    )
    exp.add_argument("--all", action="store_true", help="archived and consolidated ones too")
    exp.add_argument("--history", action="store_true", help="each memory's events too")
    exp.add_argument(
        "--format",
        default="jsonl",
        choices=EXPORT_FORMATS,
        help="jsonl (ours, the default) or mem0",
    )
    common.add_reveal(exp, "write")
    exp.set_defaults(handler=cmd_export)

    lst = subparsers.add_parser(
        "list",
        description="List memories, filtered and sorted (keyset paging: any page is fast).",
        epilog=common.examples(
            "list --owner alice --topic preferences",
            "list --sort confidence --limit 10 --json",
        ),
    )
    common.add_common(lst)
    common.add_filter_options(lst)
    lst.add_argument(
        "--sort", default="id", choices=SORTABLE, help="sort by this field (default id)"
    )
    lst.add_argument("--desc", action="store_true", help="descending order")
    common.add_limit(lst, 50, "memories")
    common.add_reveal(lst)
    lst.set_defaults(handler=cmd_list)

    show = subparsers.add_parser(
        "show",
        description="One memory: fields, history and decay forecast.",
        epilog=common.examples("show 42", "show 42 --accesses --json"),
    )
    common.add_common(show)
    common.add_id(show)
    show.add_argument("--accesses", action="store_true", help="its access log too")
    common.add_reveal(show)
    show.set_defaults(handler=cmd_show)

    edit = subparsers.add_parser(
        "edit",
        description="Change fields of one memory, as the console's edit form does; the change "
        "is recorded as an edited event with the values before and after. A memory_type of "
        "semantic never decays; episodic and procedural ones fade unless recalled.",
        epilog=common.examples("edit 42 --type semantic", "edit 42 --title 'Prefers tea'"),
    )
    common.add_common(edit)
    common.add_id(edit)
    edit.add_argument("--title", type=common.text, help="the memory's new title")
    edit.add_argument("--content", type=common.text, help="the memory's new text")
    edit.add_argument("--topic", choices=TOPICS, help="move the memory to this topic")
    edit.add_argument(
        "--type",
        dest="memory_type",
        choices=MEMORY_TYPES,
        help="the memory's type (semantic never decays; episodic and procedural fade)",
    )
    edit.set_defaults(handler=cmd_edit)

    for name, description in (
        ("protect", "Protect memories from every pass."),
        ("unprotect", "Remove the protection."),
        ("archive", "Archive memories (restorable)."),
        ("restore", "Bring archived memories back."),
    ):
        action = subparsers.add_parser(
            name,
            description=description,
            epilog=common.examples(f"{name} 42", f"{name} 3,5,8 --json"),
        )
        common.add_common(action)
        common.add_ids(action)
        if name == "archive":
            add_protected_options(action, name, yes=True)
        action.set_defaults(handler=cmd_action, action=name)

    stats = subparsers.add_parser(
        "stats",
        description="Confidence tiers, staleness, recent access, age "
        "distribution, counts per topic, owner, type, tier and status.",
        epilog=common.examples("stats", "stats --db memories.db --json"),
    )
    common.add_common(stats)
    stats.set_defaults(handler=cmd_stats)


def cmd_demo(args: argparse.Namespace) -> int:
    common.check_range("--count", args.count, 1, MAX_DEMO_COUNT)
    common.check_range("--seed", args.seed, 0)
    if common.settings_of(args).read_only:
        raise UserError(f"read-only mode: demo refused ({common.READ_ONLY_SOURCES})")
    path = common.db_path(args)
    if isinstance(path, str):
        return demo_in_database(args, path)
    odd = not_regular(path)
    if odd is not None:
        raise UserError(f"{odd}; a store is a regular file, so nothing was written")
    if path.exists() and path.stat().st_size > 0:
        if not args.force:
            raise UserError(f"{path}: exists; use --force to replace it")
        blocked = common.not_writable(path)
        if blocked is not None:
            raise UserError(f"{blocked}: demo refused; nothing was written")
        if in_use(path):
            raise UserError(
                f"{path}: open in another process (the console, a command or an agent); "
                "close it first, nothing was replaced"
            )
        for suffix in ("", "-wal", "-shm"):
            Path(str(path) + suffix).unlink(missing_ok=True)
    return build_and_tell(args, path)


def demo_in_database(args: argparse.Namespace, url: str) -> int:
    """The demo into a new or empty PostgreSQL database: nothing there is ever replaced."""
    if args.force:
        raise UserError(
            "--force replaces store files only; a demo goes into a new or empty database, "
            "nothing was written"
        )
    return build_and_tell(args, url)


def build_and_tell(args: argparse.Namespace, path: Path | str) -> int:
    """Build the demo at `path` (a file or a URL) with progress, and say what was made."""
    from memory_console.demo import build_demo

    now = common.now_of(args) if getattr(args, "now", None) else None
    try:
        with common.progress("creating the demo store", counts=False) as update:
            report = build_demo(
                path,
                count=args.count,
                seed=args.seed,
                now=now,
                progress=lambda stage, fraction: update(round(fraction * 100), 100),
            )
    except StoreError as error:
        raise UserError(str(error)) from error
    if args.json:
        common.print_json(
            {
                "db": str(report.path),
                "memories": report.memories,
                "events": report.events,
                "seconds": round(report.seconds, 2),
            }
        )
    else:
        print(
            f"created {report.path}: {report.memories:,} memories, {report.events:,} events "
            f"in {report.seconds:.1f} s"
        )
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    from memory_console.ingest.formats import import_file
    from memory_console.ingest.secrets_policy import SecretsPolicy

    now = common.now_of(args)
    path = common.db_path(args)
    made = new_places(path)
    store = common.open_store(args, create=True, actor="import", write="import")
    started = time.perf_counter()
    with contextlib.ExitStack() as stack:
        source = args.file
        if source == common.STDIO:
            source = stack.enter_context(standard_input_copy())
        try:
            with common.progress(f"importing {args.file}") as update:
                report = import_file(
                    store,
                    source,
                    file_format=args.format,
                    now=now,
                    keep_ids=not args.new_ids,
                    owner=args.owner,
                    policy=SecretsPolicy(args.allow_secrets, args.allow_health),
                    memory_type=args.memory_type,
                    skip_refused=args.skip_refused,
                    progress=update,
                )
        except BaseException as error:
            store.close()
            remove_new(path, made)
            if isinstance(error, StoreError):
                # A line of standard input is named as `-:LINE`, not by its temporary copy.
                raise UserError(str(error).replace(str(source), str(args.file))) from error
            raise
        store.close()
    shown = "standard input" if args.file == common.STDIO else report.path
    seconds = time.perf_counter() - started
    for refusal in report.refused:
        print(str(refusal).replace(str(source), str(args.file)), file=sys.stderr)
    for what, count in report.warnings.items():
        print(f"memory-console: warning: {count:,} {what}", file=sys.stderr)
    if args.json:
        common.print_json(
            {
                "file": str(args.file if args.file == common.STDIO else report.path),
                "format": report.format,
                "imported": report.imported,
                "first_id": min(report.ids),
                "last_id": max(report.ids),
                "skipped": report.skipped,
                "refused": len(report.refused),
                "assumed_owner": report.assumed_owner,
                "assumed": report.assumed,
                "warnings": report.warnings,
            }
        )
    else:
        print(
            f"imported {report.imported:,} memories from {shown} ({report.format}) "
            f"in {seconds:.2f} s"
        )
        for why, count in report.skipped.items():
            print(f"skipped {count:,} {why}")
        if report.refused:
            print(f"left out {len(report.refused):,} refused memories (listed on stderr)")
        if report.assumed_owner is not None:
            given = "given by --owner" if args.owner else "set one with --owner"
            print(
                f"owner {report.assumed_owner} assumed for {report.assumed:,} memories whose "
                f"file names none ({given})"
            )
    return 0


@contextlib.contextmanager
def standard_input_copy() -> Iterator[Path]:
    """Standard input copied to a private temporary file, removed afterwards: the whole input
    is checked before anything is written, and its format is detected, as for any file."""
    import shutil
    import tempfile

    with tempfile.TemporaryDirectory(prefix="memory-console-") as folder:
        copy = Path(folder) / "stdin"
        fd = os.open(copy, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as handle:
            shutil.copyfileobj(sys.stdin.buffer, handle, 1 << 20)
        yield copy


def new_places(path: Path | str) -> tuple[bool, list[Path]] | None:
    """Whether a file is at `path` and the folders a new store there would create (deepest
    first), or None when a store is already there (or it is a PostgreSQL database, whose
    import is one transaction): a failed import then rolls back."""
    if isinstance(path, str):
        return None
    if path.exists() and path.stat().st_size > 0:
        return None
    return path.exists(), [f for f in [path.parent, *path.parent.parents] if not f.exists()]


def remove_new(path: Path | str, made: tuple[bool, list[Path]] | None) -> None:
    """Undo the store a failed import created: its file (emptied again when an empty file was
    there before), -wal and -shm files and the folders made for it. It leaves nothing."""
    if made is None or isinstance(path, str):
        return
    existed, folders = made
    with contextlib.suppress(OSError):
        if existed:
            os.truncate(path, 0)
        else:
            path.unlink(missing_ok=True)
    for suffix in ("-wal", "-shm", "-journal"):
        with contextlib.suppress(OSError):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
    for folder in folders:
        with contextlib.suppress(OSError):
            folder.rmdir()  # only while empty: never anything that appeared meanwhile


def cmd_export(args: argparse.Namespace) -> int:
    from memory_console.ingest.formats.mem0 import export_mem0
    from memory_console.ingest.jsonl import export_jsonl

    if args.file is not None and args.out is not None:
        raise common.UsageError("export takes the file to write once: as FILE or as --out")
    out = args.out if args.file is None else args.file
    write = export_mem0 if args.format == "mem0" else export_jsonl
    options: dict[str, Any] = {
        "include_all": args.all,
        "history": args.history,
        "reveal": args.reveal,
    }
    store = common.open_store(args)
    try:
        with common.progress(f"exporting ({args.format})") as update:
            options["progress"] = update
            if out and out != common.STDIO:
                out_path = Path(out)
                count = write_file(out_path, lambda handle: write(store, handle, **options))
                common.note(f"exported {count:,} memories to {out_path} ({args.format})")
            else:
                write(store, sys.stdout, **options)
    finally:
        store.close()
    return 0


def write_file(path: Path, writer: Callable[[IO[str]], int]) -> int:
    """Write through a private (0600) temporary file beside `path`, renamed over it when
    complete: a full disk or an unwritable place leaves no half-written file, and an error
    is a one-line UserError. A device or pipe (/dev/stdout, a FIFO) is written directly."""
    if path.is_dir():
        raise UserError(f"{path}: is a directory")
    if path.exists() and not path.is_file():
        return write_directly(path, writer)
    if path.exists() and is_store_file(path):
        raise UserError(f"{path}: is a store file; choose another file to write")
    temp = path.with_name(path.name + ".partial")
    try:
        temp.unlink(missing_ok=True)
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            count = writer(handle)
        temp.replace(path)
    except OSError as error:
        with contextlib.suppress(OSError):
            temp.unlink(missing_ok=True)
        raise UserError(f"{path}: cannot write: {write_failure(error)}") from error
    return count


def write_directly(path: Path, writer: Callable[[IO[str]], int]) -> int:
    try:
        with path.open("w", encoding="utf-8") as handle:
            return writer(handle)
    except OSError as error:
        raise UserError(f"{path}: cannot write: {write_failure(error)}") from error


def write_failure(error: OSError) -> str:
    reason = "the disk is full" if error.errno == errno.ENOSPC else error.strerror or error
    return f"{reason}; nothing was written"


def is_store_file(path: Path) -> bool:
    """Whether the file is an SQLite database (or its write-ahead log or shared memory).

    A store this process has open is recognised by identity, never opened: closing a
    descriptor of it would drop the process's locks on it."""
    from memory_console.store import held

    if held.holds(path) or path.name.endswith(("-wal", "-shm")):
        return True
    try:
        with path.open("rb") as handle:
            return handle.read(16) == SQLITE_MAGIC
    except OSError:
        return False


def cmd_list(args: argparse.Namespace) -> int:
    from memory_console.commands import render  # numpy, via forecasts and policies

    common.check_range("--limit", args.limit, 1)
    from memory_console.maintenance.forecast import confidences_now

    store = common.open_store(args)
    try:
        page = store.page(
            common.filter_of(args), sort=args.sort, descending=args.desc, limit=args.limit
        )
        params = store.settings().params()
    finally:
        store.close()
    nows = confidences_now(page.rows, common.now_of(args), params).tolist()
    if args.json:
        common.print_json(
            [
                render.memory_json(r, reveal=args.reveal, confidence_now=now)
                for r, now in zip(page.rows, nows, strict=True)
            ]
        )
    else:
        render.print_memory_table(
            page.rows, more=page.next_cursor is not None, reveal=args.reveal, now_values=nows
        )
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    from memory_console.commands import render  # numpy, via forecasts and policies
    from memory_console.maintenance.forecast import confidence_now

    store = common.open_store(args)
    try:
        record = store.get(args.id) if 1 <= args.id <= common.MAX_ID else None
        if record is None:
            raise UserError(f"no memory with id {args.id}")
        history = store.history(args.id)
        supersedes = store.superseded_by_each([args.id]).get(args.id, [])
        accesses = store.accesses(args.id) if args.accesses else None
        params = store.settings().params()
    finally:
        store.close()
    now = common.now_of(args)
    if args.json:
        data = render.memory_json(
            record,
            reveal=args.reveal,
            supersedes=supersedes,
            confidence_now=confidence_now(record, now, params),
        )
        data["history"] = [render.event_json(event, reveal=args.reveal) for event in history]
        data["forecast"] = render.forecast_json(record, now, params)
        if accesses is not None:
            data["accesses"] = [render.event_json(e, reveal=args.reveal) for e in accesses]
        common.print_json(data)
    else:
        render.print_memory(
            record,
            history,
            now,
            accesses=accesses,
            reveal=args.reveal,
            params=params,
            supersedes=supersedes,
        )
    return 0


EDIT_FIELDS = ("title", "content", "topic", "memory_type")


def cmd_edit(args: argparse.Namespace) -> int:
    from memory_console.commands import render  # numpy, via forecasts and policies

    fields = {name: getattr(args, name) for name in EDIT_FIELDS if getattr(args, name) is not None}
    if not fields:
        raise UserError("nothing to change: give --title, --content, --topic or --type")
    now = common.now_of(args)
    store = common.open_store(args, write="edit")
    try:
        if not 1 <= args.id <= common.MAX_ID or store.get(args.id) is None:
            raise UserError(f"no memory with id {args.id}")
        result = store.edit(args.id, fields, now=now)
        record = store.require(args.id)
    except StoreError as error:
        raise UserError(str(error)) from error
    finally:
        store.close()
    changed = bool(result.changed)
    if args.json:
        data = render.memory_json(record, reveal=False)
        common.print_json({"changed": changed, "memory": data})
    elif changed:
        named = ", ".join(f"{name} {getattr(record, name)!r}" for name in fields)
        print(f"edited memory {args.id}: {named}")
    else:
        print(f"memory {args.id} already so; nothing changed")
    return 0


def cmd_action(args: argparse.Namespace) -> int:
    ids = common.parse_ids(args.ids)
    now = common.now_of(args)
    store = common.open_store(args, write=args.action)
    left_out: list[int] = []
    try:
        if args.action in ("archive", "forget"):  # they take memories out of recall
            ids, left_out = leave_out_protected(store, ids, args, args.action)
        if args.action == "forget":
            result = store.forget(ids, args.reason, now=now)
        else:
            result = getattr(store, args.action)(ids, now=now)
    except StoreError as error:
        raise UserError(str(error)) from error
    finally:
        store.close()
    if args.json:
        common.print_json(
            {
                "action": args.action,
                "changed": result.changed,
                "unchanged": result.unchanged,
                "missing": result.missing,
            }
            | ({"left_out_protected": left_out} if args.action in ("archive", "forget") else {})
        )
    else:
        past = {
            "protect": "protected",
            "unprotect": "unprotected",
            "archive": "archived",
            "restore": "restored",
            "forget": "forgot",
        }[args.action]
        print(
            f"{past} {len(result.changed)} memories"
            + (f"; {len(result.unchanged)} already so" if result.unchanged else "")
        )
        if left_out:
            print(left_out_line(left_out, args.action))
    return report_missing(result.missing, failed=not result.changed and not result.unchanged)


def report_missing(missing: list[int], *, failed: bool) -> int:
    """Name the ids the store does not hold on stderr (an error when nothing else was done);
    returns the exit code."""
    if not missing:
        return 0
    head = "memory-console: error: " if failed else "memory-console: "
    print(f"{head}no such memories: {', '.join(map(str, missing))}", file=sys.stderr)
    return 1 if failed else 0


def cmd_stats(args: argparse.Namespace) -> int:
    from memory_console.commands import render  # numpy, via forecasts and policies
    from memory_console.maintenance.health import stats_as_of_now

    store = common.open_store(args)
    try:
        figures = stats_as_of_now(store, common.now_of(args))
    finally:
        store.close()
    if args.json:
        common.print_json(figures)
    else:
        render.print_stats(figures)
    return 0
