"""What every subcommand shares: the parser and its help, common options, logging and
progress, opening the store, time, JSON and tables."""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memory_console.files import not_regular
from memory_console.literal import json_text, literal
from memory_console.settings import (
    ENV_PREFIX,
    SETTING_KINDS,
    Settings,
    load_settings,
    resolve_db,
    settings_file,
)
from memory_console.store.db import SCHEMA_VERSION
from memory_console.store.errors import StoreDamaged, StoreError
from memory_console.store.vocab import DECAY_POLICIES, MEMORY_TYPES, STATUSES, TIERS
from memory_console.timeutil import now_ts, parse_moment

if TYPE_CHECKING:
    from rich.console import Console
    from rich.style import Style
    from rich.text import Text

    from memory_console.store import MemoryFilter, Store


log = logging.getLogger("memory_console")

READ_ONLY_SOURCES = "--read-only, or read_only in the settings"
STDIO = "-"  # a FILE of `-` is standard input (import) or standard output (export --out)
EXAMPLES_HEADING = "examples:"
MAX_ID = 2**62  # larger whole numbers cannot be memory or run ids (SQLite integers are 64-bit)


class UserError(Exception):
    """A mistake the person can fix; printed as one line, exit code 1."""


class UsageError(UserError):
    """Arguments that do not go together; printed as one line, exit code 2 (usage)."""


def text(value: str) -> str:
    """An argparse type for words the store compares with its own (owner, topic, query,
    reason, time): bytes that are not UTF-8 (surrogate escapes in argv) are a usage error."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as error:
        raise argparse.ArgumentTypeError(f"not valid UTF-8: {value!r}") from error
    return value


def check_range(option: str, value: int, low: int, high: int = MAX_ID) -> int:
    """A whole-number option within [low, high], else a one-line user error."""
    if value < low:
        raise UserError(f"{option} must be at least {low}")
    if value > high:
        raise UserError(f"{option} must be at most {high:,}")
    return value


# -- the parser and its help ---------------------------------------------------------------


class HelpFormatter(argparse.HelpFormatter):
    """argparse's formatter, except that the examples ending a command's help keep their lines
    (descriptions are still wrapped to the terminal)."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if text.startswith(EXAMPLES_HEADING):
            return "".join(indent + line for line in text.splitlines(keepends=True))
        return super()._fill_text(text, width, indent)


class CommandParser(argparse.ArgumentParser):
    """The parser of the program and of every subcommand (add_subparsers makes its own kind):
    help keeps the examples' lines."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)


def examples(*lines: str) -> str:
    """A command's help epilog: `memory-console LINE` for each line, under "examples:"."""
    return EXAMPLES_HEADING + "\n" + "\n".join(f"  memory-console {line}" for line in lines)


def add_verbosity(parser: argparse.ArgumentParser, *, default: Any = argparse.SUPPRESS) -> None:
    """-v/--verbose and -q/--quiet (the last one given wins): the top-level default is INFO;
    a subcommand's SUPPRESS keeps the value given before the command."""
    parser.add_argument(
        "-v",
        "--verbose",
        dest="verbosity",
        action="store_const",
        const=logging.DEBUG,
        default=default,
        help="also say which store, settings file, model and search kernel are used (stderr)",
    )
    parser.add_argument(
        "-q",
        "--quiet",
        dest="verbosity",
        action="store_const",
        const=logging.WARNING,
        default=argparse.SUPPRESS,
        help="no progress and no notes on stderr; warnings and errors only",
    )


def add_common(parser: argparse.ArgumentParser, *, json_output: bool = True) -> None:
    """--db, --now, --read-only, -v/-q (and --json) on a subcommand; SUPPRESS keeps the
    top-level value."""
    parser.add_argument("--db", default=argparse.SUPPRESS, help="the store file")
    parser.add_argument(
        "--now",
        type=text,
        default=argparse.SUPPRESS,
        help="evaluate at this ISO 8601 time instead of the clock",
    )
    parser.add_argument(
        "--read-only",
        action="store_true",
        default=argparse.SUPPRESS,
        help="open the store read-only",
    )
    add_verbosity(parser)
    if json_output:
        parser.add_argument("--json", action="store_true", help="machine-readable output")


