"""The `memory-console` entry point: parses, calls one Store or pass function, prints.

Exit codes (docs/ARCHITECTURE.md, "CLI contract"): 0 done (also when the reader of the output
went away, as `| head` does), 1 user error with a one-line message on stderr, 2 usage.
Heavy modules (SQLModel, Textual, onnxruntime) are imported only by the commands that need them.
"""

from __future__ import annotations

import argparse
import importlib
import io
import logging
import os
import sys
from collections.abc import Sequence
from typing import NoReturn, cast

from memory_console import __version__
from memory_console.commands import common
from memory_console.literal import visible
from memory_console.settings import SettingsError
from memory_console.store.errors import StoreError

# Every command: its name, the module under memory_console.commands that builds its options
# and runs it, and the line the command list shows; in the order `--help` lists them. A command
# line imports the module of the command it runs, and no other.
COMMANDS: dict[str, tuple[str, str]] = {
    "demo": ("store_commands", "create a demo store with realistic memories"),
    "import": ("store_commands", "add memories from a file, all or nothing"),
    "export": ("store_commands", "write memories as JSONL"),
    "list": ("store_commands", "list memories"),
    "show": ("store_commands", "one memory, its history and forecast"),
    "edit": ("store_commands", "change one memory's title, content, topic or type"),
    "protect": ("store_commands", "protect memories from every pass"),
    "unprotect": ("store_commands", "remove the protection"),
    "archive": ("store_commands", "archive memories (restorable)"),
    "restore": ("store_commands", "bring archived memories back"),
    "stats": ("store_commands", "confidence tiers, staleness, ages, counts"),
    "copy": (
        "copy_commands",
        "copy a whole store into a new one (SQLite file or PostgreSQL), verified",
    ),
    "forget": ("erase_commands", "archive memories with a reason (restorable; purge deletes)"),
    "purge": ("erase_commands", "delete memories for good, after exporting them"),
    "erase-report": (
        "erase_commands",
        "what the store holds about some memories, and the erasures made",
    ),
    "search": ("search_commands", "find memories by meaning and by keyword"),
    "reindex": ("search_commands", "(re)build the embeddings and the vector index"),
    "decay": ("maintenance_commands", "preview or apply confidence decay (with cleanup flags)"),
    "maintain": (
        "maintenance_commands",
        "preview or apply several maintenance passes as one plan",
    ),
    "plan-edit": (
        "maintenance_commands",
        "edit a saved plan: leave memories out, reject or split merge groups",
    ),
    "runs": ("maintenance_commands", "list applied maintenance runs"),
    "undo": ("maintenance_commands", "take back an applied run"),
    "check": (
        "check_commands",
        "check the store for damage: integrity, text index, dangling rows",
    ),
    "doctor": (
        "doctor_commands",
        "show the CPU, the libraries and which kernels were chosen for them, and why",
    ),
    "config": (
        "config_commands",
        "show or change the store's settings (policy, intervals, TTLs, thresholds)",
    ),
    "completion": (
        "completion_commands",
        "print the shell completion script for bash, zsh or fish",
    ),
    "mcp": (
        "mcp_commands",
        "serve the store to agents over the Model Context Protocol (stdio or HTTP)",
    ),
}
DESCRIPTION = (
    "Inspect and administer the long-term memory of AI agents. Without a command, opens the "
    "console. `memory-console COMMAND --help` describes each command, with examples."
)


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The whole parser (argv None: every command with its options, as completion needs), or
    the one for a command line: every command is named (with its line of help), and only the
    command the line runs is built, from its module, so `--help` and every command import
    only what they use."""
    parser = common.CommandParser(
        prog="memory-console",
        description=DESCRIPTION,
        epilog=common.examples(
            "--demo", "list --owner alice --limit 5", "completion bash > ~/.memory-console.bash"
        ),
    )
    add_program_options(parser)
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (_, summary) in COMMANDS.items():
        subparsers.add_parser(name, help=summary, add_help=False)
    wanted = set(COMMANDS) if argv is None else {invoked_command(argv)} & set(COMMANDS)
    for module_name in dict.fromkeys(COMMANDS[name][0] for name in COMMANDS if name in wanted):
        # The module builds its commands' parsers as subcommands of a parser of the same
        # name; each one wanted takes the place of its name in the list.
        built = common.CommandParser(prog=parser.prog).add_subparsers()
        module = importlib.import_module(f"memory_console.commands.{module_name}")
        module.register(built)
        for name, command_parser in built.choices.items():
            if COMMANDS[name][0] != module_name:
                raise AssertionError(f"{module_name} builds {name}, listed under another")
            if name in wanted:
                subparsers.choices[name] = command_parser
    return parser


def add_program_options(parser: argparse.ArgumentParser, *, version: bool = True) -> None:
    """The options given before a command (with version=False, --version is only noted)."""
    if version:
        parser.add_argument("--version", action="version", version=f"memory-console {__version__}")
    else:
        parser.add_argument("--version", action="store_true")
    parser.add_argument(
        "--db", help="the store file (default: $MEMORY_CONSOLE_DB, then the user's data directory)"
    )
    parser.add_argument("--read-only", action="store_true", help="open the store read-only")
    parser.add_argument(
        "--demo",
        action="store_true",
        help="create a demo store first if the store does not exist yet",
    )
    parser.add_argument("--now", help="evaluate at this ISO 8601 time instead of the clock")
    common.add_verbosity(parser, default=logging.INFO)


class NoCommand(Exception):
    """The command line does not parse far enough to name a command."""


class NamesOnly(argparse.ArgumentParser):
    """A parser that only finds which command a line runs: it neither prints nor exits."""

    def error(self, message: str) -> NoReturn:
        raise NoCommand(message)

    def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
        raise NoCommand(message or "")


def invoked_command(argv: Sequence[str]) -> str | None:
    """The command a command line runs, read as the whole parser reads it (the options before
    it and their values included), or None: no command, or a line that does not parse that
    far (the whole parser then says why)."""
    names = NamesOnly(prog="memory-console", add_help=False)
    add_program_options(names, version=False)
    commands = names.add_subparsers(dest="command", parser_class=NamesOnly)
    for name in COMMANDS:
        commands.add_parser(name, add_help=False)
    try:
        known, _ = names.parse_known_args(list(argv))
    except NoCommand:
        return None
    return cast("str | None", known.command)


def tolerant_output() -> None:
    """Paths and texts that are not valid UTF-8 print escaped instead of failing the command."""
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper) and stream.errors == "strict":
            stream.reconfigure(errors="backslashreplace")


def one_line(text: object) -> str:
    """An error message as one line: control characters and line separators (from a file
    name or a stored text, say) escaped."""
    return visible(str(text), layout=False)


def fail(message: object) -> int:
    print(f"memory-console: error: {one_line(message)}", file=sys.stderr)
    return 1


def output_closed() -> int:
    """The reader of stdout went away (`| head`): end quietly with status 0, as the Python
    docs' note on SIGPIPE advises: stdout points at devnull so the flush at exit cannot fail."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, io.UnsupportedOperation):
        pass  # not a real file descriptor (a test's capture): nothing is flushed at exit
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    tolerant_output()
    words = list(sys.argv[1:] if argv is None else argv)
    if words == ["--version"]:
        print(f"memory-console {__version__}")
        return 0
    parser = build_parser(words)
    try:
        args = parser.parse_args(argv)
    except BrokenPipeError:  # --help into a closed pipe
        return output_closed()
    common.configure_logging(args.verbosity)
    try:
        common.describe_setup(args)
        if args.command is None:
            return common.run_console(args)
        code = int(args.handler(args) or 0)
        sys.stdout.flush()  # here, where a closed pipe is caught, not at exit
        return code
    except common.UsageError as error:
        fail(error)
        return 2
    except (common.UserError, StoreError, SettingsError) as error:
        return fail(error)
    except KeyboardInterrupt:
        print("memory-console: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return output_closed()
    except OSError as error:
        where = f"{error.filename}: " if error.filename else ""
        return fail(f"{where}{error.strerror or error}")


if __name__ == "__main__":
    sys.exit(main())
