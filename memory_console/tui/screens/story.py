"""One memory's whole story, full screen: fields, content, confidence chart, history."""

from __future__ import annotations

import json

from rich.console import Group
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import DataTable, Header, Label, Static
from textual.worker import get_current_worker

from memory_console.describe import change_text, evaluated_note
from memory_console.literal import literal
from memory_console.store import EventRecord, MemoryRecord
from memory_console.tui.actions import DoneAction
from memory_console.tui.chart import build_chart, chart_legend
from memory_console.tui.formatting import masked, shown, shown_keywords, when
from memory_console.tui.messages import ChartBuilt, StoryLoaded
from memory_console.tui.screens.base import MEMORY_ACTION_BINDINGS, MemoryActionsScreen
from memory_console.tui.story_data import Story, floor_line, load_story
from memory_console.tui.widgets.chart import ConfidenceChart
from memory_console.tui.widgets.detail import fields_table, memory_fields
from memory_console.tui.widgets.footer import FittedFooter
from memory_console.tui.widgets.literal_table import LiteralTable

CHART_HEIGHT = 12
CHART_WIDTH = 60  # until the layout says how wide the chart's box is


ACTOR_MAX = 28  # a longer actor is cut in the table and shown whole below it


def history_change(event: EventRecord) -> str:
    """What an event changed, with the query or reason that caused it, and the date it was
    evaluated as of when a run was evaluated at a simulated date."""
    change = change_text(event)
    if event.query and event.query not in change:
        change = f"{change}  ({event.query})" if change else event.query
    return change + evaluated_note(event)