def add_ids(parser: argparse.ArgumentParser, *, required: bool = True) -> None:
    """The memory ids a command acts on (spaces or commas between them)."""
    parser.add_argument(
        "ids",
        nargs="+" if required else "*",
        metavar="ID",
        help="memory ids, separated by spaces or commas" + ("" if required else " (or filters)"),
    )


def add_id(parser: argparse.ArgumentParser) -> None:
    """The one memory a command is about."""
    parser.add_argument("id", type=int, metavar="ID", help="the memory's id")


def add_limit(parser: argparse.ArgumentParser, default: int, what: str) -> None:
    """--limit N: at most this many of `what` (checked with check_range by the command)."""
    parser.add_argument(
        "--limit", type=int, default=default, help=f"at most this many {what} (default {default})"
    )


def add_reveal(parser: argparse.ArgumentParser, verb: str = "show") -> None:
    """--reveal: credentials unmasked (masked by default everywhere)."""
    parser.add_argument("--reveal", action="store_true", help=f"{verb} secrets unmasked")


def add_filter(parser: argparse.ArgumentParser, flag: str, **changes: Any) -> None:
    """One of FILTER_OPTIONS on a command that does not take them all (search), with
    `changes` to its keywords (a default, another help)."""
    keywords = dict(FILTER_OPTIONS_BY_FLAG[flag], **changes)
    parser.add_argument(flag, **keywords)


# -- logging and progress ------------------------------------------------------------------


class StderrHandler(logging.Handler):
    """Writes to the sys.stderr of the moment (a test's capture, a redirect), one line each."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            sys.stderr.write(self.format(record) + "\n")
        except Exception:
            self.handleError(record)


def configure_logging(level: int) -> None:
    """The program's notes and details on stderr as `memory-console: ...`: INFO (notes) by
    default, DEBUG at --verbose, WARNING at --quiet. The root logger is left alone."""
    for handler in list(log.handlers):
        log.removeHandler(handler)
    handler = StderrHandler()
    handler.setFormatter(logging.Formatter("memory-console: %(message)s"))
    log.addHandler(handler)
    log.setLevel(level)
    log.propagate = False


def note(message: str) -> None:
    """A note on stderr (silenced by --quiet); stdout stays the command's output."""
    log.info("%s", message)


Update = Callable[[int, int | None], None]


PLAIN_STEPS = 4  # where stderr is no terminal, a long job says each quarter it passes...
PLAIN_DELAY = 2.0  # ...once it has run this long (seconds): a quick one says nothing, as git


@contextlib.contextmanager
def progress(description: str, *, counts: bool = True) -> Iterator[Update]:
    """Progress on stderr while the block runs, and none at --quiet: at a terminal a transient
    bar (total None: a spinner); elsewhere (a log, a pipe) a few plain lines, one per quarter
    of a known total passed after PLAIN_DELAY, never one per step. Yields update(done, total);
    counts=False: a share (done of 100), said as a percentage only."""
    if not log.isEnabledFor(logging.INFO):
        yield lambda done, total: None
        return
    if not sys.stderr.isatty():
        yield plain_progress(description, counts)
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        SpinnerColumn,
        TextColumn,
        TimeElapsedColumn,
    )

    columns = (
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=Console(file=sys.stderr), transient=True) as bar:
        task = bar.add_task(description, total=None)

        def update(done: int, total: int | None) -> None:
            bar.update(task, completed=done, total=total)

        yield update


