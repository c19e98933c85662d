"""Subcommands of maintenance: decay, maintain (--dry-run | --apply), runs, undo RUN_ID."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from memory_console.commands import common
from memory_console.commands.common import UserError
from memory_console.literal import visible
from memory_console.maintenance import registry
from memory_console.maintenance.params import parameter_options
from memory_console.policies import POLICIES, confidence_label
from memory_console.timeutil import to_iso

PARAM_PREFIX = "param_"


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    decay = subparsers.add_parser(
        "decay",
        help="preview or apply confidence decay (with cleanup flags)",
        description="Decay confidence under a policy, computed from each memory's "
        "base_confidence (running it twice at the same --now changes nothing), and flag old "
        "memories at the floor (cleanup). --dry-run writes nothing; --apply writes everything "
        "in one transaction (undo with `undo RUN_ID`).",
    )
    add_plan_options(decay)
    decay.set_defaults(handler=cmd_plan, passes=registry.DECAY, command_name="decay")

    maintain = subparsers.add_parser(
        "maintain",
        help="preview or apply several maintenance passes as one plan",
        description="Run maintenance passes as one plan, each seeing the changes of the ones "
        f"before: by default {', '.join(registry.MAINTAIN)} (those available), in that order. "
        "Protected memories and decay_policy none are never touched.",
    )
    add_plan_options(maintain)
    known = ", ".join(
        f"{name} ({spec.summary})" for name, spec in registry.registered_passes().items()
    )
    maintain.add_argument(
        "--passes",
        type=pass_list,
        default=None,
        help=f"comma-separated passes, run in canonical order; known: {known}",
    )
    maintain.set_defaults(handler=cmd_plan, command_name="maintain")

    runs = subparsers.add_parser(
        "runs",
        help="list applied maintenance runs",
        description="Applied runs, newest first: passes, policy, "
        "counts, duration and whether they were undone.",
    )
    common.add_common(runs)
    runs.add_argument("--limit", type=int, default=20, help="at most this many (default 20)")
    runs.set_defaults(handler=cmd_runs)

    undo = subparsers.add_parser(
        "undo",
        help="take back an applied run",
        description="Restore every field a run changed, except "
        "memories changed again since (reported, left as they are).",
    )
    common.add_common(undo)
    undo.add_argument("run_id", type=int, metavar="RUN_ID")
    undo.set_defaults(handler=cmd_undo)


def add_plan_options(parser: argparse.ArgumentParser) -> None:
    common.add_common(parser)
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--dry-run", action="store_true", help="list what would change")
    mode.add_argument("--apply", action="store_true", help="write it, in one transaction")
    parser.add_argument(
        "--skip-stale",
        action="store_true",
        help="with --apply: leave out the memories that changed while planning "
        "(an agent wrote them) and apply the rest, instead of refusing the "
        "whole plan; the next run takes them",
    )
    parser.add_argument(
        "--policy",
        choices=list(POLICIES),
        default="relevance",
        help="decay policy (default relevance)",
    )
    parser.add_argument(
        "--top", type=int, default=20, help="how many of the largest changes to show (default 20)"
    )
    group = parser.add_argument_group("policy parameters (each overrides its default)")
    for name, owners in parameter_options(registry.parameter_classes()).items():
        kind = int if all(type(default) is int for _, default in owners) else float
        defaults = ", ".join(f"{default:g} ({owner})" for owner, default in owners)
        group.add_argument(
            f"--{name.replace('_', '-')}",
            dest=PARAM_PREFIX + name,
            type=kind,
            default=None,
            metavar=kind.__name__.upper(),
            help=f"default {defaults}",
        )


def pass_list(text: str) -> tuple[str, ...]:
    try:
        return registry.resolve(text.split(","))
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from error


def overrides_of(args: argparse.Namespace) -> dict[str, Any]:
    return {
        key[len(PARAM_PREFIX) :]: value
        for key, value in vars(args).items()
        if key.startswith(PARAM_PREFIX) and value is not None
    }


def cmd_plan(args: argparse.Namespace) -> int:
    from memory_console.maintenance import StalePlanError, apply, plan

    if args.skip_stale and not args.apply:
        raise UserError("--skip-stale goes with --apply")
    names = args.passes or registry.maintain_passes()
    try:
        params = registry.build_params(names, args.policy, overrides_of(args))
    except ValueError as error:
        raise UserError(str(error)) from error
    common.check_range("--top", args.top, 0)
    now = common.now_of(args)
    write = f"{args.command_name} --apply" if args.apply else None
    store = common.open_store(args, actor="cli", write=write)
    try:
        if args.apply:
            store.require_writable(f"{args.command_name} --apply")
        proposed = plan(store, names, params, now)
        try:
            run = apply(store, proposed, skip_stale=args.skip_stale) if args.apply else None
        except StalePlanError as error:
            raise UserError(f"{error} or use --skip-stale") from error
        titles = titles_of(store, proposed, args.top) if not args.json else {}
    finally:
        store.close()
    if args.json:
        extra: dict[str, Any] = {"dry_run": run is None}
        if run is not None:
            extra.update(run_id=run.id, duration_ms=run.duration_ms)
            if args.skip_stale:
                extra.update(
                    applied=run.changed, skipped_stale=skipped_stale(run), skipped=run.skipped
                )
        write_plan_json(proposed, extra)
    else:
        print_plan(proposed, run, titles, args)
    return 0


def write_plan_json(proposed: Any, extra: dict[str, Any]) -> None:
    from memory_console.maintenance.report import plan_json_chunks

    out = sys.stdout
    for chunk in plan_json_chunks(proposed, extra):
        out.write(chunk)


def titles_of(store: Any, proposed: Any, limit: int) -> dict[int, str]:
    """Masked titles of the memories the human output shows."""
    from memory_console.maintenance.report import first_changes, largest_drops
    from memory_console.sensitive import mask

    shown = [c.id for c in largest_drops(proposed, limit)]
    shown += [c.id for rows in first_changes(proposed, limit).values() for c in rows]
    return {ident: mask(record.title) for ident, record in store.get_many(shown).items()}


def print_plan(proposed: Any, run: Any, titles: dict[int, str], args: argparse.Namespace) -> None:
    from rich.table import Table
    from rich.text import Text

    from memory_console.maintenance.report import first_changes, largest_drops

    out = common.console()
    summary = proposed.summary()
    head = "dry run, nothing written" if run is None else f"applied as run {run.id}"
    line = Text(args.command_name, style="bold")
    line.append(f" ({proposed.policy}) at {to_iso(proposed.now)}: {head}")
    out.print(line)
    figures = [
        ("eligible", summary["eligible"]),
        ("decayed", summary["decayed"]),
        ("flagged", summary["flagged"]),
        ("archived", summary["archived"]),
        ("promoted", summary["promoted"]),
        ("promotion candidates", summary["promotion_candidates"]),
        ("memories changed", summary["changed"]),
    ]
    out.print("  " + " · ".join(f"{name} {value:,}" for name, value in figures))
    drops = largest_drops(proposed, args.top)
    if drops:
        table = Table(
            title=f"largest confidence drops (top {len(drops)})",
            show_edge=False,
            header_style="bold",
            title_justify="left",
        )
        for column in ("id", "title", "before", "after", "reason"):
            table.add_column(column, overflow="fold")
        for change in drops:
            table.add_row(
                str(change.id),
                titles.get(change.id, ""),
                f"{change.before:.3f}",
                f"{change.after:.3f} {confidence_label(change.after)}",
                change.reason,
            )
        out.print(table)
    for kind, changes in first_changes(proposed, args.top).items():
        table = Table(
            title=f"{kind} (first {len(changes)})",
            show_edge=False,
            header_style="bold",
            title_justify="left",
        )
        for column in ("id", "title", "change", "reason"):
            table.add_column(column, overflow="fold")
        for change in changes:
            table.add_row(
                str(change.id),
                titles.get(change.id, ""),
                f"{change.field} {change.before} -> {change.after}",
                change.reason,
            )
        out.print(table)
    if run is None:
        out.print("apply with the same options and --apply instead of --dry-run", style="dim")
    else:
        if args.skip_stale:
            out.print(skipped_line(run))
        out.print(
            f"run {run.id} wrote {run.changed:,} memories in {run.duration_ms:,} ms; "
            f"undo with: memory-console undo {run.id}"
        )


def skipped_stale(run: Any) -> int:
    return int(run.counts.get("skipped_stale", 0))


def skipped_line(run: Any) -> str:
    """What a --skip-stale apply did and left for the next run."""
    line = (
        f"applied {run.changed:,} changes; skipped {skipped_stale(run):,} memories that "
        "changed while planning (the next run takes them)"
    )
    grouped = int(run.counts.get("skipped_with_group", 0))
    if grouped:
        line += (
            f"; {grouped:,} unchanged members of their consolidation groups were left out with them"
        )
    return line


def cmd_runs(args: argparse.Namespace) -> int:
    from memory_console.maintenance import list_runs

    common.check_range("--limit", args.limit, 1)
    store = common.open_store(args)
    try:
        runs = list_runs(store, args.limit)
    finally:
        store.close()
    if args.json:
        common.print_json([run.to_json() for run in runs])
        return 0
    from rich.table import Table

    table = Table(show_edge=False, header_style="bold")
    for column in (
        "run",
        "applied",
        "now",
        "passes",
        "policy",
        "changed",
        "counts",
        "duration ms",
        "undone",
    ):
        table.add_column(column, justify="right" if column in ("run", "changed") else "left")
    for run in runs:
        counts = ", ".join(f"{kind} {count:,}" for kind, count in run.counts.items())
        table.add_row(
            str(run.id),
            to_iso(run.started_at),
            to_iso(run.now),
            ",".join(run.passes),
            run.policy,
            f"{run.changed:,}",
            counts,
            f"{run.duration_ms:,}",
            to_iso(run.undone_at) or "",
        )
    common.console().print(table if runs else "no runs yet")
    return 0


def cmd_undo(args: argparse.Namespace) -> int:
    from memory_console.maintenance import undo

    if not 1 <= args.run_id <= common.MAX_ID:
        raise UserError(f"no maintenance run with id {args.run_id}")
    now = common.now_of(args)
    store = common.open_store(args, write="undo")
    try:
        report = undo(store, args.run_id, now=now)
    finally:
        store.close()
    if args.json:
        common.print_json(report.to_json())
        return 0
    print(
        f"undid run {report.run_id}: restored {len(report.restored):,} memories"
        + (f", deleted {len(report.deleted):,} it created" if report.deleted else "")
    )
    if report.not_restored:
        print(f"{len(report.not_restored):,} memories not restored (changed since the run):")
        for item in report.not_restored[:50]:
            print(f"  #{item.id}: {visible(item.reason, layout=False)}")
        if len(report.not_restored) > 50:
            print(f"  ... and {len(report.not_restored) - 50:,} more (see --json)")
    return 0
