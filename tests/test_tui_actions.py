"""The console driven end to end: every action changes the store and writes its event."""

from __future__ import annotations

import sqlite3
from typing import Any

import pytest
from textual.widgets import Input, TextArea

from memory_console.embed.search import SearchEngine
from memory_console.settings import Settings
from memory_console.store import MemoryFilter, Store
from memory_console.tui.app import MemoryConsoleApp
from memory_console.tui.screens.confirm import ChoiceScreen
from memory_console.tui.screens.edit import EditScreen
from memory_console.tui.screens.forget import ForgetScreen
from memory_console.tui.screens.main import MainScreen
from memory_console.tui.screens.story import StoryScreen
from tests.helpers import NOW, SCREEN_ONLY, console, notes, open_on, settle, where

SIZE = (120, 36)


@pytest.fixture
def demo_store(backend_demo_store: Store) -> Store:
    """These tests run on both backends (the SQLite-only ones say so)."""
    return backend_demo_store


def main_screen(app: MemoryConsoleApp) -> MainScreen:
    screen = app.screen
    assert isinstance(screen, MainScreen)
    return screen


def events_of(store: Store, memory_id: int, kind: str) -> list[Any]:
    return [e for e in store.history(memory_id) if e.kind == kind]


def active_unprotected(store: Store, count: int) -> list[int]:
    rows = store.page(MemoryFilter(status="active", is_protected=False), limit=count).rows
    return [r.id for r in rows]


async def test_actions_in_bulk_and_undo(demo_store: Store) -> None:
    ids = active_unprotected(demo_store, 3)
    app = console(demo_store)
    seen = notes(app)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_on(app, pilot, ids)
        assert screen.check_action("undo", ()) is None, "nothing to undo yet"
        await pilot.press("space", "space")
        chosen = sorted(screen.table.selected)
        assert len(chosen) == 2
        await pilot.press("p")
        await settle(pilot)
        assert not screen.table.selected, "the selection is spent by the action"
        for ident in chosen:
            assert demo_store.require(ident).is_protected
            (event,) = events_of(demo_store, ident, "protected")
            assert event.actor == "tui" and event.at >= NOW
        (untouched,) = set(ids) - set(chosen)
        assert not demo_store.require(untouched).is_protected
        await pilot.press("home", "P")  # unprotect the memory under the cursor only
        await settle(pilot)
        assert screen.table.current is not None
        first = screen.table.current.id
        assert not demo_store.require(first).is_protected
        await pilot.press("asterisk", "a")
        await settle(pilot)
        # One of the three is protected: archiving asks, and the test takes all three.
        assert isinstance(app.screen, ChoiceScreen)
        await pilot.click("#choice-all")
        await settle(pilot)
        assert all(demo_store.require(i).status == "archived" for i in ids)
        await pilot.press("u")
        await settle(pilot)
        assert all(demo_store.require(i).status == "active" for i in ids)
        await pilot.press("asterisk", "a")
        await settle(pilot)
        await pilot.click("#choice-all")
        await settle(pilot)
        await pilot.press("asterisk", "r")
        await settle(pilot)
        assert all(demo_store.require(i).status == "active" for i in ids)
        await pilot.press("u")
        await settle(pilot)
        assert all(demo_store.require(i).status == "archived" for i in ids), "restore undone"
        await pilot.press("u")
        await settle(pilot)
        assert all(demo_store.require(i).status == "active" for i in ids), "undo is a stack"
    assert any("protected 2 memories" in text for text in seen)
    assert any(text.startswith("undid archive of 3 memories") for text in seen)
    kinds = [e.kind for e in demo_store.history(first)]
    assert kinds[-8:] == [
        "protected",
        "unprotected",
        "archived",
        "restored",
        "archived",
        "restored",
        "archived",
        "restored",
    ]
    restored = events_of(demo_store, ids[0], "restored")
    assert restored[0].query is not None and restored[0].query.startswith("undo of event")