def plain_progress(description: str, counts: bool = True) -> Update:
    """progress() where stderr is no terminal: `memory-console: DESCRIPTION: DONE of TOTAL
    (P%)` as each quarter of a known total is passed, from PLAIN_DELAY seconds on."""
    started = time.monotonic()
    said = 0  # the quarters already said

    def update(done: int, total: int | None) -> None:
        nonlocal said
        if not total or done >= total:
            return
        quarter = done * PLAIN_STEPS // total
        if quarter <= said or time.monotonic() - started < PLAIN_DELAY:
            return
        said = quarter
        share = f"{done * 100 // total}%"
        note(f"{description}: " + (f"{done:,} of {total:,} ({share})" if counts else share))

    return update


def describe_setup(args: argparse.Namespace) -> None:
    """At --verbose: the settings file and the MEMORY_CONSOLE_* variables in force."""
    if not log.isEnabledFor(logging.DEBUG):
        return
    path = settings_file()
    log.debug("settings file: %s%s", path, "" if path.is_file() else " (none; defaults)")
    for name in SETTING_KINDS:
        variable = ENV_PREFIX + name.upper()
        if variable in os.environ:
            log.debug("%s is set: it overrides the file's %s", variable, name)


# The options that select memories, shared by list, forget, purge and erase-report so that each
# selects exactly what `list` lists: (flags, argparse keywords).
FILTER_OPTIONS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("--owner", {"type": text, "help": "only this owner's memories"}),
    (
        "--namespace",
        {
            "type": text,
            "help": "only memories in this namespace (a LangGraph item's, labels joined by "
            "'.'; '' for those in none)",
        },
    ),
    ("--topic", {"type": text, "help": "only memories of this topic"}),
    ("--status", {"choices": STATUSES, "help": "only memories with this status"}),
    ("--type", {"dest": "memory_type", "choices": MEMORY_TYPES, "help": "only this type"}),
    ("--tier", {"choices": TIERS, "help": "only memories in this tier"}),
    ("--decay-policy", {"choices": DECAY_POLICIES, "help": "only memories under this policy"}),
    (
        "--protected",
        {
            "action": argparse.BooleanOptionalAction,
            "default": None,
            "help": "only protected memories (--no-protected: only unprotected ones)",
        },
    ),
    ("--min-confidence", {"type": float, "help": "only memories at least this sure (0 to 1)"}),
    ("--max-confidence", {"type": float, "help": "only memories at most this sure (0 to 1)"}),
    ("--text", {"type": text, "help": "only memories containing all these words"}),
    (
        "--actor",
        {
            "type": text,
            "help": "only memories this actor touched (an event of theirs: mcp:CLIENT@OWNER, "
            "api, tui, cli)",
        },
    ),
)
FILTER_OPTIONS_BY_FLAG = dict(FILTER_OPTIONS)
FILTER_DESTS = {
    flag: keywords.get("dest", flag.removeprefix("--").replace("-", "_"))
    for flag, keywords in FILTER_OPTIONS
}


def add_filter_options(parser: argparse.ArgumentParser) -> None:
    """The options that select memories, as `list` has them."""
    group = parser.add_argument_group("selecting memories (as list selects them)")
    for flag, keywords in FILTER_OPTIONS:
        group.add_argument(flag, **keywords)


def filters_given(args: argparse.Namespace) -> list[str]:
    """The filter options given, by name (`owner`, `topic`), never their values: what an
    erasure's audit row may keep about how its memories were chosen."""
    return [
        flag.removeprefix("--")
        for flag, dest in FILTER_DESTS.items()
        if getattr(args, dest, None) is not None
    ]


def filter_of(args: argparse.Namespace) -> MemoryFilter:
    """The MemoryFilter of the filter options."""
    from memory_console.store import MemoryFilter

    for name in ("min_confidence", "max_confidence"):
        value = getattr(args, name)
        if value is not None and not 0 <= value <= 1:
            raise UserError(f"--{name.replace('_', '-')} must be between 0 and 1")
    return MemoryFilter(
        owner=args.owner,
        namespace=args.namespace,
        topic=args.topic,
        tier=args.tier,
        memory_type=args.memory_type,
        status=args.status,
        decay_policy=args.decay_policy,
        is_protected=args.protected,
        min_confidence=args.min_confidence,
        max_confidence=args.max_confidence,
        text=args.text,
        actor=args.actor,
    )


