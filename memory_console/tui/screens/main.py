"""The main screen: topics tree, the paged memory table, the detail pane, filters and search."""

from __future__ import annotations

from dataclasses import replace

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Header
from textual.worker import get_current_worker

from memory_console.embed.hits import SearchHit
from memory_console.store import MemoryFilter, MemoryRecord
from memory_console.tui.actions import DoneAction, plural
from memory_console.tui.messages import (
    CountLoaded,
    PageLoaded,
    SearchDone,
    StoryLoaded,
    TopicsLoaded,
)
from memory_console.tui.paging import Pager, PageSlice, View
from memory_console.tui.screens.base import MEMORY_ACTION_BINDINGS, MemoryActionsScreen
from memory_console.tui.story_data import load_story
from memory_console.tui.widgets.detail import DetailPane
from memory_console.tui.widgets.filter_bar import FilterBar, FilterValues
from memory_console.tui.widgets.footer import FittedFooter
from memory_console.tui.widgets.memory_table import MemoryTable
from memory_console.tui.widgets.search_bar import SearchBar
from memory_console.tui.widgets.search_readiness import SearchReadiness
from memory_console.tui.widgets.status_line import SORT_NAMES, StatusLine
from memory_console.tui.widgets.topics import Place, TopicsTree

SEARCH_LIMIT = 100


def search_fallback(engine: object, hits: object) -> str | None:
    """The engine's sentence saying its last results are keyword matches only (a field of the
    result or of the engine, or a method of the engine), else None."""
    value = getattr(hits, "fallback", None) or getattr(engine, "fallback", None)
    if callable(value):
        value = value()
    return value if isinstance(value, str) and value else None


