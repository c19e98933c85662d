"""How the preview words a plan: its head line, one change in detail, the apply question."""

from __future__ import annotations

from rich.text import Text

from memory_console.describe import forecast_line, simulated_note
from memory_console.literal import literal
from memory_console.maintenance import NewMemory, Plan
from memory_console.maintenance.report import plan_warnings
from memory_console.store import MemoryRecord
from memory_console.tui.actions import plural
from memory_console.tui.formatting import masked, one_line
from memory_console.tui.plan_request import PlanRequest
from memory_console.tui.plan_rows import RowChange
from memory_console.tui.widgets.change_table import change_text
from memory_console.tui.widgets.plan_counts import KIND_NAMES, counts_by_pass


def head_text(request: PlanRequest, plan: Plan | None) -> Text:
    """`decay, cleanup · relevance · evaluated now (…) · planned in 15 ms` (or `evaluated in
    90 days (…)`: the moment reads whole after one verb)."""
    text = Text(" ")
    text.append(", ".join(request.passes), style="bold")
    text.append(f" · {request.policy} · evaluated {request.when}")
    if request.simulated:
        text.append(" simulated: nothing accessed until then", style="italic")
    if plan is not None:
        text.append(f" · planned in {plan.duration_ms:,} ms", style="dim")
        if plan.rows_read is not None:
            # The due index's read: the counts of what the passes looked at are of those.
            due = " due" if plan.read == "due" else ""
            text.append(f" · read {plan.rows_read:,}{due}", style="dim")
    if request.overrides:
        changed = ", ".join(f"{k}={v}" for k, v in request.overrides.items())
        text.append(f" · {changed}", style="dim")
    return text


def warning_text(plan: Plan | None) -> Text:
    """The plan's warnings (memories consolidation compared only as exact duplicates), one a
    line; empty when there are none."""
    text = Text()
    for line in plan_warnings(plan) if plan is not None else []:
        text.append(" warning: ", style="bold reverse")
        text.append(f" {line}\n")
    text.rstrip()
    return text


def detail_text(record: MemoryRecord, change: RowChange, now: float) -> Text:
    """Three lines on the memory under the cursor: what it is, every field the change sets,
    and its forecast."""
    text = Text(f"#{record.id} ", style="dim", no_wrap=True, overflow="ellipsis")
    text.append(one_line(masked(record.title, reveal=False), 60, style="bold"))
    text.append(literal(f"  {record.owner}/{record.topic} · {record.memory_type} · "))
    text.append(f"retrieved {record.retrieval_count:,} times")
    if record.is_protected:
        text.append(" · protected", style="bold")
    text.append(f"\n{change.pass_name}: ", style="bold")
    text.append(literal("; ".join(f"{name} {change_text(change, name)}" for name in change.fields)))
    text.append(literal(f"  ({change.reason})", "dim"))
    text.append("\nforecast if not recalled: ", style="bold")
    text.append(forecast_line(record, now))
    return text


def new_detail(memory: NewMemory) -> Text:
    """A merge's new memory: its title, content and where it comes from."""
    fields = memory.fields
    text = Text("new memory ", style="dim", no_wrap=True, overflow="ellipsis")
    text.append(one_line(masked(str(fields.get("title", "")), reveal=False), 80, style="bold"))
    members = fields.get("metadata", {}).get("consolidated_from", [])
    text.append(
        f"  merges {plural(len(members))}: "
        + ", ".join(f"#{i}" for i in members[:8])
        + (" …" if len(members) > 8 else "")
    )
    text.append("\n")
    text.append(one_line(masked(str(fields.get("content", "")), reveal=False), 230))
    text.append("\n")
    text.append(literal(memory.reason_text, "dim"))
    text.append(" · Enter or c: review the merges", style="dim")
    return text


def apply_question(request: PlanRequest, plan: Plan, left_out: int) -> Text:
    """What Apply will write, counted, and how to take it back."""
    text = Text()
    text.append(", ".join(request.passes), style="bold")
    text.append(f" ({request.policy}), evaluated {request.when}:\n")
    for (pass_name, kind), count in counts_by_pass(plan).items():
        text.append(f"  {pass_name}: {KIND_NAMES.get(kind, kind)} ")
        text.append(f"{count:,}\n", style="bold")
    if left_out:
        text.append(f"  left out by you: {plural(left_out)}\n")
    simulated = simulated_note(request.now, request.real_now) if request.simulated else ""
    if simulated:
        text.append(f"\nThis run is {simulated}, a simulated date", style="bold")
        text.append(
            ": its changes are written now, stamped with the clock, and the history shows "
            "the date they were evaluated as of.\n"
        )
    text.append(f"\n{plural(plan.changed)} change", style="bold")
    if plan.new_memories:
        text.append(f" and {len(plan.new_memories):,} new ones are added", style="bold")
    text.append(
        ". All of it is written in one transaction, with an event for each memory "
        "and a run record; if any of these memories changed since the plan was made, "
        "nothing is written. The runs screen (R) can undo the run."
    )
    return text
