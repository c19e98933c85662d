"""How the runs screen words a run: its parameters against the defaults, its undo report."""

from __future__ import annotations

from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text

from memory_console.describe import is_simulated
from memory_console.literal import literal
from memory_console.maintenance import Run
from memory_console.maintenance.params import POLICY
from memory_console.maintenance.registry import parameter_classes, registered_passes, used_sets
from memory_console.timeutil import to_date
from memory_console.tui.actions import plural
from memory_console.tui.formatting import when

SHOWN_NOT_RESTORED = 30
SKIP_REASONS = {
    "skipped_stale": "changed after the plan was made",
    "skipped_with_group": "in a merge group with one of those",
}


def counts_text(counts: dict[str, int]) -> str:
    return ", ".join(f"{kind} {count:,}" for kind, count in counts.items()) or "nothing"


def parameters_table(run: Run) -> Table:
    """The parameter sets the run's passes read; values other than the default in bold."""
    classes = parameter_classes()
    known = registered_passes()
    grid = Table.grid(padding=(0, 1))
    grid.add_column(style="dim", no_wrap=True)
    grid.add_column()
    if all(
        p in known and not known[p].param_sets and not known[p].params_class for p in run.passes
    ):
        grid.add_row("none", "these passes take no parameters")
        return grid
    try:
        names = [run.policy if s == POLICY else s for s in used_sets(run.passes)]
    except ValueError:  # a pass no longer registered: show every set recorded
        names = [s for s in run.params if s != POLICY]
    for name in dict.fromkeys(names):
        values: dict[str, Any] = run.params.get(name) or {}
        defaults = classes[name]().to_dict() if name in classes else {}
        grid.add_row(Text(name, style="bold"), "")
        for key, value in values.items():
            cell = Text(f"{value}")
            if key in defaults and defaults[key] != value:
                cell.stylize("bold")
                cell.append(f" (default {defaults[key]})", style="dim")
            grid.add_row(f"  {key}", cell)
    return grid


def undo_text(run: Run) -> Text:
    """`undone at …: restored 12, deleted 2, not restored 1` and what and why."""
    if run.undone_at is None:
        return Text(
            "not undone: u undoes it (memories changed since stay as they are; later runs "
            "that changed the same memories are undone first, if you choose)",
            style="dim",
        )
    report = run.undo_report or {}
    text = Text(f"undone {when(run.undone_at)}: ", style="bold")
    deleted = report.get("deleted") or []
    missed = report.get("not_restored") or []
    kept = report.get("kept_edits") or []
    left = report.get("left_merged") or []
    text.append(f"restored {int(report.get('restored', 0)):,}")
    if deleted:
        text.append(f", deleted {len(deleted):,} it created")
    if kept:
        shown = ", ".join(f"#{i}" for i in kept[:SHOWN_NOT_RESTORED])
        text.append(f", kept {len(kept):,} merged memories changed since as their own ({shown})")
    if left:
        shown = ", ".join(f"#{g.get('merged')}" for g in left[:SHOWN_NOT_RESTORED])
        text.append(f", left {len(left):,} groups merged ({shown})")
    cascade = report.get("cascade") or []
    if cascade:
        text.append(
            f", after undoing run{'s' if len(cascade) > 1 else ''} "
            + ", ".join(str(r.get("run_id")) for r in cascade)
        )
    text.append(
        f", not restored {len(missed):,} (changed since the run):"
        if missed
        else ", nothing left out"
    )
    for item in missed[:SHOWN_NOT_RESTORED]:
        text.append(f"\n  #{item.get('id')}: ", style="bold")
        text.append(literal(str(item.get("reason", ""))))
    if len(missed) > SHOWN_NOT_RESTORED:
        text.append(
            f"\n  … and {len(missed) - SHOWN_NOT_RESTORED:,} more "
            "(memory-console undo --json lists them all)",
            style="dim",
        )
    return text


def evaluated_text(run: Run) -> Text:
    """`evaluated at 2026-11-18 11:06 UTC`, or `evaluated as of 2027-02-16 (simulated)` when
    the run's `now` was a day or more away from when it was applied."""
    if not is_simulated(run.now, run.started_at):
        return Text(f"evaluated at {when(run.now)}")
    return Text(f"evaluated as of {to_date(run.now)} (simulated)", style="yellow")


SIMULATED_WIDTH = len("2027-02-16 simulated")  # the runs table's evaluated column


def evaluated_cell(run: Run) -> Text:
    """The runs table's evaluated date, `2027-02-16 simulated` when it was simulated."""
    if not is_simulated(run.now, run.started_at):
        return Text(to_date(run.now) or "")
    return Text(f"{to_date(run.now)} simulated", style="yellow")


def run_facts(run: Run) -> Group:
    head = Text(f"run {run.id}", style="bold")
    head.append(" by ")
    head.append(literal(run.actor))
    head.append(f" · applied {when(run.started_at)} · ")
    head.append(evaluated_text(run))
    head.append(f" · {run.duration_ms:,} ms")
    counts = Text(
        f"{', '.join(run.passes)} ({run.policy}): {counts_text(run.counts)}; {plural(run.changed)}"
    )
    parts = [head, counts, Text(), undo_text(run)]
    if run.skipped:
        parts.append(skipped_text(run.skipped))
    return Group(*parts, Text(), Text("parameters", style="bold"), parameters_table(run))


def skipped_text(skipped: dict[str, list[int]]) -> Text:
    """The memories an apply skipped because they changed after the plan was made."""
    text = Text("skipped when applied:", style="bold")
    for reason, ids in skipped.items():
        shown = ", ".join(f"#{i}" for i in ids[:SHOWN_NOT_RESTORED])
        more = (
            f" … and {len(ids) - SHOWN_NOT_RESTORED:,} more"
            if len(ids) > SHOWN_NOT_RESTORED
            else ""
        )
        text.append(f"\n  {SKIP_REASONS.get(reason, reason)} ({len(ids):,}): {shown}{more}")
    return text