class MainScreen(MemoryActionsScreen):
    """Browse, filter, search and act on memories."""

    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (100, "-medium"), (150, "-wide")]
    BINDINGS = [
        Binding(
            "question_mark",
            "app.help",
            "Help",
            id="main.help",
            tooltip="Every key and what the console's words mean",
        ),
        Binding(
            "slash",
            "search",
            "Search",
            id="main.search",
            tooltip="Search memories (keyword, or hybrid once the embedder is ready)",
        ),
        *MEMORY_ACTION_BINDINGS,
        Binding("s", "sort", "Sort", id="main.sort", tooltip="Choose the column to sort by"),
        Binding(
            "ctrl+f",
            "filter",
            "Filter",
            show=False,
            id="main.filter",
            tooltip="Go to the filter bar (text, status, type, tier, owner, confidence)",
        ),
        Binding(
            "t", "topics", "Topics", show=False, id="main.topics", tooltip="Go to the topics tree"
        ),
        Binding(
            "escape",
            "back",
            "Back",
            id="main.back",
            tooltip="Back to the memory list; clear the selection; leave search results",
        ),
        Binding(
            "ctrl+r",
            "reload",
            "Reload",
            show=False,
            id="main.reload",
            tooltip="Read the store again (changes made by other programs)",
        ),
    ]

    def __init__(self, figure: tuple[MemoryFilter, str] | None = None) -> None:
        """`figure`: the memories behind a figure of another screen (the health screen),
        shown on a main screen of their own over it; Escape goes back to that screen."""
        super().__init__()
        self.figure = figure
        self.view = View()
        self.place: Place = (None, None, None)
        self.page: PageSlice | None = None
        self.page_confidence_now: dict[int, float] = {}  # the page's rows', by id
        self.count: int | None = None
        self.search: tuple[str, str, list[SearchHit]] | None = None
        self.seen_revision = 0
        self.semantic_waiting = True  # the embedder starts once the first screen is drawn
        self.paging: str | None = None  # "next"/"previous" while that page is being read
        self.pending_moves = 0  # further moves the person made past the edge meanwhile
        self.origin: str | None = None  # the figure of another screen the table shows
        self.marking = False  # the next rows shown follow another process's change: mark it

    @property
    def pager(self) -> Pager:
        return Pager(self.context.store, self.context.settings.page_size)

    def compose(self) -> ComposeResult:
        yield Header()
        yield FilterBar(id="filters")
        yield SearchBar(id="search")
        with Horizontal(id="body"):
            yield TopicsTree(id="topics")
            with Vertical(id="browser"):
                yield MemoryTable(id="memories")
                yield DetailPane(id="detail")
        with Horizontal(id="status-bar"):
            yield StatusLine(id="status")
            yield SearchReadiness(id="search-readiness")
        yield FittedFooter()

    @property
    def table(self) -> MemoryTable:
        return self.query_one("#memories", MemoryTable)

    @property
    def status(self) -> StatusLine:
        return self.query_one("#status", StatusLine)

    def on_mount(self) -> None:
        self.table.sort_key, self.table.descending = self.view.sort, self.view.descending
        self.table.focus()
        self.seen_revision = self.context.revision
        if self.figure is not None:
            self.load_topics(self.figure[0].status)
            self.show_memories(*self.figure)
            return
        self.load("first")
        self.load_count(self.view)
        self.load_topics(self.view.memory_filter.status)

    def on_screen_resume(self) -> None:
        if not self.catch_up() and self.context.revision != self.seen_revision:
            self.refresh_after_change()

    def store_changed(self) -> None:
        self.marking = True
        self.refresh_after_change()

    # -- loading --------------------------------------------------------------------------

    def load(
        self,
        how: str,
        *,
        focus_id: int | None = None,
        focus_end: bool = False,
        focus_before: int | None = None,
        focus_row: int | None = None,
    ) -> None:
        self.fetch_page(
            how, self.view, self.page, focus_id, focus_end, focus_before, self.count, focus_row
        )

    @work(thread=True, exclusive=True, exit_on_error=False, group="page")
    def fetch_page(
        self,
        how: str,
        view: View,
        current: PageSlice | None,
        focus_id: int | None,
        focus_end: bool,
        focus_before: int | None,
        count: int | None,
        focus_row: int | None = None,
    ) -> None:
        pager = self.pager
        if how == "next" and current is not None:
            page = pager.next(current)
        elif how == "previous" and current is not None:
            page = pager.previous(current)
        elif how == "last":
            pages = None if count is None else max(1, -(-count // pager.page_size))
            page = pager.last(view, pages)
        elif how == "reload" and current is not None and current.view == view:
            page = pager.reload(current)
        else:
            page = pager.first(view)
        if focus_before is not None:
            index = next((i for i, r in enumerate(page.rows) if r.id == focus_before), None)
            if index is not None and index > 0:
                focus_id = page.rows[index - 1].id
            elif index is None:
                focus_end = True
        values = pager.confidence_now(page.rows, self.context.now())
        if not get_current_worker().is_cancelled:
            self.post_message(PageLoaded(page, focus_id, focus_end, focus_row, values))

    @work(thread=True, exclusive=True, exit_on_error=False, group="count")
    def load_count(self, view: View) -> None:
        count = self.context.store.count(view.memory_filter)
        if not get_current_worker().is_cancelled:
            self.post_message(CountLoaded(view, count))

    @work(thread=True, exclusive=True, exit_on_error=False, group="topics")
    def load_topics(self, status: str | None) -> None:
        rows = self.context.store.place_counts(MemoryFilter(status=status))
        if not get_current_worker().is_cancelled:
            self.post_message(TopicsLoaded(rows))

    @work(thread=True, exclusive=True, exit_on_error=False, group="detail")
    def load_detail(self, memory_id: int) -> None:
        story = load_story(self.context.store, memory_id, self.context.now())
        if not get_current_worker().is_cancelled:
            self.post_message(StoryLoaded(story))

    @work(thread=True, exclusive=True, exit_on_error=False, group="search")
    def run_search(self, query: str, memory_filter: MemoryFilter) -> None:
        engine = self.context.search
        mode = engine.default_mode()
        hits = engine.search(
            query, mode=mode, k=SEARCH_LIMIT, memory_filter=memory_filter, now=self.context.now()
        )
        records = [hit.record for hit in hits]
        values = self.pager.confidence_now(records, self.context.now())
        if not get_current_worker().is_cancelled:
            fallback = search_fallback(engine, hits)
            self.post_message(SearchDone(query, mode, hits, fallback, values))

    @on(PageLoaded)
    def _page_loaded(self, message: PageLoaded) -> None:
        if message.page.view != self.view:
            return
        self.page = message.page
        self.page_confidence_now = message.confidence_now
        moves = self.pending_moves if self.paging == "next" else -self.pending_moves
        self.paging, self.pending_moves = None, 0
        marking, self.marking = self.marking, False
        if self.search is None:
            self.table.show_records(
                message.page.rows,
                focus_id=message.focus_id,
                focus_end=message.focus_end,
                moves=moves,
                focus_row=message.focus_row,
                mark_changes=marking,
                confidence_now=message.confidence_now,
            )
        if not message.page.rows:
            self.start_semantic()
        self.show_position()

    @on(CountLoaded)
    def _count_loaded(self, message: CountLoaded) -> None:
        if message.view.memory_filter == self.view.memory_filter:
            self.count = message.count
            self.show_position()

    @on(TopicsLoaded)
    def _topics_loaded(self, message: TopicsLoaded) -> None:
        self.query_one(TopicsTree).show_counts(message.counts, self.place)
        owners = sorted({row.owner for row in message.counts})
        self.query_one(FilterBar).set_owners(owners)

    @on(StoryLoaded)
    def _story_loaded(self, message: StoryLoaded) -> None:
        self.query_one(DetailPane).show_story(message.story)
        self.start_semantic()

    def start_semantic(self) -> None:
        """Load the embedder in the background once the first screen is complete."""
        if self.semantic_waiting:
            self.semantic_waiting = False
            if self.console_app.semantic:
                self.call_after_refresh(self.query_one(SearchReadiness).start)

    @on(SearchDone)
    def _search_done(self, message: SearchDone) -> None:
        if self.search is None and not self.query_one(SearchBar).display:
            return
        self.search = (message.query, message.mode, message.hits)
        self.query_one(SearchBar).show_fallback(message.fallback)
        focus = self.table.current.id if self.table.current and self.table.search_mode else None
        row = self.table.cursor_row if focus is not None else None
        marking, self.marking = self.marking, False
        self.table.show_records(
            [hit.record for hit in message.hits],
            hits=message.hits,
            focus_id=focus,
            focus_row=row,
            mark_changes=marking and self.table.search_mode,
            confidence_now=message.confidence_now,
        )
        self.table.focus()
        self.show_position()
        self.refresh_bindings()

    def show_position(self) -> None:
        table = self.table
        parts: list[str] = []
        if self.search is not None:
            query, mode, hits = self.search
            parts.append(f"{len(hits):,} results for “{query}” ({mode})")
            parts.append("Escape: back to browsing")
        else:
            if self.origin is not None:
                parts.append(self.origin)
            parts.append("… memories" if self.count is None else plural(self.count))
            if self.page is not None and self.page.number is not None:
                total = ""
                if self.count is not None:
                    total = f"/{max(1, -(-self.count // self.pager.page_size)):,}"
                parts.append(f"page {self.page.number:,}{total}")
            arrow = "▼" if self.view.descending else "▲"
            parts.append(f"by {SORT_NAMES[self.view.sort]} {arrow}")
        if table.selected:
            parts.append(f"{len(table.selected):,} selected")
        if self.context.read_only:
            parts.append("read-only")
        self.status.show_position(" · ".join(parts))

    # -- table events ---------------------------------------------------------------------

    @on(MemoryTable.Highlighted)
    def _highlighted(self, message: MemoryTable.Highlighted) -> None:
        record = message.record
        hit = self.table.hits.get(record.id) if record is not None else None
        self.query_one(DetailPane).show(record, hit, waiting=not self.table.loaded)
        if record is not None:
            self.load_detail(record.id)

    @on(MemoryTable.EdgeReached)
    def _edge(self, message: MemoryTable.EdgeReached) -> None:
        if self.search is not None or self.page is None:
            return
        if self.paging == message.direction:
            self.pending_moves += 1  # keys held down while the page is read still count
            return
        if message.direction == "next" and self.page.has_next:
            self.paging, self.pending_moves = "next", 0
            self.load("next")
        elif message.direction == "previous" and self.page.has_previous:
            self.paging, self.pending_moves = "previous", 0
            first = self.page.rows[0].id if self.page.rows else None
            self.load("previous", focus_before=first)
        elif message.direction == "first":
            self.load("first")
        elif message.direction == "last":
            self.load("last", focus_end=True)

    @on(MemoryTable.Opened)
    def _opened(self, message: MemoryTable.Opened) -> None:
        from memory_console.tui.screens.story import StoryScreen

        self.app.push_screen(StoryScreen(message.record.id, reveal=self.table.reveal))

    @on(MemoryTable.SortRequested)
    def _sort_requested(self, message: MemoryTable.SortRequested) -> None:
        from memory_console.tui.screens.sort import next_order

        self.set_order(*next_order(message.sort, self.view.sort, self.view.descending))

    @on(MemoryTable.SelectionChanged)
    def _selection_changed(self) -> None:
        self.show_position()
        self.refresh_bindings()

    # -- filters, topics, order -----------------------------------------------------------

    @on(FilterBar.Changed)
    def _filters_changed(self, message: FilterBar.Changed) -> None:
        self.set_filter(message.values, *self.place[1:])

    @on(TopicsTree.Chosen)
    def _topic_chosen(self, message: TopicsTree.Chosen) -> None:
        if message.topic is not None:
            self.table.focus()  # a topic chosen: on to its memories
        self.place = (message.owner, message.namespace_path, message.topic)
        bar = self.query_one(FilterBar)
        bar.set_owner(message.owner)
        self.set_filter(
            replace(bar.values, owner=message.owner), message.namespace_path, message.topic
        )

    def set_filter(self, values: FilterValues, namespace: str | None, topic: str | None) -> None:
        memory_filter = MemoryFilter(
            owner=values.owner,
            namespace=namespace,
            topic=topic,
            tier=values.tier,
            memory_type=values.memory_type,
            status=values.status,
            min_confidence=values.min_confidence,
            max_confidence=values.max_confidence,
            text=values.text,
            actor=values.actor,
        )
        if memory_filter == self.view.memory_filter:
            return
        self.origin = None
        status_changed = memory_filter.status != self.view.memory_filter.status
        self.view = replace(self.view, memory_filter=memory_filter)
        self.reset_view()
        if status_changed:
            self.load_topics(memory_filter.status)

    def show_memories(self, memory_filter: MemoryFilter, label: str) -> None:
        """Show the memories behind a figure of another screen (the health screen); the
        filter bar follows where it can, and any change there starts from it again."""
        bar = self.query_one(FilterBar)
        bar.set_status(memory_filter.status)
        bar.set_owner(memory_filter.owner)
        self.place = (memory_filter.owner, memory_filter.namespace, memory_filter.topic)
        self.origin = label
        status_changed = memory_filter.status != self.view.memory_filter.status
        self.view = replace(self.view, memory_filter=memory_filter)
        self.reset_view()
        if status_changed:
            self.load_topics(memory_filter.status)
        self.table.focus()

    def set_order(self, sort: str, descending: bool) -> None:
        self.view = replace(self.view, sort=sort, descending=descending)
        self.table.sort_key, self.table.descending = sort, descending
        current = self.table.current
        self.reset_view(keep_count=True)
        if current is not None:
            self.notify(f"sorted by {SORT_NAMES[sort]} {'▼' if descending else '▲'}", timeout=2)

    def reset_view(self, *, keep_count: bool = False) -> None:
        self.table.changed.clear()  # another view: what changed was seen in the old one
        self.page = None
        self.paging, self.pending_moves = None, 0
        if not keep_count:
            self.count = None
            self.load_count(self.view)
        if self.search is not None:
            self.leave_search()
        self.load("first")
        self.show_position()

    # -- actions --------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "back":
            # Shown in the footer only when there is something to go back from.
            return (
                bool(self.table.selected)
                or self.search is not None
                or self.focused is not self.table
                or self.figure is not None  # back to the screen whose figure this shows
            )
        return super().check_action(action, parameters)

    def action_targets(self) -> list[int]:
        return self.table.targets()

    def current_record(self) -> MemoryRecord | None:
        return self.table.current

    def after_change(self, done: DoneAction, undo: bool) -> None:
        self.seen_revision = self.context.revision
        if not undo:
            self.table.clear_selection()
        self.refresh_after_change()

    def refresh_after_change(self) -> None:
        """Read again what the screen shows; the cursor stays on its memory, else (the
        memory left the view) on its row, and the selection stays."""
        self.seen_revision = self.context.revision
        current = self.table.current
        focus = current.id if current is not None else None
        if self.search is not None:
            query = self.search[0]
            self.run_search(query, self.search_filter())
        else:
            self.load("reload", focus_id=focus, focus_row=self.table.cursor_row)
        self.load_count(self.view)
        self.load_topics(self.view.memory_filter.status)
        if current is not None:
            self.load_detail(current.id)

    def action_search(self) -> None:
        bar = self.query_one(SearchBar)
        bar.display = True
        bar.focus()

    def search_filter(self) -> MemoryFilter:
        return replace(self.view.memory_filter, text=None)

    @on(SearchBar.Query)
    def _query(self, message: SearchBar.Query) -> None:
        self.run_search(message.text, self.search_filter())

    @on(SearchBar.Closed)
    def _search_closed(self) -> None:
        self.leave_search()

    def leave_search(self) -> None:
        bar = self.query_one(SearchBar)
        bar.display = False
        bar.show_fallback(None)
        self.workers.cancel_group(self, "search")
        was_searching = self.search is not None
        self.search = None
        if self.page is not None and (was_searching or self.table.search_mode):
            self.table.show_records(self.page.rows, confidence_now=self.page_confidence_now)
        self.table.focus()
        self.show_position()
        self.refresh_bindings()

    def action_back(self) -> None:
        if self.focused is not self.table:
            self.table.focus()  # from the filter bar or the topics tree back to the memories
        elif self.table.clear_selection():
            self.show_position()
        elif self.search is not None or self.query_one(SearchBar).display:
            self.leave_search()
        elif self.figure is not None:
            self.app.pop_screen()  # back to the screen whose figure this table shows

    def action_sort(self) -> None:
        from memory_console.tui.screens.sort import SortScreen

        def answered(order: tuple[str, bool] | None) -> None:
            if order is not None:
                self.set_order(*order)

        self.app.push_screen(SortScreen(self.view.sort, self.view.descending), answered)

    def action_filter(self) -> None:
        self.query_one("#filter-text").focus()

    def action_topics(self) -> None:
        self.query_one(TopicsTree).focus()

    def action_reveal(self) -> None:
        table = self.table
        table.reveal = not table.reveal
        detail = self.query_one(DetailPane)
        detail.reveal = table.reveal
        table.rebuild()
        detail.render_body()
        self.notify(
            "secrets revealed: v masks them again" if table.reveal else "secrets masked", timeout=3
        )

    def action_reload(self) -> None:
        self.refresh_after_change()
