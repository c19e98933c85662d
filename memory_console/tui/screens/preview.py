"""The preview of a plan: counts, the confidence chart, every proposed change; edit and apply."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from rich.text import Text
from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.timer import Timer
from textual.widgets import Header, Input, Select, Static
from textual.worker import Worker, get_current_worker

from memory_console.maintenance import Plan, Run, StalePlanError, apply, plan
from memory_console.maintenance.changes import ChangeSet, NewMemory
from memory_console.maintenance.console_reads import (
    ReadCancelled,
    active_confidences,
    cancellable,
    private_reader,
)
from memory_console.maintenance.edits import (
    EditedPlan,
    PlanEdits,
    edit_plan,
    merge_groups,
    unedited,
)
from memory_console.maintenance.merge_command import merge_with_command, run_budget
from memory_console.maintenance.merge_review import merge_members, partial_plan
from memory_console.maintenance.passes.consolidate import (
    ConsolidateParams,
    ScopeGroups,
    merge_changes,
)
from memory_console.maintenance.supersede_review import supersessions
from memory_console.store import MemoryRecord
from memory_console.tui.actions import DoneAction, plural
from memory_console.tui.formatting import masked
from memory_console.tui.plan_chart import (
    Distribution,
    build_distribution_chart,
    distribution,
    distribution_legend,
)
from memory_console.tui.plan_request import PlanRequest
from memory_console.tui.plan_rows import SORT_NAMES, SORTS, ChangeRows, RowChange
from memory_console.tui.preview_text import (
    apply_question,
    detail_text,
    head_text,
    new_detail,
    warning_text,
)
from memory_console.tui.screens.base import MemoryActionsScreen
from memory_console.tui.widgets.change_table import ChangeTable
from memory_console.tui.widgets.chart import ConfidenceChart
from memory_console.tui.widgets.footer import FittedFooter
from memory_console.tui.widgets.literal_input import LiteralInput
from memory_console.tui.widgets.plan_counts import PlanCounts
from memory_console.tui.widgets.work_progress import WorkProgress

if TYPE_CHECKING:
    from memory_console.tui.screens.review import ReviewScreen

WINDOW = 100  # changes in the table at once; moving past either end shows the next ones
# Seconds between additions to a review open while planning goes on: each adds a list's worth
# of groups at once, so the review costs the planning thread little.
GROW_SECONDS = 0.5
CHART_HEIGHT = 9
LEFT_OUT = "left-out"
DEBOUNCE = 0.25


def reviewable(plan: Plan) -> bool:
    """Whether the plan proposes merges or supersessions (what the review shows)."""
    return bool(plan.new_memories) or bool(supersessions(plan))


TALL_ROWS = 30  # below this the chart gives way to the changes table


class PreviewScreen(MemoryActionsScreen):
    """Builds the plan in a worker (Escape cancels), then shows it; nothing is written until
    Apply, and then in one transaction."""

    VERTICAL_BREAKPOINTS = [(0, "-short"), (TALL_ROWS, "-tall")]
    BINDINGS = [
        Binding(
            "x",
            "exclude",
            "Exclude",
            id="preview.exclude",
            tooltip="Leave the marked memories (or this one) out of this run; again: "
            "take them back in",
        ),
        Binding(
            "X",
            "include_all",
            "Include all",
            show=False,
            id="preview.include_all",
            tooltip="Take every memory left out back into the plan",
        ),
        Binding(
            "p",
            "protect",
            "Protect",
            id="preview.protect",
            tooltip="Protect the marked memories (or this one) now, then plan again: "
            "no pass touches a protected memory",
        ),
        Binding(
            "P",
            "unprotect",
            "Unprotect",
            show=False,
            id="preview.unprotect",
            tooltip="Take the protection off, then plan again",
        ),
        Binding(
            "u",
            "undo",
            "Undo",
            show=False,
            id="preview.undo",
            tooltip="Take back the last protect made in this console, then plan again",
        ),
        Binding(
            "c",
            "review",
            "Merges",
            id="preview.review",
            tooltip="Review the proposed merges and supersessions: accept, reject or split each",
        ),
        Binding(
            "A",
            "apply",
            "Apply",
            id="preview.apply",
            tooltip="Apply this plan (asks first; one transaction; undo it from the runs screen)",
        ),
        Binding(
            "s",
            "sort",
            "Sort",
            id="preview.sort",
            tooltip="Next order: largest drop, id, pass, reason",
        ),
        Binding(
            "slash,ctrl+f",
            "filter",
            "Filter",
            show=False,
            id="preview.filter",
            tooltip="Filter the changes by words of their reason, or an id",
        ),
        Binding(
            "ctrl+r",
            "replan",
            "Plan again",
            show=False,
            id="preview.replan",
            tooltip="Plan again from the store as it is now (what you left out stays out)",
        ),
        Binding(
            "escape",
            "back",
            "Back",
            id="preview.back",
            tooltip="Cancel planning; clear the marks; back to the maintenance choices",
        ),
    ]

    @dataclass
    class PlanBuilt(Message):
        plan: Plan
        edited: EditedPlan
        rows: ChangeRows
        edits: PlanEdits

    @dataclass
    class PlanStep(Message):
        """Planning began a step: reading the store (number 0), or pass `number` of `total`."""

        step: str
        number: int
        total: int

    @dataclass
    class ScopePlanned(Message):
        """The merges planning found in one more owner and topic (scope `number` of `total`)."""

        number: int
        total: int
        new_memories: list[NewMemory]
        change: ChangeSet | None
        plan_id: int

    @dataclass
    class PlanEdited(Message):
        edited: EditedPlan
        edits: PlanEdits

    @dataclass
    class ConfidencesRead(Message):
        plan: Plan
        ids: np.ndarray
        confidence: np.ndarray

    @dataclass
    class ChartBuilt(Message):
        distribution: Distribution
        chart: Text
        width: int

    @dataclass
    class TitlesLoaded(Message):
        titles: dict[int, str]

    @dataclass
    class DetailLoaded(Message):
        record: MemoryRecord
        text: Text

    @dataclass
    class Applied(Message):
        run: Run
        merge_failures: str = ""  # why some merges kept their extractive words

    @dataclass
    class Stale(Message):
        error: StalePlanError

    @dataclass
    class ApplyProgress(Message):
        """Rows an apply has written (memories created and updated, events) of its total."""

        done: int
        total: int

        def can_replace(self, message: Message) -> bool:
            return isinstance(message, PreviewScreen.ApplyProgress)

    def __init__(self, request: PlanRequest) -> None:
        super().__init__()
        self.request = request
        self.base: Plan | None = None
        self.rows: ChangeRows | None = None
        self.edits = PlanEdits()
        self.edited: EditedPlan | None = None
        self.kept = np.zeros(0, dtype=bool)
        self.confidences: tuple[np.ndarray, np.ndarray] | None = None
        self.sort = "drop"
        self.order = np.zeros(0, dtype=np.int64)
        self.window_start = 0
        self.titles: dict[int, str] = {}
        self.record: MemoryRecord | None = None
        self.chart_width = 0
        self.applying = False
        self.planned_seconds: float | None = None
        self.filter_timer: Timer | None = None
        self.told_stale = False
        self.planned_revision = 0
        # Merges found so far by the plan being made, which the review shows before it ends.
        self.early_memories: list[NewMemory] = []
        self.early_changes: list[ChangeSet] = []
        self.scopes = (0, 0)
        self.plan_id = 0
        self.live_review: ReviewScreen | None = None
        self.handed = (0, 0)  # early memories and changes the review has been given
        self.grow_timer: Timer | None = None

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(id="preview-head")
        yield Static(id="preview-warning")
        yield WorkProgress(id="preview-progress")
        with Horizontal(id="preview-top"):
            yield PlanCounts(id="preview-counts")
            with Vertical(id="preview-chart-box"):
                yield ConfidenceChart(id="preview-chart")
                yield Static(id="preview-legend")
                yield Static(
                    f"The confidence chart needs a terminal of {TALL_ROWS} rows or more.",
                    id="preview-chart-note",
                )
        with Horizontal(id="preview-filters"):
            yield Select(
                [],
                prompt="every pass",
                id="preview-kind",
                compact=True,
                tooltip="Only the changes of one pass and kind, or those left out",
            )
            yield LiteralInput(
                placeholder="filter: reason words or an id",
                id="preview-text",
                compact=True,
                tooltip="Only changes whose reason holds these words",
            )
            yield Static(id="preview-position")
        yield ChangeTable(id="preview-changes")
        yield Static(id="preview-detail")
        yield FittedFooter()

    @property
    def table(self) -> ChangeTable:
        return self.query_one(ChangeTable)

    @property
    def progress(self) -> WorkProgress:
        return self.query_one(WorkProgress)

    def on_mount(self) -> None:
        self.sub_title = "maintenance preview"
        self.query_one("#preview-chart", ConfidenceChart).styles.height = CHART_HEIGHT
        self.query_one("#preview-head", Static).update(head_text(self.request, None))
        self.table.focus()
        self.start_plan()

    # -- planning -------------------------------------------------------------------------

    def start_plan(self) -> None:
        self.told_stale = False
        self.planned_revision = self.context.revision
        last = (
            f"the last plan took {self.planned_seconds:.1f} s"
            if self.planned_seconds is not None
            else ""
        )
        hint = "Escape cancels" + (f" · {last}" if last else "")
        self.progress.start(f"planning {', '.join(self.request.passes)}…", hint=hint)
        self.early_memories, self.early_changes, self.scopes = [], [], (0, 0)
        self.handed = (0, 0)
        self.stop_growing()
        self.plan_id += 1
        self.build_plan(self.request, self.edits, self.plan_id)
        self.refresh_bindings()

    def merge(self, ids: Any) -> dict[str, Any]:
        return merge_members(self.context.store, ids)

    @work(thread=True, exclusive=True, exit_on_error=False, group="plan")
    def build_plan(self, request: PlanRequest, edits: PlanEdits, plan_id: int) -> None:
        worker = get_current_worker()
        params = request.params()
        found = 0

        def heard(scope: ScopeGroups) -> None:
            # Worded here, in the worker: the review shows each scope's merges as they come.
            nonlocal found
            if not isinstance(scope, ScopeGroups) or worker.is_cancelled:
                return
            consolidate = params.of(ConsolidateParams)
            memories, change = merge_changes(scope.groups, consolidate, now, None, found + 1)
            found += len(memories)
            self.post_message(
                self.ScopePlanned(scope.number, scope.total, memories, change, plan_id)
            )

        now = request.now
        try:
            with private_reader(self.context.store) as reader:

                def step(name: str, number: int, total: int) -> None:
                    self.post_message(self.PlanStep(name, number, total))

                with cancellable(reader, lambda: worker.is_cancelled):
                    made = plan(reader, request.passes, params, now, step, heard)
                if worker.is_cancelled:
                    return  # a plan writes nothing: a cancelled one is simply dropped
                edited = edit_plan(made, edits, self.merge)
                self.post_message(self.PlanBuilt(made, edited, ChangeRows(made), edits))
                ids, confidence = active_confidences(reader)
        except ReadCancelled:
            return
        if not worker.is_cancelled:
            self.post_message(self.ConfidencesRead(made, ids, confidence))

    @on(PlanStep)
    def _plan_step(self, message: PlanStep) -> None:
        progress = self.progress
        if not progress.busy or self.applying:
            return
        if message.number == 0:
            progress.what = f"planning: reading the store for {message.total} passes…"
        else:
            progress.what = f"planning: pass {message.number} of {message.total}, {message.step}…"
        progress.tick()

    @on(ScopePlanned)
    def _scope_planned(self, message: ScopePlanned) -> None:
        if message.plan_id != self.plan_id or not self.progress.busy or self.applying:
            return
        self.early_memories.extend(message.new_memories)
        if message.change is not None:
            self.early_changes.append(message.change)
        self.scopes = (message.number, message.total)
        groups = len(self.early_memories)
        self.progress.what = (
            f"planning: consolidate, {message.number:,} of {message.total:,} scopes · "
            f"{groups:,} merge groups so far" + (" · c reviews them" if groups else "")
        )
        self.progress.tick()
        if groups == len(message.new_memories):
            self.refresh_bindings()  # the first groups: c reviews them
        review = self.live_review
        if review is None or not review.is_attached:
            return
        if not review.keys and message.new_memories:
            self.grow_review()  # a review still empty shows its first group at once
        elif self.grow_timer is None:
            self.grow_timer = self.set_timer(GROW_SECONDS, self.grow_review)

    def grow_review(self) -> None:
        """Hand the live review the merges found since it last grew."""
        self.grow_timer = None
        review = self.live_review
        if review is None or not review.is_attached or not self.progress.busy:
            return
        memories, changes = self.handed
        self.handed = (len(self.early_memories), len(self.early_changes))
        review.grow(
            self.early_plan(),
            self.early_memories[memories:],
            self.early_changes[changes:],
            self.scopes,
        )

    def stop_growing(self) -> None:
        if self.grow_timer is not None:
            self.grow_timer.stop()
            self.grow_timer = None

    def early_plan(self) -> Plan:
        return partial_plan(
            self.request.params(),
            self.request.now,
            self.context.store.identity,
            self.early_memories,
            self.early_changes,
        )

    @on(PlanBuilt)
    def _plan_built(self, message: PlanBuilt) -> None:
        self.stop_growing()
        review, self.live_review = self.live_review, None
        if review is not None and review.is_attached:
            review.finish(message.plan, message.edited if review.edits == message.edits else None)
        wanted = self.edits  # decisions a review took back here while planning went on
        self.planned_seconds = self.progress.stop()
        self.base, self.rows = message.plan, message.rows
        self.titles = {k: v for k, v in self.titles.items() if k >= 0}
        self.titles.update({m.key: str(m.fields.get("title", "")) for m in self.base.new_memories})
        self.confidences = None
        self.set_kinds()
        self.take_edits(message.edited, message.edits)
        if wanted != message.edits:
            self.edit(wanted)
        self.refresh_bindings()

    @on(ConfidencesRead)
    def _confidences(self, message: ConfidencesRead) -> None:
        if message.plan is self.base:
            self.confidences = (message.ids, message.confidence)
            self.request_chart()

    def take_edits(self, edited: EditedPlan, edits: PlanEdits) -> None:
        """Show the plan as edited: counts, marks, chart (the rows stay those proposed)."""
        if self.base is None or self.rows is None:
            return
        self.edited, self.edits = edited, edits
        self.kept = self.rows.kept_mask(edited.kept, edited.kept_new)
        left_out = len(edits.excluded | edits.apart)
        self.query_one(PlanCounts).show(self.base, edited.plan, left_out)
        self.query_one("#preview-head", Static).update(head_text(self.request, self.base))
        warning = self.query_one("#preview-warning", Static)
        warning.update(warning_text(self.base))
        warning.display = bool(warning_text(self.base).plain)
        self.apply_filter(keep_place=True)
        self.request_chart()

    def replan(self, why: str) -> None:
        if why:
            self.notify(why, title="planning again", timeout=4)
        self.start_plan()

    # -- edits ----------------------------------------------------------------------------

    def edit(self, edits: PlanEdits) -> None:
        if self.base is not None:
            self.edit_worker(self.base, edits)

    # A description of its own: Textual words a worker's arguments otherwise, and a plan's
    # words run to megabytes.
    @work(thread=True, exclusive=True, exit_on_error=False, group="edit", description="edit")
    def edit_worker(self, base: Plan, edits: PlanEdits) -> None:
        edited = edit_plan(base, edits, self.merge)
        if not get_current_worker().is_cancelled:
            self.post_message(self.PlanEdited(edited, edits))

    @on(PlanEdited)
    def _plan_edited(self, message: PlanEdited) -> None:
        if self.base is not None and message.edited.plan.planned_at == self.base.planned_at:
            self.take_edits(message.edited, message.edits)

    def action_exclude(self) -> None:
        ids = self.table.targets()
        if not ids:
            self.notify("no memory here to leave out", severity="warning")
            return
        edits = self.edits.toggle_excluded(ids)
        back = len(edits.excluded) < len(self.edits.excluded)
        self.notify(
            f"{plural(len(ids))} {'back in' if back else 'left out of'} this run", timeout=3
        )
        self.table.clear_selection()
        self.edit(edits)

    def action_include_all(self) -> None:
        if self.edits.excluded:
            self.notify(f"{plural(len(self.edits.excluded))} back in this run", timeout=3)
            self.edit(self.edits.include_all())

    def action_review(self) -> None:
        from memory_console.tui.screens.review import ReviewScreen

        def done(edits: PlanEdits) -> None:
            self.live_review = None
            self.stop_growing()
            if edits == self.edits:
                return
            if self.progress.busy and not self.applying:
                self.edits = edits  # the plan being made takes them when it is done
            else:
                self.edit(edits)

        if self.progress.busy and not self.applying and self.early_memories:
            # The plan is still being made: review the merges found so far as the rest arrive.
            early = self.early_plan()
            self.handed = (len(self.early_memories), len(self.early_changes))
            edited = (
                unedited(early, merge_groups(early))
                if self.edits.is_empty
                else edit_plan(early, self.edits, self.merge)
            )
            self.live_review = ReviewScreen(early, edited, self.edits, done, scopes=self.scopes)
            self.app.push_screen(self.live_review)
            return
        if self.base is None or self.edited is None or not reviewable(self.base):
            self.notify("this plan merges and supersedes nothing", severity="warning")
            return
        focus = self.table.current.id if self.table.current is not None else None
        self.app.push_screen(ReviewScreen(self.base, self.edited, self.edits, done, focus))

    # -- the table ------------------------------------------------------------------------

    def set_kinds(self) -> None:
        assert self.rows is not None
        select = self.query_one("#preview-kind", Select)
        current = select.value
        options = [*self.rows.kinds(), (LEFT_OUT, "left out")]
        with self.prevent(Select.Changed):
            select.set_options([(label, value) for value, label in options])
            if current in dict(options):
                select.value = current

    def apply_filter(self, *, keep_place: bool = False) -> None:
        if self.rows is None:
            return
        kind: Any = self.query_one("#preview-kind", Select).value
        chosen = None if kind is Select.NULL or kind == LEFT_OUT else str(kind)
        text = self.query_one("#preview-text", Input).value
        mask = self.rows.matching(chosen, text, self.kept, left_out=kind == LEFT_OUT)
        self.order = self.rows.order(self.sort, mask)
        if not keep_place or self.window_start >= len(self.order):
            self.window_start = 0
        self.show_window(self.table.cursor_row if keep_place else 0)

    def show_window(self, cursor: int = 0) -> None:
        if self.rows is None:
            return
        positions = self.order[self.window_start : self.window_start + WINDOW].tolist()
        changes = [self.rows.change(p) for p in positions]
        left_out = {i for i, p in enumerate(positions) if not self.kept[p]}
        self.table.show_window(changes, left_out, cursor=cursor)
        missing = [c.id for c in changes if c.id >= 0 and c.id not in self.titles]
        self.table.show_titles(self.titles)
        if missing:
            self.load_titles(missing)
        self.show_position()

    def show_position(self) -> None:
        total = len(self.order)
        end = min(total, self.window_start + WINDOW)
        where = f"{self.window_start + 1:,}-{end:,} of {total:,}" if total else "no changes"
        line = f"{where} · by {SORT_NAMES[self.sort]}"
        if self.table.selected:
            line += f" · {len(self.table.selected):,} marked"
        self.query_one("#preview-position", Static).update(Text(line, style="dim"))

    @work(thread=True, exclusive=True, exit_on_error=False, group="titles")
    def load_titles(self, ids: list[int]) -> None:
        records = self.context.store.get_many(ids)
        titles = {i: masked(r.title, reveal=False) for i, r in records.items()}
        titles.update({i: "(no longer in the store)" for i in ids if i not in records})
        if not get_current_worker().is_cancelled:
            self.post_message(self.TitlesLoaded(titles))

    @on(TitlesLoaded)
    def _titles(self, message: TitlesLoaded) -> None:
        if len(self.titles) > 20 * WINDOW:
            self.titles = {k: v for k, v in self.titles.items() if k < 0}
        self.titles.update(message.titles)
        self.table.show_titles(self.titles)

    @on(Select.Changed, "#preview-kind")
    def _kind_changed(self) -> None:
        self.apply_filter()

    @on(Input.Changed, "#preview-text")
    def _text_changed(self) -> None:
        if self.filter_timer is not None:
            self.filter_timer.stop()
        self.filter_timer = self.set_timer(DEBOUNCE, self.apply_filter)

    @on(Input.Submitted, "#preview-text")
    def _text_submitted(self) -> None:
        self.apply_filter()
        self.table.focus()

    @on(ChangeTable.EdgeReached)
    def _edge(self, message: ChangeTable.EdgeReached) -> None:
        total = len(self.order)
        if message.direction == "next" and self.window_start + WINDOW < total:
            self.window_start += WINDOW
            self.show_window(0)
        elif message.direction == "previous" and self.window_start > 0:
            self.window_start = max(0, self.window_start - WINDOW)
            self.show_window(WINDOW - 1)
        elif message.direction == "first":
            self.window_start = 0
            self.show_window(0)
        elif message.direction == "last" and total:
            self.window_start = (total - 1) // WINDOW * WINDOW
            self.show_window(total - 1 - self.window_start)

    @on(ChangeTable.SortRequested)
    def _sort_requested(self, message: ChangeTable.SortRequested) -> None:
        wanted = {"id": "id", "pass": "pass", "reason": "reason", "change": "drop"}
        if message.column in wanted:
            self.sort = wanted[message.column]
            self.apply_filter()

    @on(ChangeTable.SelectionChanged)
    def _selection(self) -> None:
        self.show_position()
        self.refresh_bindings()

    @on(ChangeTable.Highlighted)
    def _highlighted(self, message: ChangeTable.Highlighted) -> None:
        detail = self.query_one("#preview-detail", Static)
        change = message.change
        self.record = None
        if change is None:
            detail.update("")
        elif change.is_new:
            memory = (
                next((m for m in self.base.new_memories if m.key == change.id), None)
                if self.base is not None
                else None
            )
            detail.update(new_detail(memory) if memory is not None else "")
        else:
            self.load_detail(change)

    @work(thread=True, exclusive=True, exit_on_error=False, group="detail")
    def load_detail(self, change: RowChange) -> None:
        record = self.context.store.get(change.id)
        if record is None or get_current_worker().is_cancelled:
            return
        text = detail_text(record, change, self.request.now)
        self.post_message(self.DetailLoaded(record, text))

    @on(DetailLoaded)
    def _detail(self, message: DetailLoaded) -> None:
        current = self.table.current
        if current is not None and current.id == message.record.id:
            self.record = message.record
            self.query_one("#preview-detail", Static).update(message.text)

    @on(ChangeTable.Opened)
    def _opened(self, message: ChangeTable.Opened) -> None:
        if message.change.is_new:
            self.action_review()
            return
        from memory_console.tui.screens.story import StoryScreen

        self.app.push_screen(StoryScreen(message.change.id))

    def action_sort(self) -> None:
        self.sort = SORTS[(SORTS.index(self.sort) + 1) % len(SORTS)]
        self.notify(f"sorted by {SORT_NAMES[self.sort]}", timeout=2)
        self.apply_filter()

    def action_filter(self) -> None:
        self.query_one("#preview-text", Input).focus()

    # -- the chart ------------------------------------------------------------------------

    def request_chart(self) -> None:
        if self.confidences is None or self.edited is None:
            return
        width = self.query_one(ConfidenceChart).content_size.width or 60
        self.chart_width = width
        ids, confidence = self.confidences
        self.build_chart(ids, confidence, self.edited.plan, width)

    @work(thread=True, exclusive=True, exit_on_error=False, group="chart", description="chart")
    def build_chart(
        self, ids: np.ndarray, confidence: np.ndarray, edited: Plan, width: int
    ) -> None:
        spread = distribution(ids, confidence, edited)
        chart = build_distribution_chart(spread, width, CHART_HEIGHT)
        if not get_current_worker().is_cancelled:
            self.post_message(self.ChartBuilt(spread, chart, width))

    @on(ChartBuilt)
    def _chart_built(self, message: ChartBuilt) -> None:
        self.query_one(ConfidenceChart).update(message.chart)
        self.query_one("#preview-legend", Static).update(distribution_legend(message.distribution))

    @on(ConfidenceChart.Resized)
    def _chart_resized(self, message: ConfidenceChart.Resized) -> None:
        if message.width and message.width != self.chart_width:
            self.request_chart()

    # -- apply ----------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        ready = self.edited is not None and not self.progress.busy
        if action == "apply":
            if self.context.read_only or not ready or self.edited is None:
                return None
            return None if self.edited.plan.is_empty else True
        if action == "review":
            early = self.progress.busy and not self.applying and bool(self.early_memories)
            return bool(early or (self.base is not None and reviewable(self.base))) or None
        if action in ("exclude", "include_all", "sort", "filter"):
            return True if ready else None
        return super().check_action(action, parameters)

    def on_key(self, event: events.Key) -> None:
        """A dimmed Apply still says why nothing happened."""
        super().on_key(event)
        if event.key == "A" and self.check_action("apply", ()) is None:
            if self.context.read_only:
                why = "read-only store: apply is disabled (opened with --read-only)"
            elif self.edited is not None and not self.progress.busy:
                why = "this plan changes nothing"
            else:
                why = "the plan is not ready yet"
            self.notify(why, severity="warning")
            event.stop()

    def action_apply(self) -> None:
        from memory_console.tui.screens.confirm import ConfirmScreen

        if self.edited is None or self.edited.plan.is_empty or self.base is None:
            self.notify("nothing to apply", severity="warning")
            return
        edited = self.edited.plan

        def answered(yes: bool | None) -> None:
            if yes:
                self.applying = True
                self.progress.start(
                    f"applying {plural(edited.changed)} in one transaction…",
                    hint="writes all of it or nothing",
                )
                self.refresh_bindings()
                self.apply_worker(edited)

        left_out = len(self.edits.excluded | self.edits.apart)
        self.app.push_screen(
            ConfirmScreen(
                "Apply this plan?",
                apply_question(self.request, edited, left_out),
                "Apply",
                variant="warning",
            ),
            answered,
        )

    @work(
        thread=True,
        exclusive=True,
        exit_on_error=False,
        group="apply",
        name="apply",
        description="apply",
    )
    def apply_worker(self, edited: Plan, skip_stale: bool = False) -> None:
        """The merge command (if any) words the merges first, outside the transaction,
        within the settings' budget for the whole apply."""
        store = self.context.store
        settings = self.context.settings
        merges = merge_with_command(store, edited, settings.merge_command, run_budget(settings))

        def written(done: int, total: int) -> None:
            self.post_message(self.ApplyProgress(done, total))

        try:
            run = apply(store, merges.plan, actor="tui", skip_stale=skip_stale, progress=written)
        except StalePlanError as error:
            self.post_message(self.Stale(error))
            return
        self.post_message(self.Applied(run, merges.summary))

    @on(ApplyProgress)
    def _apply_progress(self, message: ApplyProgress) -> None:
        if not self.applying or not self.progress.busy:
            return
        share = message.done * 100 // max(message.total, 1)
        self.progress.what = (
            f"applying in one transaction: {message.done:,} of {message.total:,} rows "
            f"written ({share}%)…"
        )
        self.progress.tick()

    @on(Applied)
    def _applied(self, message: Applied) -> None:
        run = message.run
        self.progress.stop()
        self.applying = False
        self.context.revision += 1
        counts = ", ".join(f"{kind} {count:,}" for kind, count in run.counts.items())
        self.notify(
            f"run {run.id}: {counts} ({plural(run.changed)}) in "
            f"{run.duration_ms:,} ms · R lists runs, u there undoes one",
            title="applied",
            timeout=10,
        )
        if message.merge_failures:
            self.notify(message.merge_failures, title="merge command", severity="warning")
        self.app.pop_screen()

    @on(Stale)
    def _stale(self, message: Stale) -> None:
        from memory_console.tui.screens.confirm import ChoiceScreen

        self.progress.stop()
        self.applying = False
        self.refresh_bindings()
        error = message.error
        body = (
            f"{error.stale:,} of the {error.total:,} memories this plan changes were "
            "changed since it was made (recalled by an agent, edited or protected). "
            "Applying it would overwrite those changes, so nothing was written.\n\n"
            "Plan again from the store as it is now (what you left out stays out), or "
            "apply the rest: the changed memories are skipped (and a merge group with one "
            "of them), the run lists them, and the next run takes them up."
        )

        def answered(choice: str | None) -> None:
            if choice == "replan":
                self.replan("")
            elif choice == "rest" and self.edited is not None:
                self.applying = True
                self.progress.start(
                    "applying the rest in one transaction…",
                    hint="memories changed since the plan are skipped",
                )
                self.refresh_bindings()
                self.apply_worker(self.edited.plan, True)

        self.app.push_screen(
            ChoiceScreen(
                "The plan is out of date",
                body,
                [("replan", "Plan again", "primary"), ("rest", "Apply the rest", "warning")],
            ),
            answered,
        )

    def worker_failed(self, worker: Worker[Any]) -> None:
        super().worker_failed(worker)
        if worker.group in ("plan", "apply"):
            self.progress.stop()
            self.applying = False
            self.refresh_bindings()

    # -- memory actions and leaving ---------------------------------------------------------

    def action_targets(self) -> list[int]:
        return self.table.targets()

    def current_record(self) -> MemoryRecord | None:
        return self.record

    def after_change(self, done: DoneAction, undo: bool) -> None:
        self.table.clear_selection()
        self.replan("the store changed: a new plan leaves protected memories alone")

    def on_screen_suspend(self) -> None:
        self.progress.hold(True)

    def on_screen_resume(self) -> None:
        self.progress.hold(False)
        # Back from a memory's story where the operator acted: the plan must see that.
        if self.planned_revision != self.context.revision and self.base is not None:
            self.replan("a memory changed: planning again")

    def store_changed(self) -> None:
        # A plan is one state of the store; apply refuses a stale one and says what changed.
        if self.base is not None and not self.told_stale:
            self.told_stale = True
            self.notify(
                "another process changed the store since this plan: ctrl+r plans again",
                timeout=6,
            )

    def action_replan(self) -> None:
        if not self.applying:
            self.replan("")

    def action_back(self) -> None:
        if self.applying:
            self.notify(
                "applying cannot be interrupted: it writes all of it or nothing", severity="warning"
            )
        elif self.progress.busy:
            self.workers.cancel_group(self, "plan")
            self.progress.stop()
            self.refresh_bindings()
            if self.base is None:
                self.app.pop_screen()
            else:
                self.notify(
                    "planning cancelled: this preview is the previous plan", severity="warning"
                )
        elif self.focused is not self.table:
            self.table.focus()
        elif not self.table.clear_selection():
            self.app.pop_screen()
