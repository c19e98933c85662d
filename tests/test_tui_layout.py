"""The console never shows a wrong number or a cut word as if it were whole: counts, fields,
footer keys, columns and sentences at 80x24 and 120x40."""

from __future__ import annotations

import dataclasses

import pytest
from rich.style import Style
from textual.widgets import DataTable, Static
from textual.widgets._footer import FooterKey

from memory_console.embed.hits import SearchHit
from memory_console.store import MemoryFilter, Store
from memory_console.tui.messages import SearchDone
from memory_console.tui.plan_request import PlanRequest
from memory_console.tui.preview_text import head_text
from memory_console.tui.screens.main import search_fallback
from memory_console.tui.widgets.change_table import ChangeTable
from memory_console.tui.widgets.columns import Cell, fit_columns, span
from memory_console.tui.widgets.detail import DetailPane
from memory_console.tui.widgets.filter_bar import FilterBar
from memory_console.tui.widgets.memory_table import MemoryTable
from memory_console.tui.widgets.pass_list import PassList
from memory_console.tui.widgets.topics import TopicsTree
from tests.helpers import DAY, NOW, console, settle

SMALL = (80, 24)
SIZES = pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])


def plain(widget: Static) -> str:
    return str(widget.render())


@SIZES
async def test_topic_counts_are_whole_and_names_give_way(
    demo_store: Store, size: tuple[int, int]
) -> None:
    app = console(demo_store)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        tree = app.screen.query_one(TopicsTree)
        counts = {
            owner: count
            for owner, count in demo_store.counts_by("owner", memory_filter=MemoryFilter())
        }
        room = tree.scrollable_content_region.width
        for line in tree._tree_lines:
            node = line.node
            shown = tree.render_label(node, Style(), Style())
            indent = line._get_guide_width(tree.guide_depth, tree.show_root)
            assert indent + shown.cell_len <= room, shown.plain
            owner = node.data[0] if node.data else None
            if owner is not None and node.data[1] is None:
                assert shown.plain.endswith(f" {counts[owner]:,}"), shown.plain
        assert (
            any(
                "…" in tree.render_label(line.node, Style(), Style()).plain
                for line in tree._tree_lines
            )
            or size != SMALL
        )  # at 80 columns some name gave way


@SIZES
async def test_filter_fields_and_footer_keys_fit(demo_store: Store, size: tuple[int, int]) -> None:
    app = console(demo_store)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        for field in app.screen.query_one(FilterBar).children:
            assert field.region.right <= size[0], field
        keys = [key for key in app.screen.query(FooterKey) if key.display]
        palette = next(key for key in keys if key.has_class("-command-palette"))
        for key in keys:
            if key is not palette:
                assert key.region.right <= palette.region.x, key.description
        assert any(key.description == "Open" for key in keys)


def test_search_columns_tell_same_titles_apart() -> None:
    """At the width the table has on an 80-column terminal, hits show whose they are and,
    once the search rates them, how well they answer."""
    for width in (56, 96):
        keys = [column.key for column in fit_columns(width, search=True, relevance=True)]
        assert {"topic", "relevance", "title"} <= set(keys)
        assert sum(span(column) for column in fit_columns(width, search=True)) <= width
        assert "relevance" not in [c.key for c in fit_columns(width, search=True, relevance=False)]


async def test_search_results_show_owner_topic_and_keyword_only_notice(
    demo_store: Store,
) -> None:
    app = console(demo_store)
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot)
        await pilot.press("slash", *"coffee", "enter")
        await settle(pilot)
        table = app.screen.query_one(MemoryTable)
        assert "topic" in [column.key for column in table.columns_in_view]
        notice = app.screen.query_one("#search-fallback", Static)
        # The demo store has no vectors yet: the engine says its search was keyword only.
        assert notice.display and "keyword" in plain(notice)
        hits = [SearchHit(record, 1.0, ("keyword",)) for record in table.records]
        sentence = "keyword search only: 300 memories have no vector yet"
        app.screen.post_message(SearchDone("coffee", "keyword", hits, sentence))
        await settle(pilot)
        assert notice.display and plain(notice) == sentence
        await pilot.press("escape")
        await settle(pilot)
        assert not notice.display


def test_search_fallback_reads_the_engines_sentence() -> None:
    """The contract with the search engine: a `fallback` field of the result, or a field or
    a method of the engine; none, or an empty one, means a full search."""

    class Engine:
        fallback: str | None = None

    class Method:
        def fallback(self) -> str:
            return "keyword search only: the model is not loaded"

    assert search_fallback(Engine(), []) is None
    engine = Engine()
    engine.fallback = "keyword search only: 5 memories have no vector yet"
    assert search_fallback(engine, []) == engine.fallback
    assert search_fallback(Method(), []) == "keyword search only: the model is not loaded"


def test_relevance_word_is_drawn_when_the_hit_has_one(demo_store: Store) -> None:
    record = demo_store.page(MemoryFilter(), limit=1).rows[0]
    hit = SearchHit(record, 1.0, ("keyword",))
    column = next(c for c in fit_columns(96, search=True) if c.key == "relevance")
    if "relevance" in {f.name for f in dataclasses.fields(SearchHit)}:
        rated = dataclasses.replace(hit, relevance="strong")  # type: ignore[call-arg]
        assert column.render(Cell(record, rated, False, False)).plain == "strong"
    else:
        assert column.render(Cell(record, hit, False, False)).plain == ""


