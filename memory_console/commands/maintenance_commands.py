"""Subcommands of maintenance: decay, maintain (--dry-run [--out PLAN] | --apply [PLAN]),
plan-edit PLAN, runs, undo RUN_ID."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memory_console.commands import common, render
from memory_console.commands.common import UserError
from memory_console.literal import visible
from memory_console.timeutil import to_iso

if TYPE_CHECKING:
    from memory_console.settings import Settings

PARAM_PREFIX = "param_"


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from memory_console.maintenance import registry

    decay = subparsers.add_parser(
        "decay",
        description="Decay confidence under a policy, computed from each memory's "
        "base_confidence (running it twice at the same --now changes nothing), and flag old "
        "memories at the floor (cleanup). --dry-run writes nothing; --apply writes everything "
        "in one transaction (undo with `undo RUN_ID`).",
        epilog=common.examples(
            "decay --dry-run --now 2027-01-01", "decay --apply --policy periodic --json"
        ),
    )
    add_plan_options(decay)
    decay.set_defaults(handler=cmd_plan, passes=registry.DECAY, command_name="decay")

    maintain = subparsers.add_parser(
        "maintain",
        description="Run maintenance passes as one plan, each seeing the changes of the ones "
        f"before: by default {', '.join(registry.MAINTAIN)} (those available), in that order. "
        "Protected memories and decay_policy none are never touched.",
        epilog=common.examples("maintain --dry-run --out plan.json", "maintain --apply plan.json"),
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
    maintain.add_argument(
        "--due",
        action="store_true",
        help="only the default passes whose interval (the store's interval.<pass> settings) "
        "has passed since their last applied run; with --dry-run, says which are due and why",
    )
    maintain.set_defaults(handler=cmd_plan, command_name="maintain")

    edit = subparsers.add_parser(
        "plan-edit",
        description="Edit a plan written by `maintain --dry-run --out PLAN` as the console's "
        "review does: leave memories out of the run, reject a merge group (its memories stay "
        "as they are) or split members off into a merge of their own. Groups are numbered "
        "1, 2 ... in the plan's order, as the review shows them. The edited plan is written "
        "over PLAN (or to --out); apply it with `maintain --apply PLAN`.",
        epilog=common.examples(
            "plan-edit plan.json --leave-out 12,40 --reject-group 2",
            "plan-edit plan.json --split-group 1:5,9 --out edited.json",
        ),
    )
    common.add_common(edit)
    edit.add_argument("plan", metavar="PLAN", help="the plan file")
    edit.add_argument(
        "--leave-out",
        type=id_list,
        action="append",
        default=[],
        metavar="IDS",
        help="comma-separated memory ids no pass changes in this run",
    )
    edit.add_argument(
        "--reject-group",
        type=group_number,
        action="append",
        default=[],
        metavar="N",
        help="do not merge group N",
    )
    edit.add_argument(
        "--split-group",
        type=split_spec,
        action="append",
        default=[],
        metavar="N:IDS",
        help="split these members (at least two) of group N off into a merge of their own",
    )
    edit.add_argument("--out", help="write the edited plan here instead of over PLAN")
    edit.set_defaults(handler=cmd_plan_edit)

    runs = subparsers.add_parser(
        "runs",
        description="Applied runs, newest first: passes, policy, "
        "counts, duration and whether they were undone.",
        epilog=common.examples("runs", "runs --limit 5 --json"),
    )
    common.add_common(runs)
    common.add_limit(runs, 20, "runs")
    runs.set_defaults(handler=cmd_runs)

    undo = subparsers.add_parser(
        "undo",
        description="Restore every field a run changed, except memories changed again "
        "since by hand or by recall (reported, left as they are). Refused, with nothing "
        "changed, while a later run that is not undone changed the same memories (undo it "
        "first, or give --cascade), while a memory the run merged others into changed since "
        "(choose --keep-edit or --leave-merged), or when it would restore nothing.",
        epilog=common.examples("undo 7", "undo 7 --cascade", "undo 7 --keep-edit --json"),
    )
    common.add_common(undo)
    undo.add_argument("run_id", type=int, metavar="RUN_ID", help="the run's id (see `runs`)")
    undo.add_argument(
        "--cascade",
        action="store_true",
        help="first undo the later runs that changed the same memories, newest first, all "
        "in one transaction",
    )
    choice = undo.add_mutually_exclusive_group()
    choice.add_argument(
        "--keep-edit",
        dest="merged_edits",
        action="store_const",
        const="keep-edit",
        help="a merged memory changed since the run stays, as a memory of its own (marked "
        "kept_by_undo in its metadata), and its sources return",
    )
    choice.add_argument(
        "--leave-merged",
        dest="merged_edits",
        action="store_const",
        const="leave-merged",
        help="a merged memory changed since the run stays merged with its sources; the rest "
        "of the run is undone",
    )
    undo.set_defaults(handler=cmd_undo)


def add_plan_options(parser: argparse.ArgumentParser) -> None:
    from memory_console.maintenance import registry
    from memory_console.maintenance.params import parameter_options
    from memory_console.policies import POLICIES

    common.add_common(parser)
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--dry-run", action="store_true", help="list what would change")
    mode.add_argument(
        "--apply",
        nargs="?",
        const=True,
        default=False,
        metavar="PLAN",
        help="write it, in one transaction; with PLAN, apply that saved plan exactly "
        "(refused as stale when the store changed since, unless --skip-stale)",
    )
    parser.add_argument(
        "--out",
        metavar="PLAN",
        help="with --dry-run: also write the plan to this file, to edit (plan-edit) and apply",
    )
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
        default=None,
        help="decay policy for this run (default: the store's decay_policy setting, "
        "relevance unless set)",
    )
    parser.add_argument(
        "--all",
        action="store_true",
        dest="every",
        help="read every memory the passes look at, not only those the due index says are due "
        "(the same changes; eligible and promotion candidates then count the whole store)",
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
    from memory_console.maintenance import registry

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


def id_list(text: str) -> frozenset[int]:
    try:
        ids = frozenset(int(part) for part in text.split(",") if part.strip())
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"not a list of memory ids: {text!r}") from error
    if not ids or not all(1 <= i <= common.MAX_ID for i in ids):
        raise argparse.ArgumentTypeError(f"not a list of memory ids: {text!r}")
    return ids


def group_number(text: str) -> int:
    try:
        number = int(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"not a group number: {text!r}") from error
    if number < 1:
        raise argparse.ArgumentTypeError(f"not a group number: {text!r}")
    return number


def split_spec(text: str) -> tuple[int, frozenset[int]]:
    number, _, ids = text.partition(":")
    return group_number(number), id_list(ids)


def cmd_plan(args: argparse.Namespace) -> int:
    from memory_console.maintenance import plan, registry

    if args.skip_stale and not args.apply:
        raise UserError("--skip-stale goes with --apply")
    if args.out is not None and not args.dry_run:
        raise UserError("--out goes with --dry-run (it writes the plan to apply later)")
    if isinstance(args.apply, str):
        return apply_plan_file(args, Path(args.apply))
    common.check_range("--top", args.top, 0)
    now = common.now_of(args)
    write = f"{args.command_name} --apply" if args.apply else None
    settings = common.settings_of(args)
    store = common.open_store(args, actor="cli", write=write)
    try:
        names = args.passes or registry.maintain_passes()
        if getattr(args, "due", False):
            names = due_names(args, store, now)
            if not names:
                return 0
        try:
            params = registry.build_params(names, args.policy, overrides_of(args), store.settings())
        except ValueError as error:
            raise UserError(str(error)) from error
        if args.apply:
            store.require_writable(f"{args.command_name} --apply")
        with common.progress(f"planning {', '.join(names)}") as update:
            proposed = plan(
                store,
                names,
                params,
                now,
                progress=lambda name, number, total: update(max(0, number - 1), total),
                every=args.every,
            )
        warn_plan(proposed)
        if args.out is not None:
            save_plan(Path(args.out), proposed)
        run = None
        if args.apply:
            with common.progress(f"applying {proposed.changed:,} changes") as update:
                proposed, run = apply_with_command(
                    store, proposed, settings, args.skip_stale, "or", update
                )
        titles = titles_of(store, proposed, args.top) if not args.json else {}
    finally:
        store.close()
    report(args, proposed, run, titles)
    return 0


def due_names(args: argparse.Namespace, store: Any, now: float) -> tuple[str, ...]:
    """`maintain --due`: the default passes due at `now`, each with why (printed unless
    --json); a pass without an interval setting is never due, and one not registered in
    this build is skipped."""
    from memory_console.maintenance import registry
    from memory_console.maintenance.schedule import due_passes

    if args.passes:
        raise UserError("--due picks the passes itself; leave out --passes")
    verdicts = due_passes(store, now, registry.MAINTAIN)
    due = tuple(v.name for v in verdicts if v.due and v.name in registry.registered_passes())
    if args.json and not due:
        common.print_json({"due": [], "passes": [v.to_json() for v in verdicts]})
    elif not args.json:
        for verdict in verdicts:
            print(f"{verdict.name}: {verdict.why}")
        if not due:
            print("nothing due; nothing planned or written")
    return due


def warn_plan(proposed: Any) -> None:
    """The plan's warnings on stderr (--json carries them too)."""
    from memory_console.maintenance.report import plan_warnings

    for line in plan_warnings(proposed):
        warn(line)