async def test_forget_and_edit_through_their_dialogs(demo_store: Store) -> None:
    forgotten, edited = active_unprotected(demo_store, 2)
    before = demo_store.require(edited)
    app = console(demo_store)
    seen = notes(app)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_on(app, pilot, [forgotten, edited])
        screen.table.move_cursor(row=[r.id for r in screen.table.records].index(forgotten))
        await pilot.press("f")
        await settle(pilot)
        assert isinstance(app.screen, ForgetScreen)
        said = " ".join(str(w.render()) for w in app.screen.query("Static"))
        assert "archives 1 memory" in said and "Nothing is deleted" in said
        await pilot.press("escape")
        await settle(pilot)
        assert demo_store.require(forgotten).status == "active", "escape keeps the memory"
        await pilot.press("f")
        await settle(pilot)
        app.screen.query_one("#forget-reason", Input).value = "user asked to forget it"
        await pilot.press("enter")
        await settle(pilot)

        screen.table.move_cursor(row=[r.id for r in screen.table.records].index(edited))
        await pilot.press("e")
        await settle(pilot)
        assert isinstance(app.screen, EditScreen)
        app.screen.query_one("#edit-content", TextArea).text = "   "
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert isinstance(app.screen, EditScreen), "the form comes back to be fixed"
        assert demo_store.require(edited).content == before.content
        app.screen.query_one("#edit-content", TextArea).text = before.content
        app.screen.query_one("#edit-title", Input).value = "Prefers tea to coffee"
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert isinstance(app.screen, MainScreen)
    record = demo_store.require(forgotten)
    assert record.status == "archived"
    assert record.metadata["forget_reason"] == "user asked to forget it"
    (event,) = events_of(demo_store, forgotten, "archived")
    assert event.query == "user asked to forget it"
    assert any("content is empty" in text for text in seen)
    assert demo_store.require(edited).title == "Prefers tea to coffee"
    (event,) = events_of(demo_store, edited, "edited")
    assert event.before == {"title": before.title}
    assert event.after == {"title": "Prefers tea to coffee"}


async def test_read_only_dims_actions_and_says_why(demo_store: Store) -> None:
    with Store(where(demo_store), read_only=True, actor="tui") as store:
        ident = store.page(MemoryFilter(is_protected=False), limit=1).rows[0].id
        app = console(store)
        seen = notes(app)
        async with app.run_test(size=SIZE) as pilot:
            screen = await open_on(app, pilot, [ident])
            bindings = screen.active_bindings
            for key in ("p", "a", "f", "e", "u"):
                assert bindings[key].enabled is False, key
            assert bindings["slash"].enabled is True
            await pilot.press("p")
            await pilot.press("f")
            await settle(pilot)
            assert isinstance(app.screen, MainScreen), "no forget dialog on a read-only store"
        assert not store.require(ident).is_protected
    assert any("read-only store: protect is disabled" in text for text in seen)


class WritersLock:
    """Another process's hold on the store's writers' lock: SQLite's write lock (BEGIN
    IMMEDIATE on a connection of its own), PostgreSQL's advisory lock in a session of its own."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.blocker: Any = None

    def take(self) -> None:
        if self.store.url is None:
            self.blocker = sqlite3.connect(self.store.path, isolation_level=None)
            self.blocker.execute("BEGIN IMMEDIATE")
            return
        import psycopg

        from memory_console.store.postgres import WRITE_LOCK_KEY

        self.blocker = psycopg.connect(self.store.url, autocommit=True)
        self.blocker.execute("BEGIN")
        self.blocker.execute("SELECT pg_advisory_xact_lock(%s)", (WRITE_LOCK_KEY,))

    def release(self) -> None:
        if self.blocker is not None:
            self.blocker.execute("ROLLBACK")
            self.blocker.close()
            self.blocker = None


async def test_a_locked_database_is_a_notification(
    demo_store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While another process holds the writers' lock, an action waits its bounded time (each
    attempt WRITE_WAIT_MS, shortened here), then says the store is busy and changes nothing."""
    from memory_console.store.dialect import WRITE_WAIT_MS
    from memory_console.store.postgres.dialect import PostgresDialect

    ident = active_unprotected(demo_store, 1)[0]
    if demo_store.url is None:
        demo_store.connection.execute("PRAGMA busy_timeout = 0")
    else:
        shortened = tuple(
            statement.replace(f"= {WRITE_WAIT_MS}", "= 100")
            for statement in PostgresDialect.begin_write
        )
        assert shortened != PostgresDialect.begin_write
        monkeypatch.setattr(PostgresDialect, "begin_write", shortened)
    lock = WritersLock(demo_store)
    app = console(demo_store)
    seen = notes(app)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await open_on(app, pilot, [ident])
            lock.take()
            await pilot.press("p")
            await settle(pilot)
            lock.release()
            assert isinstance(app.screen, MainScreen)
            await pilot.press("p")  # the lock let go: the same action goes through
            await settle(pilot)
    finally:
        lock.release()
    assert any("the database is busy" in text for text in seen)
    assert not any("Traceback" in text for text in seen)
    history = [event.kind for event in demo_store.history(ident)]
    assert history.count("protected") == 1


