"""The copy subcommand: a whole store into a new one, between or within the two backends."""

from __future__ import annotations

import argparse
import copy as shallow
from pathlib import Path

from memory_console.commands import common
from memory_console.commands.common import UserError
from memory_console.store import copy, postgres
from memory_console.store.errors import StoreError


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "copy",
        description="Copy every memory, event, run, vector, setting, erasure record and store "
        "fact of SRC into DST, ids kept, in one transaction: DST must be new or empty. Both "
        "sides are read back before DST commits; the copy is kept only when the rows per table "
        "and their hash agree. SRC and DST are each a store file or a postgresql:// URL.",
        epilog=common.examples(
            "copy memories.db postgresql://agent@db.example:5432/memories",
            "copy postgresql://agent@db.example/memories backup.db --json",
        ),
    )
    # No --db: the two stores are the arguments.
    common.add_verbosity(parser)
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.add_argument("source", metavar="SRC", type=common.text, help="the store to copy")
    parser.add_argument(
        "destination", metavar="DST", type=common.text, help="a new file or an empty database"
    )
    parser.set_defaults(handler=cmd_copy)


def cmd_copy(args: argparse.Namespace) -> int:

    target = args.destination
    foreign = postgres.foreign_location(target)
    if foreign is not None:
        raise UserError(f"DST: {foreign}; nothing was written")
    if not postgres.is_url(target):
        target = str(Path(target).expanduser())
        if not postgres.is_url(args.source) and Path(target).resolve() == (
            Path(args.source).expanduser().resolve()
        ):
            raise UserError(f"{target}: SRC and DST are the same store; nothing was written")
    opening = shallow.copy(args)
    opening.db = args.source
    store = common.open_store(opening, actor="copy")
    try:
        with common.progress(f"copying to {postgres.shown_url(target)}") as update:
            report = copy.copy_from(store, target, update)
    except StoreError as error:
        raise UserError(str(error)) from error
    finally:
        store.close()
    if args.json:
        common.print_json(
            {
                "source": report.source,
                "destination": report.destination,
                "counts": report.counts,
                "hashes": report.hashes,
                "hash": report.digest,
                "seconds": round(report.seconds, 2),
            }
        )
        return 0
    print(f"copied {report.source} to {report.destination} in {report.seconds:.1f} s")
    width = max(len(table) for table in report.counts)
    for table, count in report.counts.items():
        print(f"  {table:<{width}}  {count:>12,}")
    print(f"sha256 of the rows (source and copy alike): {report.digest}")
    return 0