def warn(line: str) -> None:
    if line:
        common.log.warning("%s", visible(line, layout=False))


def save_plan(path: Path, proposed: Any, edits: Any = None, merge: Any = None) -> Any:
    """Write `proposed` (with `edits`, merged anew by `merge`) as a plan file."""
    from memory_console.commands.store_commands import write_file
    from memory_console.maintenance.plan_file import PlanFile, write_plan_file

    plan_file = PlanFile(proposed)
    if edits is not None:
        plan_file = plan_file.with_edits(edits, merge)
    write_file(path, lambda handle: write_plan_file(handle, plan_file))
    return plan_file


def load_plan(path: Path) -> Any:
    from memory_console.maintenance.plan_file import PlanFileError, read_plan_file

    try:
        return read_plan_file(path)
    except PlanFileError as error:
        raise UserError(str(error)) from error


def apply_plan_file(args: argparse.Namespace, path: Path) -> int:
    """`maintain --apply PLAN`: exactly the saved plan, after its edits."""
    from memory_console.maintenance.plan_file import PlanFileError, check_store

    fixed = {
        "--passes": getattr(args, "passes", None),
        "--policy": args.policy,
        "--now": getattr(args, "now", None),
    }
    given = [f"--{name.replace('_', '-')}" for name in overrides_of(args)]
    given += [option for option, value in fixed.items() if value]
    if given:
        raise UserError(f"{', '.join(given)}: the plan file fixes them; make a new plan instead")
    common.check_range("--top", args.top, 0)
    plan_file = load_plan(path)
    settings = common.settings_of(args)
    store = common.open_store(args, actor="cli", write=f"{args.command_name} --apply")
    try:
        store.require_writable(f"{args.command_name} --apply")
        try:
            check_store(plan_file, store)
            edited = plan_file.edited().plan
            warn_plan(edited)
        except PlanFileError as error:
            raise UserError(f"{path}: {error}") from error
        with common.progress(f"applying {edited.changed:,} changes") as update:
            edited, run = apply_with_command(
                store, edited, settings, args.skip_stale, ": make a new plan, or", update
            )
        titles = titles_of(store, edited, args.top) if not args.json else {}
    finally:
        store.close()
    report(args, edited, run, titles)
    return 0