async def test_detail_never_says_no_memory_beside_listed_rows(demo_store: Store) -> None:
    app = console(demo_store)
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot)
        pane = app.screen.query_one(DetailPane)
        record = app.screen.query_one(MemoryTable).records[1]
        pane.show(None, waiting=True)  # the table not yet given its rows
        assert "No memory" not in plain(pane)
        pane.show(record)  # its story not loaded yet: the memory is drawn at once
        assert f"#{record.id}" in plain(pane) and "No memory" not in plain(pane)
        pane.show(None)  # the table is empty
        assert "No memory here" in plain(pane)


async def test_preview_on_a_short_terminal_says_where_the_chart_went(demo_store: Store) -> None:
    app = console(demo_store)
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot)
        for key in ("m", "ctrl+r"):
            await pilot.press(key)
            await settle(pilot)
        note = app.screen.query_one("#preview-chart-note", Static)
        assert note.display and "30 rows" in plain(note)
        table = app.screen.query_one(ChangeTable)
        title = table.columns[next(k for k in table.columns if k.value == "title")]
        assert title.width >= 15
        assert sum(column.get_render_width(table) for column in table.columns.values()) <= (
            table.size.width
        )
        detail = plain(app.screen.query_one("#preview-detail", Static))
        assert "periods" in detail  # the reason the table leaves out, in the detail


async def test_runs_list_shows_undone_within_80_columns(demo_store: Store) -> None:
    from memory_console.maintenance import apply, plan
    from memory_console.maintenance.undo import undo  # the package's `undo` can be the module

    run = apply(demo_store, plan(demo_store, ("decay",), now=NOW), actor="cli")
    undo(demo_store, run.id, now=NOW + 300)
    app = console(demo_store)
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot)
        await pilot.press("R")
        await settle(pilot)
        table = app.screen.query_one("#runs-table", DataTable)
        right = 0
        for key, column in table.columns.items():
            right += column.get_render_width(table)
            if key.value in ("undone", "changed"):
                assert right <= table.size.width, key.value


async def test_history_shows_the_selected_change_whole(demo_store: Store) -> None:
    from memory_console.tui.screens.story import StoryScreen

    accessed = demo_store.page(
        MemoryFilter(status="active", memory_type="episodic"),
        sort="retrieval_count",
        descending=True,
        limit=1,
    ).rows[0]
    app = console(demo_store)
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot)
        app.push_screen(StoryScreen(accessed.id))
        await settle(pilot)
        history = app.screen.query_one("#story-history", DataTable)
        history.move_cursor(row=1)
        await settle(pilot)
        event = plain(app.screen.query_one("#story-event", Static))
        assert "accessed" in event and "last_accessed_at" in event


async def test_health_quota_column_has_one_unit(
    demo_store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    import memory_console.tui.screens.health as health

    monkeypatch.setattr(health, "owner_quota", lambda: 5)  # owners from 2x to 11x over it
    app = console(demo_store)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("H")
        await settle(pilot)
        owners = app.screen.query_one("#health-owners", DataTable)
        shares = [str(owners.get_row_at(row)[2]).split()[0] for row in range(owners.row_count)]
        assert shares and all(share.endswith("%") for share in shares), shares
        assert "1,140%" in shares  # alice: 57 active memories against a quota of 5
        # Every owner over the quota draws the whole bar, whatever the share's width: a cell
        # wider than its column was cut, so 1,346% drew a shorter bar than 883%.
        column = owners.ordered_columns[2]
        for row in range(owners.row_count):
            cell = owners.get_row_at(row)[2]
            assert cell.plain.endswith("█████") and cell.cell_len <= column.width, cell


async def test_pass_boxes_differ_by_glyph(demo_store: Store) -> None:
    app = console(demo_store)
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot)
        await pilot.press("m")
        await settle(pilot)
        passes = app.screen.query_one(PassList)
        lines = {
            passes.get_option_at_index(i).value: passes.render_line(i).text
            for i in range(passes.option_count)
            if i < passes.size.height
        }
        chosen = [text for value, text in lines.items() if value in passes.selected]
        others = [text for value, text in lines.items() if value not in passes.selected]
        assert chosen and others
        assert all("✓" in text for text in chosen)
        assert all("✓" not in text and "X" not in text[:4] for text in others)


def test_a_future_evaluation_reads_whole() -> None:
    later = PlanRequest(("decay",), "relevance", {}, NOW + 90 * DAY, NOW)
    head = head_text(later, None).plain
    assert "evaluated in 90 days" in head and "at in" not in head
    assert (
        "evaluated now" in head_text(PlanRequest(("decay",), "relevance", {}, NOW, NOW), None).plain
    )


def test_fit_columns_give_titles_the_free_width() -> None:
    for width in (56, 78, 96, 118, 160):
        columns = fit_columns(width, search=False)
        assert sum(span(column) for column in columns) == width, width
