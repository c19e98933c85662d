"""The runs screen: every applied maintenance run, its parameters and changes; undo one."""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

from rich.text import Text
from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.widgets import DataTable, Header, Static
from textual.widgets.button import ButtonVariant
from textual.worker import get_current_worker

from memory_console.literal import literal
from memory_console.maintenance import Run, list_runs
from memory_console.maintenance.console_reads import (
    run_change_count,
    run_changes,
    run_changes_before,
)

# From its module: once UndoReport is loaded, the package attribute `undo` is that module.
from memory_console.maintenance.undo import (
    MergeChoice,
    UndoCheck,
    UndoRefused,
    UndoReport,
    undo,
    undo_check,
)
from memory_console.store import EventRecord
from memory_console.tui.actions import plural
from memory_console.tui.formatting import masked, when
from memory_console.tui.run_text import SIMULATED_WIDTH, counts_text, evaluated_cell, run_facts
from memory_console.tui.screens.base import ConsoleScreen
from memory_console.tui.widgets.footer import FittedFooter
from memory_console.tui.widgets.literal_table import LiteralTable
from memory_console.tui.widgets.run_changes import RunChangesTable

RUN_LIMIT = 200
WINDOW = 100  # a run's changes shown at once


@dataclass
class RunsLoaded(Message):
    runs: list[Run]
    focus_id: int | None


@dataclass
class ChangesLoaded(Message):
    """A window of a run's changes with the titles of their memories."""

    run_id: int
    events: list[EventRecord]
    titles: dict[int, str]
    total: int
    first: int  # 0-based position of the window's first change in the run
    cursor: int


@dataclass
class UndoDone(Message):
    report: UndoReport


@dataclass
class UndoChecked(Message):
    """What undoing the run would meet now: the dialog says it and offers the ways on."""

    run: Run
    check: UndoCheck


@dataclass
class UndoStopped(Message):
    """The undo was refused and nothing changed."""

    refused: UndoRefused


