"""The `memory-console` entry point: parses, calls one Store or pass function, prints.

Exit codes (docs/ARCHITECTURE.md, "CLI contract"): 0 done (also when the reader of the output
went away, as `| head` does), 1 user error with a one-line message on stderr, 2 usage.
Heavy modules (SQLModel, Textual, onnxruntime) are imported only by the commands that need them.
"""

from __future__ import annotations

import argparse
import io
import logging
import os
import sys
from collections.abc import Sequence

from memory_console import __version__
from memory_console.commands import common
from memory_console.literal import visible
from memory_console.settings import SettingsError
from memory_console.store.errors import StoreError


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The whole parser; given the command line it will parse, the maintenance commands are
    only named unless the line holds one of them: their options list every pass and its
    parameters, which imports numpy and the passes (`--help` and most commands need none)."""
    # Imported here so that `--version` answers without loading any command module.
    from memory_console.commands import (
        check_commands,
        completion_commands,
        config_commands,
        copy_commands,
        doctor_commands,
        erase_commands,
        maintenance_commands,
        mcp_commands,
        search_commands,
        store_commands,
    )

    parser = common.CommandParser(
        prog="memory-console",
        description="Inspect and administer the long-term memory of AI agents. "
        "Without a command, opens the console. `memory-console COMMAND --help` describes "
        "each command, with examples.",
        epilog=common.examples(
            "--demo", "list --owner alice --limit 5", "completion bash > ~/.memory-console.bash"
        ),
    )
    parser.add_argument("--version", action="version", version=f"memory-console {__version__}")
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
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in (
        store_commands,
        copy_commands,
        erase_commands,
        search_commands,
        maintenance_commands,
        check_commands,
        doctor_commands,
        config_commands,
        completion_commands,
        mcp_commands,
    ):
        if module is maintenance_commands and not maintenance_commands.wanted(argv):
            maintenance_commands.name_commands(subparsers)
        else:
            module.register(subparsers)
    return parser


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