def confirmed(question: str, *, yes: bool, refusal: str) -> bool:
    """True when --yes was given or the person answers y at the terminal. Without --yes and
    a terminal to ask on, `refusal` is a user error: a script must say --yes to act."""
    if yes:
        return True
    if not sys.stdin.isatty():
        raise UserError(refusal)
    sys.stderr.write(f"{question} [y/N] ")
    sys.stderr.flush()
    answer = sys.stdin.readline()
    if not answer.endswith("\n"):
        sys.stderr.write("\n")  # end of input: the next line starts clean
    return answer.strip().lower() in ("y", "yes")


def settings_of(args: argparse.Namespace) -> Settings:
    try:
        settings = load_settings()
    except ValueError as error:
        raise UserError(str(error)) from error
    return settings.with_overrides(read_only=getattr(args, "read_only", None) or None)


def db_path(args: argparse.Namespace) -> Path | str:
    """The store --db (or the settings) names: a file's path or a PostgreSQL URL."""
    return resolve_db(getattr(args, "db", None), settings_of(args))


def now_of(args: argparse.Namespace) -> float:
    """--now as unix seconds (the clock without it); a time outside the store's range is a
    user error, so no age, forecast or date computed from it can overflow or go negative."""
    text = getattr(args, "now", None)
    if not text:
        return now_ts()
    try:
        return parse_moment(text)
    except ValueError as error:
        raise UserError(f"--now: {error}") from error


def not_writable(path: Path) -> str | None:
    """Why this process cannot write the store at `path` (a read-only file or -wal/-shm file,
    or a directory where SQLite cannot create the store's -wal and -shm files), or None."""
    if path.exists() and not os.access(path, os.W_OK):
        return f"{path}: read-only file (no write permission)"
    sides = [Path(f"{path}{suffix}") for suffix in ("-wal", "-shm")]
    for side in sides:
        if side.exists() and not os.access(side, os.W_OK):
            return f"{path}: its {side.name} file is read-only"
    directory = path.parent
    missing = not all(side.exists() for side in sides)
    if missing and directory.is_dir() and not os.access(directory, os.W_OK | os.X_OK):
        return f"{path}: its directory {directory} is read-only"
    return None


def open_store(
    args: argparse.Namespace,
    *,
    create: bool = False,
    actor: str = "cli",
    write: str | None = None,
) -> Store:
    """Open the store of --db (or the settings). `write` names what the command will write:
    in read-only mode, or when the file or its directory cannot be written, it is refused
    before anything is opened. A read that cannot write opens the store read-only."""
    from memory_console.store import Store

    settings = settings_of(args)
    path = resolve_db(getattr(args, "db", None), settings)
    read_only = settings.read_only
    if write is not None and read_only:
        raise UserError(f"read-only mode: {write} refused ({READ_ONLY_SOURCES})")
    if isinstance(path, str):  # a PostgreSQL URL: the server grants or refuses writes
        try:
            return Store(path, read_only=read_only, create=create, actor=actor)
        except StoreError as error:
            raise UserError(str(error)) from error
    blocked = not_writable(path) if path.exists() and path.stat().st_size else None
    if blocked is not None:
        if write is not None:
            raise UserError(f"{blocked}: {write} refused; nothing was written")
        read_only = True
    try:
        store = Store(path, read_only=read_only, create=create, actor=actor)
    except StoreError as error:
        raise UserError(str(error)) from error
    log.debug("store: %s (%s)", path.resolve(), "read-only" if store.read_only else "writable")
    if store.migration_backup is not None:
        note(
            f"migrated {path} to schema {SCHEMA_VERSION}; the file as it was "
            f"is kept at {store.migration_backup}"
        )
    return store


def print_json(value: Any) -> None:
    sys.stdout.write(json_text(value, indent=2, default=str) + "\n")