async def test_search_shows_scores_and_escape_returns(demo_store: Store) -> None:
    app = console(demo_store)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = main_screen(app)
        browsing = [r.id for r in screen.table.records]
        await pilot.press("slash", *"coffee", "enter")
        await settle(pilot)
        assert screen.table.search_mode and screen.table.records
        assert "score" in [c.key for c in screen.table.columns_in_view]
        hits = demo_store.keyword_search("coffee", MemoryFilter(), limit=100)
        assert [r.id for r in screen.table.records] == [r.id for r, _ in hits]
        assert screen.query_one("#status").position.startswith(f"{len(hits)} results")
        await pilot.press("escape")
        await settle(pilot)
        assert not screen.table.search_mode
        assert [r.id for r in screen.table.records] == browsing


async def test_sort_filter_and_topic_narrow_the_table(demo_store: Store) -> None:
    app = console(demo_store)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = main_screen(app)
        await pilot.press("s")
        await settle(pilot)
        app.screen.query_one("OptionList").highlighted = 7  # confidence
        await pilot.press("enter")
        await settle(pilot)
        values = [r.confidence for r in screen.table.records]
        assert screen.view.sort == "confidence" and values == sorted(values, reverse=True)
        screen.query_one("#filter-status").value = "archived"  # type: ignore[attr-defined]
        await settle(pilot)
        assert screen.table.records
        assert {r.status for r in screen.table.records} == {"archived"}
        screen.query_one("#filter-status").clear()  # type: ignore[attr-defined]
        await pilot.click("#filter-text")
        await pilot.press(*"coffee", "enter")
        await settle(pilot)
        assert screen.count == demo_store.count(MemoryFilter(text="coffee"))
        owner, topic, count = demo_store.counts_by("owner", "topic")[0]
        tree = screen.query_one("#topics")
        node = next(n for n in tree.root.children if n.data == (owner, None, None))
        leaf = next(n for n in node.children if n.data == (owner, None, topic))
        tree.select_node(leaf)  # type: ignore[attr-defined]
        await settle(pilot)
        assert screen.view.memory_filter.owner == owner
        assert screen.view.memory_filter.topic == topic
        assert screen.count == demo_store.count(
            MemoryFilter(owner=owner, topic=topic, text="coffee")
        )


async def test_moving_past_the_edges_pages_through_the_store(demo_store: Store) -> None:
    app = console(demo_store, page_size=20)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = main_screen(app)
        order = [
            r.id for r in demo_store.page(sort="last_accessed_at", descending=True, limit=60).rows
        ]
        assert [r.id for r in screen.table.records] == order[:20]
        for _ in range(25):
            await pilot.press("down")
        await settle(pilot)
        assert [r.id for r in screen.table.records] == order[20:40]
        assert screen.table.current is not None and screen.table.current.id == order[25]
        for _ in range(8):
            await pilot.press("up")
        await settle(pilot)
        assert screen.table.current is not None and screen.table.current.id == order[17]
        assert screen.page is not None and screen.page.number == 1
        await pilot.press("G")
        await settle(pilot)
        last = demo_store.page(sort="last_accessed_at", descending=False, limit=1).rows[0]
        assert screen.table.current is not None and screen.table.current.id == last.id