def report(args: argparse.Namespace, proposed: Any, run: Any, titles: dict[int, str]) -> None:
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


def cmd_plan_edit(args: argparse.Namespace) -> int:
    """Edit a saved plan through the same PlanEdits the console's review makes."""
    from memory_console.maintenance.edits import merge_groups
    from memory_console.maintenance.merge_review import merge_members, outcome, parts_by_group
    from memory_console.maintenance.plan_file import PlanFileError, check_store

    path = Path(args.plan)
    plan_file = load_plan(path)
    proposed = plan_file.proposed
    groups = merge_groups(proposed)
    keys = sorted(groups, reverse=True)  # group N is keys[N - 1], as the review numbers them

    def members_of(number: int) -> list[int]:
        if number > len(keys):
            raise UserError(f"group {number}: the plan has {len(keys)} merge groups")
        return groups[keys[number - 1]]

    edits = plan_file.edits
    for ids in args.leave_out:
        edits = edits.exclude(ids)
    for number in args.reject_group:
        edits = edits.reject(members_of(number))
    for number, ids in args.split_group:
        outside = sorted(ids - set(members_of(number)))
        if outside:
            raise UserError(f"group {number} has no member {', '.join(map(str, outside))}")
        if len(ids) < 2:
            raise UserError(f"group {number}: a merge needs two memories; give at least two ids")
        edits = edits.split(ids)
    if getattr(args, "db", None) is None:
        args.db = proposed.store_path
    store = common.open_store(args)
    try:
        try:
            check_store(plan_file, store)
        except PlanFileError as error:
            raise UserError(f"{path}: {error}") from error
        out = Path(args.out) if args.out else path
        saved = save_plan(out, proposed, edits, lambda ids: merge_members(store, ids))
    finally:
        store.close()
    edited = saved.edited()
    parts = parts_by_group(proposed, edited)
    outcomes = [outcome(parts[key], len(groups[key])) for key in keys]
    left_out = sorted(edits.excluded)
    if args.json:
        common.print_json(
            {
                "out": str(out),
                "changed": edited.plan.changed,
                "new_memories": len(edited.plan.new_memories),
                "left_out": left_out,
                "groups": [
                    {"number": n, "members": groups[k], "outcome": o}
                    for n, (k, o) in enumerate(zip(keys, outcomes, strict=True), start=1)
                ],
            }
        )
        return 0
    print(
        f"{out}: {edited.plan.changed:,} memories change, "
        f"{len(edited.plan.new_memories):,} merges, {len(left_out):,} left out"
    )
    # Only the groups the edits touched: a store's plan can hold hundreds of merges (--json
    # lists every one).
    touched = 0
    for number, (key, result) in enumerate(zip(keys, outcomes, strict=True), start=1):
        if result != "merge":
            touched += 1
            print(f"  group {number} ({len(groups[key])} memories): {result}")
    if len(keys) > touched:
        print(f"  {len(keys) - touched:,} other merge groups as proposed (--json lists them)")
    print(f"apply with: memory-console maintain --apply {out}")
    return 0