class RunsScreen(ConsoleScreen):
    """Runs newest first; the one under the cursor in detail below."""

    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (100, "-wide")]

    BINDINGS = [
        Binding(
            "u",
            "undo_run",
            "Undo run",
            id="runs.undo",
            tooltip="Undo the run under the cursor (asks first; memories changed since "
            "stay as they are and are listed; later runs that block it can be undone first)",
        ),
        Binding(
            "tab",
            "app.focus_next",
            "Changes",
            id="runs.next",
            tooltip="Move between the runs and the changes of the run",
        ),
        Binding(
            "ctrl+r",
            "reload",
            "Reload",
            show=False,
            id="runs.reload",
            tooltip="Read the runs again",
        ),
        Binding("escape", "back", "Back", id="runs.back", tooltip="Back to where you were"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.runs: list[Run] = []
        self.window: ChangesLoaded | None = None
        self.undoing: int | None = None

    def compose(self) -> ComposeResult:
        yield Header()
        yield LiteralTable(id="runs-table", cursor_type="row", zebra_stripes=True)
        with Horizontal(id="runs-detail"):
            with VerticalScroll(id="runs-facts-box"):
                yield Static(id="runs-facts")
            with Vertical(id="runs-changes-box"):
                yield Static(id="runs-changes-head")
                yield RunChangesTable(id="runs-changes")
        yield FittedFooter()

    @property
    def table(self) -> DataTable[str | Text]:
        return self.query_one("#runs-table", DataTable)

    @property
    def current(self) -> Run | None:
        row = self.table.cursor_row
        return self.runs[row] if self.runs and 0 <= row < len(self.runs) else None

    def on_mount(self) -> None:
        self.sub_title = "maintenance runs"
        # Whether a run was undone and how much it changed come first: on a narrow
        # terminal the columns on the right are the ones scrolled out of sight.
        for key, label, width in (
            ("id", "run", 4),
            ("applied", "applied", 16),
            ("undone", "undone", 10),
            ("changed", "changed", 7),
            ("passes", "passes (policy)", 26),
            ("now", "evaluated", SIMULATED_WIDTH),
            ("counts", "counts", 20),
            ("ms", "ms", 6),
        ):
            self.table.add_column(label, key=key, width=width)
        self.table.focus()
        self.load_runs(None)

    def on_screen_resume(self) -> None:
        current = self.current
        self.load_runs(current.id if current is not None else None)

    def catch_up(self) -> bool:
        """Resuming reads the runs again anyway: only mark the outside change as seen."""
        self.seen_outside = self.context.outside
        return False

    def store_changed(self) -> None:
        self.action_reload()

    # -- loading --------------------------------------------------------------------------

    @work(thread=True, exclusive=True, exit_on_error=False, group="runs")
    def load_runs(self, focus_id: int | None) -> None:
        runs = list_runs(self.context.store, RUN_LIMIT)
        if not get_current_worker().is_cancelled:
            self.post_message(RunsLoaded(runs, focus_id))

    @on(RunsLoaded)
    def _runs_loaded(self, message: RunsLoaded) -> None:
        self.runs = message.runs
        table = self.table
        table.clear()
        for run in self.runs:
            undone = Text(when(run.undone_at)[:10], style="yellow") if run.undone else ""
            table.add_row(
                Text(str(run.id), justify="right"),
                when(run.started_at)[:16],
                undone,
                Text(f"{run.changed:,}", justify="right"),
                f"{', '.join(run.passes)} ({run.policy})",
                evaluated_cell(run),
                counts_text(run.counts),
                Text(f"{run.duration_ms:,}", justify="right"),
            )
        if not self.runs:
            self.query_one("#runs-facts", Static).update(
                Text(
                    "No run applied yet: m chooses passes, previews and applies them.", style="dim"
                )
            )
            self.query_one(RunChangesTable).show_events([], {})
            return
        row = next((i for i, r in enumerate(self.runs) if r.id == message.focus_id), 0)
        table.move_cursor(row=row, animate=False)
        self.show_run()

    @on(DataTable.RowHighlighted, "#runs-table")
    def _run_highlighted(self) -> None:
        self.show_run()

    def show_run(self) -> None:
        run = self.current
        if run is None:
            return
        self.query_one("#runs-facts", Static).update(run_facts(run))
        if self.window is None or self.window.run_id != run.id:
            self.load_changes(run.id, 0, None, 0)

    @work(thread=True, exclusive=True, exit_on_error=False, group="changes")
    def load_changes(
        self, run_id: int, first: int, before_event: int | None, after_event: int
    ) -> None:
        store = self.context.store
        if before_event is not None:
            events = run_changes_before(store, run_id, before_event, WINDOW)
        else:
            events = run_changes(store, run_id, after_event, WINDOW)
        total = run_change_count(store, run_id)
        records = store.get_many(sorted({e.memory_id for e in events}))
        titles = {i: masked(r.title, reveal=False) for i, r in records.items()}
        cursor = len(events) - 1 if before_event is not None else 0
        if not get_current_worker().is_cancelled:
            self.post_message(ChangesLoaded(run_id, events, titles, total, first, cursor))

    @on(ChangesLoaded)
    def _changes_loaded(self, message: ChangesLoaded) -> None:
        current = self.current
        if current is None or current.id != message.run_id:
            return
        self.window = message
        self.query_one(RunChangesTable).show_events(
            message.events, message.titles, cursor=message.cursor
        )
        end = message.first + len(message.events)
        where = f"{message.first + 1:,}-{end:,} of {message.total:,}" if message.events else "none"
        head = Text(f"changes of run {message.run_id}", style="bold")
        head.append(f" · {where} · Enter opens a memory's story", style="dim")
        self.query_one("#runs-changes-head", Static).update(head)

    @on(RunChangesTable.EdgeReached)
    def _edge(self, message: RunChangesTable.EdgeReached) -> None:
        window = self.window
        if window is None or not window.events:
            return
        end = window.first + len(window.events)
        if message.direction == "next" and end < window.total:
            self.load_changes(window.run_id, end, None, window.events[-1].id)
        elif message.direction == "previous" and window.first > 0:
            self.load_changes(window.run_id, max(0, window.first - WINDOW), window.events[0].id, 0)

    @on(RunChangesTable.Opened)
    def _opened(self, message: RunChangesTable.Opened) -> None:
        from memory_console.tui.screens.story import StoryScreen

        self.app.push_screen(StoryScreen(message.memory_id))

    # -- undo -----------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "undo_run":
            run = self.current
            if self.context.read_only or run is None or run.undone or self.undoing:
                return None
        return True

    def on_key(self, event: events.Key) -> None:
        """A dimmed Undo run still says why nothing happened."""
        if event.key == "u" and self.check_action("undo_run", ()) is None:
            run = self.current
            self.notify(
                "read-only store: undo is disabled (opened with --read-only)"
                if self.context.read_only
                else "this run is already undone"
                if run is not None and run.undone
                else "no run to undo here",
                severity="warning",
            )
            event.stop()

    def action_undo_run(self) -> None:
        run = self.current
        if run is None or run.undone:
            self.notify(
                "this run is already undone" if run else "no run to undo", severity="warning"
            )
            return
        self.check_undo(run)

    @work(thread=True, exclusive=True, exit_on_error=False, group="undo-check")
    def check_undo(self, run: Run) -> None:
        """What blocks the undo and which merged memories need a choice (read-only)."""
        check = undo_check(self.context.store, run.id)
        if not get_current_worker().is_cancelled:
            self.post_message(UndoChecked(run, check))

    @on(UndoChecked)
    def _undo_checked(self, message: UndoChecked) -> None:
        from memory_console.tui.screens.confirm import ChoiceScreen, ConfirmScreen

        run, check = message.run, message.check
        title = f"Undo run {run.id}?"
        if check.blocked_by:
            order = ", ".join(str(b.run_id) for b in check.blocked_by)
            body = Text(blocked_words(run.id, check))
            choices: list[tuple[str, str, ButtonVariant]] = [
                ("cascade", f"Undo {order}, then {run.id}", "warning")
            ]
            self.app.push_screen(
                ChoiceScreen(title, body, choices),
                lambda choice: self.begin_undo(run.id, cascade=True) if choice else None,
            )
            return
        if check.conflicts:
            choices = [
                ("keep-edit", "Keep the edits", "warning"),
                ("leave-merged", "Leave merged", "primary"),
            ]
            self.app.push_screen(
                ChoiceScreen(title, conflict_words(run, check), choices),
                lambda choice: self.begin_undo(run.id, merged_edits=choice) if choice else None,
            )
            return
        created = run.counts.get("created", 0)
        body = Text(
            f"Run {run.id} ({', '.join(run.passes)}, {when(run.started_at)}) changed "
            f"{plural(run.changed)}: {counts_text(run.counts)}.\n\n"
        )
        body.append(
            "Undo puts every field it changed back to its value before the run"
            + (f" and deletes the {created:,} memories it created" if created else "")
            + ", in one transaction. A memory changed since the run (recalled, edited) is "
            "left as it is and listed with the reason; if that leaves nothing to restore, "
            "the run stays as it is."
        )
        self.app.push_screen(
            ConfirmScreen(title, body, "Undo run", variant="warning"),
            lambda yes: self.begin_undo(run.id) if yes else None,
        )

    def begin_undo(
        self, run_id: int, *, cascade: bool = False, merged_edits: str | None = None
    ) -> None:
        self.undoing = run_id
        self.refresh_bindings()
        self.notify(f"undoing run {run_id}…", timeout=3)
        choice = cast("MergeChoice | None", merged_edits)
        self.undo_worker(run_id, self.context.action_moment(), cascade, choice)

    @work(thread=True, exclusive=True, exit_on_error=False, group="undo", name="undo")
    def undo_worker(
        self, run_id: int, moment: float, cascade: bool, merged_edits: MergeChoice | None
    ) -> None:
        try:
            report = undo(
                self.context.store, run_id, now=moment, cascade=cascade, merged_edits=merged_edits
            )
        except UndoRefused as refused:
            self.post_message(UndoStopped(refused))
            return
        self.post_message(UndoDone(report))

    @on(UndoStopped)
    def _undo_stopped(self, message: UndoStopped) -> None:
        self.undoing = None
        self.refresh_bindings()
        self.notify(
            str(message.refused), title="not undone", severity="error", timeout=15, markup=False
        )

    @on(UndoDone)
    def _undone(self, message: UndoDone) -> None:
        report = message.report
        self.undoing = None
        self.context.revision += 1
        text = "".join(f"run {done.run_id} undone first; " for done in report.cascade)
        text += f"run {report.run_id} undone: {plural(len(report.restored))} restored"
        if report.deleted:
            text += f", {plural(len(report.deleted))} it created deleted"
        if report.kept_edits:
            text += f", {plural(len(report.kept_edits))} merged and changed since kept"
        if report.left_merged:
            text += f", {len(report.left_merged):,} merged groups left merged"
        if report.not_restored:
            text += (
                f"; {plural(len(report.not_restored))} not restored (changed since): "
                "see the run's details"
            )
        self.notify(
            text,
            title="undone",
            severity="warning" if report.not_restored else "information",
            timeout=10,
        )
        self.window = None
        self.load_runs(report.run_id)

    def worker_failed(self, worker: object) -> None:
        self.undoing = None
        self.refresh_bindings()

    def action_reload(self) -> None:
        current = self.current
        self.window = None
        self.load_runs(current.id if current is not None else None)

    def action_back(self) -> None:
        self.app.pop_screen()


def blocked_words(run_id: int, check: UndoCheck) -> str:
    """Why a run cannot be undone alone, and the way on the dialog offers."""
    later = "; ".join(f"run {b.run_id} changed {b.memories:,} of them" for b in check.blocked_by)
    order = ", ".join(str(b.run_id) for b in check.blocked_by)
    return (
        f"Later runs changed memories that run {run_id} changed: {later}. Undoing run "
        f"{run_id} alone would restore none of those, so it is not done. Undo {order} "
        f"first (newest first), or here undo {order}, then {run_id}, in one transaction."
    )


def conflict_words(run: Run, check: UndoCheck) -> Text:
    """The merged memories changed since the run, and what each choice does."""
    text = Text(
        f"Run {run.id} merged memories that changed since ({len(check.conflicts):,}):",
        style="bold",
    )
    for conflict in check.conflicts[:8]:
        text.append("\n  ")
        text.append(literal(conflict.words()))
    if len(check.conflicts) > 8:
        text.append(f"\n  … and {len(check.conflicts) - 8:,} more", style="dim")
    text.append(
        "\n\nKeep the edits: the sources return and each changed merged memory stays as a "
        "memory of its own (marked kept_by_undo). Leave merged: those groups stay merged and "
        "the rest of the run is undone."
    )
    return text
