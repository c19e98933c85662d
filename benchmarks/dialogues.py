"""The labelled dialogues replayed through the agent API: right answers per kind.

    python -m benchmarks.dialogues [--verbose] [--mcp] [--file PATH]

Loads tests/data/dialogues/dialogues.jsonl (see its README), or another file of the same form
given with --file (a set whose dialogues carry a "split" is reported per split), replays each
dialogue in a fresh store (every user turn to MemoryAPI.remember, then recall(query, k=3)) with
the real embedder, and prints the CPU, the figures per kind (right/total), the slot and
multi-fact cases apart, whether a secret said in prose reached the store's files, and the
changes beyond slots right once every pair the supersede maintenance pass proposes is accepted.
Run it with PYTHONPATH on an older checkout to compare builds (the script reads only the agent
API).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from benchmarks.bench_import_memory import cpu_model
from memory_console.embed.embedder import Embedder
from tests.harness.dialogues import (
    LABELLED,
    K,
    Outcome,
    figures,
    load,
    replay_all,
    replay_over_mcp,
)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--verbose", action="store_true", help="print every wrong answer")
    parser.add_argument(
        "--mcp",
        action="store_true",
        help="replay through `memory-console mcp` over stdio (a server per dialogue) instead "
        "of the Python API",
    )
    parser.add_argument(
        "--file", type=Path, default=LABELLED, help="the dialogues (default: %(default)s)"
    )
    args = parser.parse_args(argv)
    print(f"CPU: {cpu_model()}")
    dialogues = load(args.file)
    started = time.perf_counter()
    if args.mcp:
        with tempfile.TemporaryDirectory() as scratch:
            outcomes = [replay_over_mcp(d, Path(scratch)) for d in dialogues]
    else:
        outcomes = replay_all(dialogues, Embedder.load())
    took = time.perf_counter() - started
    through = "the MCP server over stdio" if args.mcp else "the Python API"
    print(f"{len(dialogues)} dialogues replayed through {through} in {took:.1f} s (recall k={K})")
    splits = sorted({o.dialogue.split for o in outcomes if o.dialogue.split is not None})
    for split in splits or [None]:
        part = [o for o in outcomes if split is None or o.dialogue.split == split]
        if split is not None:
            print(f"split {split}: {len(part)} dialogues")
        report(part, mcp=args.mcp, verbose=args.verbose)


def report(outcomes: list[Outcome], *, mcp: bool, verbose: bool) -> None:
    for name, (right, total) in figures(outcomes).items():
        print(f"  {name:<22} {right:>3}/{total:<3}")
    beyond = [o for o in outcomes if o.dialogue.kind == "change" and not o.dialogue.slot]
    if not mcp:  # the review pass runs in-process only
        after = sum(bool(o.reviewed) for o in beyond)
        print(f"  {'beyond, pass accepted':<22} {after:>3}/{len(beyond):<3}")
    unknown = [o for o in outcomes if o.dialogue.kind == "unknown"]
    print(f"  {'unknown, strict':<22} {sum(not o.hits for o in unknown):>3}/{len(unknown):<3}")
    leaks = [o for o in outcomes if o.leaked]
    secrets = sum(len(o.dialogue.secrets) for o in outcomes)
    stored = sum(
        1 for o in leaks for s in o.dialogue.secrets if any(s in f for f in o.leaked.values())
    )
    print(f"  {'secrets stored':<22} {stored:>3}/{secrets:<3}")
    chatter = sum(len(o.dialogue.chatter) for o in outcomes)
    if chatter:
        kept = sum(len(o.chatter_stored) for o in outcomes)
        print(f"  {'small talk stored':<22} {kept:>3}/{chatter:<3}")
    for subkind in ("targeted", "clear_all", "never_said", "not_a_request"):
        part = [o for o in outcomes if o.dialogue.subkind == subkind]
        if part:
            right = sum(o.right for o in part)
            print(f"  {'forget: ' + subkind:<22} {right:>3}/{len(part):<3}")
    if verbose:
        for outcome in outcomes:
            if not outcome.right or outcome.leaked:
                print(f"{outcome.dialogue.kind:<8} {outcome.dialogue.id}: {outcome.why}")
                if outcome.leaked:
                    print(f"         secret stored: {outcome.leaked}")


if __name__ == "__main__":
    main()