def console() -> Console:
    """The console the commands print with: every string it is given, a table cell or a line,
    is shown literally (stored text may hold markup or escape sequences); styles come as Text."""
    from rich.console import Console

    class LiteralConsole(Console):
        def on_broken_pipe(self) -> None:
            # rich exits with status 1 here; the entry point ends quietly instead (see main).
            raise BrokenPipeError

        def render_str(self, text: str, *, style: str | Style = "", **options: Any) -> Text:
            rendered = literal(text, style)
            rendered.justify = options.get("justify")
            rendered.overflow = options.get("overflow")
            return rendered

    # Piped output gets a wide table rather than rich's 80-column default.
    width = None if sys.stdout.isatty() else 160
    return LiteralConsole(highlight=False, soft_wrap=False, width=width, markup=False, emoji=False)


def parse_ids(values: list[str]) -> list[int]:
    ids = []
    for value in values:
        for part in value.split(","):
            if not part.strip():
                continue
            try:
                ident = int(part)
            except ValueError as error:
                raise UserError(f"not a memory id: {part!r}") from error
            if not 1 <= ident <= MAX_ID:
                raise UserError(f"not a memory id: {part!r}")
            ids.append(ident)
    if not ids:
        raise UserError("no memory ids given")
    return ids


def offer_demo(path: Path) -> bool:
    """Ask at a terminal whether to create a demo store where none exists yet."""
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        return False
    try:
        answer = input(
            f"No store at {path} yet. Create a demo store there "
            "(2,000 memories over 12 months)? [Y/n] "
        )
    except EOFError:
        return False
    return answer.strip().lower() in ("", "y", "yes")


def run_console(args: argparse.Namespace) -> int:
    """Open the Textual console on the store (creating a demo store first with --demo)."""
    settings = settings_of(args)
    path = resolve_db(getattr(args, "db", None), settings)
    if isinstance(path, str):
        store = open_database(args, path)
    else:
        store = open_file(args, path)
    from memory_console.tui.app import make_app

    app = make_app(
        settings.with_overrides(db=path), store, now=getattr(args, "now", None) and now_of(args)
    )
    try:
        app.run()
    finally:
        store.close()
    if not app.return_code:
        return 0
    # Textual sets return_code 1 and prints the traceback when an exception escaped the app.
    error = getattr(app, "_exception", None)
    if isinstance(error, StoreDamaged):
        raise UserError(f"the console stopped: {error}")
    raise UserError(
        "the console stopped on an unexpected error (shown above); "
        "changes it had committed are kept"
    )


def open_database(args: argparse.Namespace, url: str) -> Store:
    """The console's store in a PostgreSQL database. The console makes no database and
    fills none: `demo --db URL` builds a demo store there (with its progress and --force),
    so --demo only opens a store that is already there, as it does with a file."""
    from memory_console.store.postgres import NoStoreHere, shown_url

    try:
        return open_store(args, actor="tui")
    except UserError as error:
        if not isinstance(error.__cause__, NoStoreHere):
            raise
        where = shown_url(url)
        raise UserError(
            f"{where}: no store in this database yet; create a demo store with: "
            f"memory-console demo --db {where} (or import one: memory-console import FILE "
            f"--db {where})"
        ) from error


def open_file(args: argparse.Namespace, path: Path) -> Store:
    """The console's store in a file, made a demo store first when there is none (asked at
    a terminal, or with --demo)."""
    odd = not_regular(path)
    if odd is not None:
        raise UserError(f"{odd}; a store is a regular file")
    if not path.exists() or path.stat().st_size == 0:
        if not getattr(args, "demo", False) and not offer_demo(path):
            raise UserError(
                f"{path}: no store yet; create a demo store with: memory-console --demo"
                f" (or memory-console demo --db {path})"
            )
        from memory_console.demo import build_demo

        note(f"creating a demo store at {path} ...")
        build_demo(path, count=2000, seed=7)
    return open_store(args, actor="tui")
