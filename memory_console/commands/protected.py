"""Protected memories in an action that removes memories from recall: named, asked about at a
terminal, left out of a script's --yes unless --include-protected."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from memory_console.commands import common
from memory_console.commands.common import UserError
from memory_console.literal import visible
from memory_console.sensitive import mask

if TYPE_CHECKING:
    from memory_console.store import MemoryFilter, Store

NAMED = 20  # protected memories named before "and N more"


def add_protected_options(parser: argparse.ArgumentParser, verb: str, *, yes: bool) -> None:
    """--include-protected, and --yes where the command has none yet."""
    if yes:
        parser.add_argument(
            "--yes",
            action="store_true",
            help=f"{verb} without asking; protected memories are left out unless "
            "--include-protected",
        )
    parser.add_argument(
        "--include-protected",
        action="store_true",
        help=f"{verb} protected memories too, without asking about them (else they are "
        "named and asked about, and --yes leaves them out)",
    )


def protected_among(
    store: Store, ids: list[int], memory_filter: MemoryFilter | None = None
) -> list[int]:
    """The protected memories of a selection, in its order: through the filter when the
    selection is one (a large selection is not read whole), else by reading the ids."""
    if memory_filter is not None:
        from dataclasses import replace

        marked = set(store.ids_matching(replace(memory_filter, is_protected=True)))
    else:
        marked = {i for i, record in store.get_many(ids).items() if record.is_protected}
    return [i for i in ids if i in marked]


def leave_out_protected(
    store: Store,
    ids: list[int],
    args: argparse.Namespace,
    verb: str,
    memory_filter: MemoryFilter | None = None,
) -> tuple[list[int], list[int]]:
    """The ids to act on and the protected ones left out. Protected memories are named and,
    at a terminal, asked about; with --yes they are left out; without --yes or a terminal
    the command is refused (by its own question when it asks one after this: a selection
    by filters). --include-protected takes them in without a word."""
    if args.include_protected:
        return ids, []
    protected = protected_among(store, ids, memory_filter)
    if not protected:
        return ids, []
    talk = sys.stderr if getattr(args, "json", False) else sys.stdout
    print(named(store, protected), file=talk)
    rest = [i for i in ids if i not in set(protected)]
    if args.yes:
        return rest, protected
    if not sys.stdin.isatty():
        if memory_filter is not None:
            return rest, protected  # the selection's own question refuses, after its preview
        raise UserError(
            f"{verb} of {len(ids):,} {'memory' if len(ids) == 1 else 'memories'}, "
            f"{len(protected):,} of them protected, needs an answer at a terminal; give --yes "
            "to act without asking (the protected ones are left out), with "
            f"--include-protected to {verb} them too (nothing was changed)"
        )
    question = f"{verb.capitalize()} the {len(protected):,} protected too?"
    if common.confirmed(question, yes=False, refusal=""):
        return ids, []
    return rest, protected


def named(store: Store, protected: list[int]) -> str:
    """`2 of these are protected: #4 Title, #5 Title`."""
    records = store.get_many(protected[:NAMED])
    names = []
    for ident in protected[:NAMED]:
        title = records[ident].title if ident in records else ""
        shown = visible(mask(title), layout=False)
        names.append(f"#{ident} {shown[:60]}{'…' if len(shown) > 60 else ''}".rstrip())
    more = f", and {len(protected) - NAMED:,} more" if len(protected) > NAMED else ""
    count = len(protected)
    verb = "is" if count == 1 else "are"
    return f"{count:,} of these {verb} protected: {', '.join(names)}{more}"


def left_out_line(left_out: list[int], verb: str) -> str:
    """What --yes did with the protected memories, for the command's summary."""
    listed = ", ".join(f"#{i}" for i in left_out[:NAMED])
    more = f" and {len(left_out) - NAMED:,} more" if len(left_out) > NAMED else ""
    return (
        f"left out {len(left_out):,} protected ({listed}{more}); "
        f"--include-protected would {verb} them too"
    )
