"""The preview's counts: memories per pass and kind of change, what the edits left out."""

from __future__ import annotations

from rich import box
from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.widgets import Static

from memory_console.maintenance import Plan
from memory_console.tui.actions import plural

KIND_NAMES = {"created": "new memories"}


def counts_by_pass(plan: Plan) -> dict[tuple[str, str], int]:
    """Memories per (pass, kind of change), in pass order; new memories as `created`."""
    counts: dict[tuple[str, str], int] = {}
    for change_set in plan.change_sets:
        key = (change_set.pass_name, change_set.kind)
        counts[key] = counts.get(key, 0) + len(change_set)
    for memory in plan.new_memories:
        key = (memory.pass_name, memory.kind)
        counts[key] = counts.get(key, 0) + 1
    return counts


def figures_line(plan: Plan) -> str:
    """What the passes found beyond their changes (eligible, candidates, groups)."""
    wanted = (
        ("decay", "eligible", "eligible"),
        ("decay", "promotion_candidates", "promotion candidates"),
        ("promote", "promotion_candidates", "promotion candidates"),
        ("consolidate", "groups", "merge groups"),
    )
    shown: dict[str, int] = {}
    for pass_name, key, label in wanted:
        value = plan.figures.get(pass_name, {}).get(key)
        if value is not None:
            shown.setdefault(label, value)
    line = " · ".join(f"{label} {value:,}" for label, value in shown.items())
    if line and plan.read == "due" and plan.rows_read is not None:
        # Counted among what the plan read (the due index), not the whole store.
        line += f" (among the {plan.rows_read:,} due)"
    return line


def counts_table(base: Plan, edited: Plan, left_out: int) -> Group:
    proposed = counts_by_pass(base)
    kept = counts_by_pass(edited)
    table = Table(
        box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, expand=True, header_style="bold"
    )
    table.add_column("pass")
    table.add_column("change")
    table.add_column("memories", justify="right")
    for pass_name in base.passes:
        keys = [key for key in dict.fromkeys([*proposed, *kept]) if key[0] == pass_name]
        if not keys:
            table.add_row(pass_name, Text("no change", style="dim"), "0")
        for key in keys:
            count, was = kept.get(key, 0), proposed.get(key, 0)
            cell = Text(f"{count:,}")
            if count != was:
                cell.append(f" of {was:,}", style="dim")
            table.add_row(key[0], KIND_NAMES.get(key[1], key[1]), cell)
    if left_out:
        table.add_row(Text("left out", style="italic"), "by you", Text(f"{left_out:,}"))
    total = Text(f"{plural(edited.changed)} change", style="bold")
    if edited.new_memories:
        total.append(f", {len(edited.new_memories):,} new", style="bold")
    figures = figures_line(base)
    return Group(table, total, Text(figures, style="dim") if figures else Text())


class PlanCounts(Static):
    """Counts first: what each pass would do, and what the operator took out."""

    DEFAULT_CSS = """
    PlanCounts { height: auto; }
    """

    def show(self, base: Plan, edited: Plan, left_out: int) -> None:
        self.update(counts_table(base, edited, left_out))