async def test_story_screen_shows_history_and_acts(demo_store: Store) -> None:
    ident = active_unprotected(demo_store, 1)[0]
    app = console(demo_store)
    async with app.run_test(size=SIZE) as pilot:
        await open_on(app, pilot, [ident])
        await pilot.press("enter")
        await settle(pilot)
        story = app.screen
        assert isinstance(story, StoryScreen)
        history = story.query_one("#story-history")
        assert history.row_count == len(demo_store.history(ident))  # type: ignore[attr-defined]
        chart = str(story.query_one("#story-chart").render())
        assert "┤" in chart and "│" in chart
        await pilot.press("p")
        await settle(pilot)
        assert demo_store.require(ident).is_protected
        assert "protected: does not decay" in str(story.query_one("#story-legend").render())
        await pilot.press("escape")
        await settle(pilot)
        screen = main_screen(app)
        assert screen.table.current is not None and screen.table.current.is_protected


@SCREEN_ONLY
async def test_palette_help_and_theme(demo_store: Store) -> None:
    from memory_console.tui.screens.help import HelpScreen

    ident = active_unprotected(demo_store, 1)[0]
    app = console(demo_store, theme="textual-light")
    async with app.run_test(size=SIZE) as pilot:
        await open_on(app, pilot, [ident])
        assert app.theme == "textual-light"
        await pilot.press("ctrl+p")
        await settle(pilot)
        await pilot.press(*"protect")
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        assert demo_store.require(ident).is_protected
        await pilot.press("question_mark")
        await settle(pilot)
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, MainScreen)


def test_help_lists_every_key() -> None:
    from memory_console.tui.screens.help import key_sections

    actions = {action for _, rows in key_sections() for _, action, _ in rows}
    for description in (
        "Protect",
        "Unprotect",
        "Archive",
        "Restore",
        "Forget",
        "Edit",
        "Undo",
        "Search",
        "Sort",
        "Select",
        "Open",
        "Quit",
        "Help",
        "Back",
        "Filter",
        "Topics",
        "Reveal",
        "Select page",
        "Last page",
        "Commands",
    ):
        assert description in actions, description


@SCREEN_ONLY
async def test_unknown_theme_is_a_notification(demo_store: Store) -> None:
    app = console(demo_store, theme="not-a-theme")
    seen = notes(app)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.theme == "textual-dark"
    assert any("unknown theme 'not-a-theme'" in text for text in seen)


class FakeEmbedder(SearchEngine):
    """Semantic search that becomes ready at once (or fails), without loading a model."""

    def __init__(self, store: Store, failure: str | None = None) -> None:
        super().__init__(store)
        self.failure = failure
        self.prepared = False

    def prepare_semantic(self, progress: Any = None, cancelled: Any = None) -> bool:
        if self.failure:
            raise RuntimeError(self.failure)
        for done in (0, 4, 8):
            progress(done, 8)
        self.prepared = True
        return True

    @property
    def semantic_ready(self) -> bool:
        return self.prepared

    def search(self, query: str, *, mode: str | None = None, **options: Any) -> list[Any]:
        return super().search(query, mode="keyword", **options)


@SCREEN_ONLY
async def test_semantic_search_joins_in_or_says_why_not(demo_store: Store) -> None:
    from memory_console.tui.app import make_app
    from memory_console.tui.widgets.search_readiness import READY_TEXT, SearchReadiness

    for engine, state in (
        (FakeEmbedder(demo_store), "hybrid search"),
        (FakeEmbedder(demo_store, "model file missing"), "keyword search only"),
    ):
        app = make_app(Settings(), demo_store, now=NOW, search=engine)
        app.typing.window = 0.0  # a pilot's keys come faster than typing
        seen = notes(app)
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            await settle(pilot)
            readiness = app.screen.query_one(SearchReadiness)
            if engine.failure is None:
                # Said in the label, lit, then the lasting state: no notice covers it.
                assert str(readiness.render()) == READY_TEXT and readiness.has_class("-ready")
                readiness.settle_ready()
            assert str(readiness.render()) == state and not readiness.has_class("-ready")
            await pilot.press("slash", *"coffee", "enter")
            await settle(pilot)
            mode = "hybrid" if engine.failure is None else "keyword"
            assert app.screen.query_one("#status").position.endswith(
                f"({mode}) · Escape: back to browsing"
            )
        if engine.failure:
            assert "semantic search unavailable: RuntimeError: model file missing" in seen
        else:
            assert not any("semantic search ready" in note for note in seen), seen