class StoryScreen(MemoryActionsScreen):
    """Everything about one memory; the same actions as the main screen apply to it."""

    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (110, "-wide")]
    BINDINGS = [
        Binding(
            "escape,backspace", "back", "Back", id="story.back", tooltip="Back to the memory list"
        ),
        *MEMORY_ACTION_BINDINGS,
    ]

    def __init__(self, memory_id: int, *, reveal: bool = False) -> None:
        super().__init__()
        self.memory_id = memory_id
        self.reveal = reveal
        self.story: Story | None = None
        self.chart_width = 0

    def compose(self) -> ComposeResult:
        yield Header()
        with VerticalScroll(id="story"):
            with Horizontal(id="story-top"):
                with Vertical(id="story-facts"):
                    yield Static(id="story-head")
                    yield Static(id="story-content")
                with Vertical(id="story-chart-box"):
                    yield Label("confidence: past and forecast", classes="section")
                    yield ConfidenceChart(id="story-chart")
                    yield Static(id="story-legend")
            yield Label("history", classes="section")
            yield Static(id="story-event")
            yield LiteralTable(id="story-history", cursor_type="row", zebra_stripes=True)
            yield Label("accesses (newest first)", classes="section")
            yield LiteralTable(id="story-accesses", cursor_type="row", zebra_stripes=True)
        yield FittedFooter()

    def on_mount(self) -> None:
        accesses = self.query_one("#story-accesses", DataTable)
        for name, width in (("at", 20), ("query", 30), ("scores", None)):
            accesses.add_column(name, key=name, width=width)
        self.query_one("#story", VerticalScroll).focus()
        self.fetch_story()

    @work(thread=True, exclusive=True, exit_on_error=False, group="story")
    def fetch_story(self) -> None:
        story = load_story(self.context.store, self.memory_id, self.context.now())
        if not get_current_worker().is_cancelled:
            self.post_message(StoryLoaded(story))

    @work(thread=True, exclusive=True, exit_on_error=False, group="chart")
    def fetch_chart(self, story: Story, width: int) -> None:
        chart = build_chart(story, width, CHART_HEIGHT)
        if not get_current_worker().is_cancelled:
            self.post_message(ChartBuilt(story.record.id, chart, width))

    @on(StoryLoaded)
    def _story_loaded(self, message: StoryLoaded) -> None:
        self.story = message.story
        self.render_story()
        self.call_after_refresh(self.request_chart)  # once laid out, the chart's width is known

    @on(ChartBuilt)
    def _chart_built(self, message: ChartBuilt) -> None:
        if self.story is not None and message.memory_id == self.story.record.id:
            self.query_one(ConfidenceChart).update(message.chart)

    def request_chart(self) -> None:
        if self.story is None:
            return
        width = self.query_one(ConfidenceChart).content_size.width or CHART_WIDTH
        self.chart_width = width
        self.fetch_chart(self.story, width)

    @on(ConfidenceChart.Resized)
    def _chart_resized(self, message: ConfidenceChart.Resized) -> None:
        if message.width and message.width != self.chart_width:
            self.request_chart()

    def render_story(self) -> None:
        story = self.story
        if story is None:
            return
        record = story.record
        self.sub_title = f"memory #{record.id}"
        title = Text(f"#{record.id} ", style="dim")
        title.append(shown(record.title, reveal=self.reveal, style="bold"))
        rows = memory_fields(record, story.supersedes, story.confidence_now, story.history)
        rows.append(("keywords", shown_keywords(record, reveal=self.reveal)))
        rows.append(("forecast", story.forecast_text))
        self.query_one("#story-head", Static).update(Group(title, fields_table(rows)))
        content = shown(record.content, reveal=self.reveal)
        if not self.reveal and masked(record.content, reveal=False) != record.content:
            content.append("\n(secrets masked: v reveals them)", style="italic dim")
        metadata = Text("\nmetadata: ", style="dim")
        metadata.append(shown(json.dumps(record.metadata, ensure_ascii=False), reveal=self.reveal))
        self.query_one("#story-content", Static).update(Group(content, metadata))
        legend = chart_legend(story)
        legend.append("\n")
        legend.append(floor_line(story), style="bold")
        self.query_one("#story-legend", Static).update(legend)
        self.fill_history(story)

    def fill_history(self, story: Story) -> None:
        history = self.query_one("#story-history", DataTable)
        row = history.cursor_row
        history.clear(columns=True)
        # The actor column is as wide as this story's longest actor (mcp:claude-desktop@alice),
        # within reason; the selected row is written out whole below the table anyway.
        actor = min(ACTOR_MAX, max([len("actor"), *(len(e.actor) for e in story.history)]))
        kind = max([len("kind"), *(len(e.kind) for e in story.history)])
        for name, width in (("at", 20), ("actor", actor), ("kind", kind), ("change", None)):
            history.add_column(name, key=name, width=width)
        for event in story.history:
            history.add_row(
                when(event.at),
                event.actor,
                event.kind,
                shown(history_change(event), reveal=self.reveal),
            )
        if story.history:
            history.move_cursor(row=max(0, min(row, len(story.history) - 1)), animate=False)
        self.show_event()
        accesses = self.query_one("#story-accesses", DataTable)
        accesses.clear()
        for event in story.accesses:
            scores = ", ".join(f"{k} {v}" for k, v in (event.scores or {}).items() if v is not None)
            accesses.add_row(when(event.at), shown(event.query or "", reveal=self.reveal), scores)
        if not story.accesses:
            accesses.add_row("never retrieved", "", "")

    @on(DataTable.RowHighlighted, "#story-history")
    def _event_highlighted(self) -> None:
        self.show_event()

    def show_event(self) -> None:
        """The history row under the cursor, whole, above the table: a change names fields
        such as last_accessed_at that the table's column cuts."""
        box = self.query_one("#story-event", Static)
        history = self.query_one("#story-history", DataTable)
        events = self.story.history if self.story is not None else []
        if not 0 <= history.cursor_row < len(events):
            box.update("")
            return
        event = events[history.cursor_row]
        text = Text(f"{when(event.at)} · ", style="dim")
        text.append(literal(event.actor, "bold"))
        text.append(f" · {event.kind}: ", style="dim")
        text.append(shown(history_change(event), reveal=self.reveal))
        box.update(text)

    # -- actions --------------------------------------------------------------------------

    def action_targets(self) -> list[int]:
        return [self.memory_id]

    def current_record(self) -> MemoryRecord | None:
        return self.story.record if self.story is not None else None

    def after_change(self, done: DoneAction, undo: bool) -> None:
        self.fetch_story()

    def store_changed(self) -> None:
        self.fetch_story()

    def after_purge(self, done: DoneAction) -> None:
        if self.memory_id in done.ids:
            self.app.pop_screen()  # its story is gone with it
        else:
            self.fetch_story()

    def action_back(self) -> None:
        self.app.pop_screen()

    def action_reveal(self) -> None:
        self.reveal = not self.reveal
        self.render_story()