def apply_with_command(
    store: Any,
    proposed: Any,
    settings: Settings,
    skip_stale: bool,
    stale_hint: str,
    progress: common.Update | None = None,
) -> tuple[Any, Any]:
    """Word the plan's merges with the merge command under the settings' budget (its
    failures warned, counted by cause, the extractive merge kept for them), then apply it,
    telling `progress` the rows written; returns the plan applied (its figures count the
    command's failures) and the run. A stale plan is a UserError ending in `stale_hint`
    and the --skip-stale advice."""
    from memory_console.maintenance import StalePlanError, apply
    from memory_console.maintenance.merge_command import merge_with_command, run_budget

    merges = merge_with_command(store, proposed, settings.merge_command, run_budget(settings))
    warn(merges.summary)
    try:
        return merges.plan, apply(store, merges.plan, skip_stale=skip_stale, progress=progress)
    except StalePlanError as error:
        separator = "" if stale_hint.startswith(":") else " "
        raise UserError(f"{error}{separator}{stale_hint} use --skip-stale") from error


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

    from memory_console.describe import simulated_note
    from memory_console.maintenance.report import first_changes, largest_drops
    from memory_console.policies import confidence_label
    from memory_console.timeutil import now_ts

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
    out.print("  " + read_line(proposed), style="dim")
    simulated = simulated_note(proposed.now, now_ts())
    if simulated:
        out.print(f"  {simulated} (a simulated date; events are stamped with the clock)")
    disabled = [name for name, f in proposed.figures.items() if f.get("disabled")]
    if disabled:
        out.print(
            f"decay is disabled in the store's settings (decay_enabled false): "
            f"{', '.join(disabled)} planned nothing; `memory-console config set decay_enabled "
            "true` turns it on"
        )
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
    if run is None and getattr(args, "out", None):
        out.print(
            f"plan written to {args.out}; edit it with plan-edit, apply it with: "
            f"memory-console maintain --apply {args.out}",
            style="dim",
        )
    elif run is None:
        out.print("apply with the same options and --apply instead of --dry-run", style="dim")
    else:
        if args.skip_stale:
            out.print(skipped_line(run))
        out.print(
            f"run {run.id} wrote {run.changed:,} memories in {run.duration_ms:,} ms; "
            f"undo with: memory-console undo {run.id}"
        )


def read_line(proposed: Any) -> str:
    """Which memories the plan read, and why all of them when it did."""
    read = "no memory" if proposed.rows_read is None else f"{proposed.rows_read:,} memories"
    if proposed.read == "due":
        return (
            f"read {read} due by then (the due index: the others cannot change yet); "
            "--all reads every one"
        )
    return f"read {read}: {proposed.read_why}"


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
    from memory_console.describe import is_simulated
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
            (to_iso(run.now) or "")
            + (" (simulated)" if is_simulated(run.now, run.started_at) else ""),
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
    # From its module: the package attribute `undo` can be the module.
    from memory_console.maintenance.undo import UndoRefused, undo

    if not 1 <= args.run_id <= common.MAX_ID:
        raise UserError(f"no maintenance run with id {args.run_id}")
    now = common.now_of(args)
    store = common.open_store(args, write="undo")
    try:
        report = undo(
            store, args.run_id, now=now, cascade=args.cascade, merged_edits=args.merged_edits
        )
    except UndoRefused as refused:
        if args.json:
            common.print_json(refused.to_json())
        raise UserError(str(refused)) from refused
    finally:
        store.close()
    if args.json:
        common.print_json(report.to_json())
        return 0
    for done in [*report.cascade, report]:
        print_undo(done)
    return 0


def print_undo(report: Any) -> None:
    """What one undo did, as `undo` prints it."""
    print(
        f"undid run {report.run_id}: restored {render.memories(len(report.restored))}"
        + (f", deleted {len(report.deleted):,} it created" if report.deleted else "")
    )
    for ident in report.kept_edits:
        print(
            f"  #{ident}: merged memory changed since, kept as a memory of its own "
            "(metadata kept_by_undo); its sources are back"
        )
    for group in report.left_merged:
        print(f"  left merged: {visible(group.words(), layout=False)}")
    if report.not_restored:
        print(f"{len(report.not_restored):,} memories not restored (changed since the run):")
        for item in report.not_restored[:50]:
            print(f"  #{item.id}: {visible(item.reason, layout=False)}")
        if len(report.not_restored) > 50:
            print(f"  ... and {len(report.not_restored) - 50:,} more (see --json)")
