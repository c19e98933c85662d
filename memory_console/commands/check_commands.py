"""The `check` subcommand: a store's full check, one line per check, exit 1 on any problem."""

from __future__ import annotations

import argparse
import sys

from memory_console.commands import common
from memory_console.store.check import CheckReport, CheckResult, check_store
from memory_console.store.postgres import shown_url


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    check = subparsers.add_parser(
        "check",
        description="Run SQLite's integrity check, the FTS5 text index check (writable "
        "stores), and look for events and vectors whose memory is gone. On PostgreSQL: the "
        "schema version, the tables, columns and indexes the schema declares (the tsvector's "
        "GIN and the vectors' HNSW among them), amcheck's index check when the extension is "
        "installed, the same dangling rows, and pgvector's column against the vectors' bytes. "
        "Writes nothing and repairs nothing. Exit 0 when every check passes, 1 on any problem.",
        epilog=common.examples(
            "check", "check --db memories.db --json", "check --db postgresql://me@host/memories"
        ),
    )
    common.add_common(check)
    check.set_defaults(handler=cmd_check)


def cmd_check(args: argparse.Namespace) -> int:

    try:
        store = common.open_store(args)
    except common.UserError as error:  # refused at open: that is the check's finding
        refused = CheckResult("open", "the store opens as a memory-console store")
        refused.add(str(error))
        report = CheckReport(shown_url(common.db_path(args)), [refused])
    else:
        try:
            report = check_store(store)
        finally:
            store.close()
    if args.json:
        common.print_json(report.as_json())
    else:
        for check in report.checks:
            state = "skipped" if check.skipped else "ok" if check.ok else "PROBLEM"
            print(f"{state:<8} {check.name:<11} {check.description}")
            if check.skipped:
                print(f"         {check.skipped}")
            for problem in check.problems:
                print(f"         {problem}")
            if check.count > len(check.problems):
                print(f"         ... {check.count - len(check.problems):,} more")
    if report.ok:
        return 0
    failed = [check.name for check in report.checks if not check.ok]
    print(
        f"memory-console: error: {report.db}: {len(failed)} of {len(report.checks)} checks "
        f"found problems ({', '.join(failed)}); nothing was changed",
        file=sys.stderr,
    )
    return 1
