"""Stored text is inert: a hostile corpus shown literally by every command and console screen."""

from __future__ import annotations

import contextlib
import io
import json
import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from rich.style import Style

from memory_console.cli import main
from memory_console.literal import ESCAPE_STYLE, json_text, literal, visible
from memory_console.store import Store
from tests.helpers import DAY, ISO_NOW, NOW, console, settle

# Text an agent's user could have the agent store: markup and actions, escape sequences,
# control, bidi and wide characters. NUL is refused by the store; it is a query below.
CORPUS: tuple[str, ...] = (
    "[@click=app.quit]quit-click[/]",
    "[@click=app.screenshot('pwned.svg','.')]shot-click[/]",
    "[@click=screen.archive]archive-click[/]",
    "[@click=app.bell]bell-click",
    "[/] t",
    "[/]",
    "[bold red]RED-X[/]",
    "[link=file:///etc/passwd]passwd-link[/link]",
    "[dim]unclosed [",
    "[b]",
    "\\[escaped-bracket] and trailing backslash \\",
    "$accent-var $text",
    ":warning: :smile: shortcodes",
    "clear\x1b[2Jscreen",
    "title\x1b]0;pwned-title\x07set",
    "osc8 \x1b]8;;file:///etc/passwd\x1b\\link-text\x1b]8;;\x1b\\ end",
    "c1 csi\x9b2Jhere",
    "bell\x07 backspace\x08 del\x7f",
    "carriage\roverwrite",
    "vertical\x0btab form\x0cfeed",
    "next-line\x85c1",
    "bidi \u202eevil.exe\u202c gpj",
    "isolate \u2067rtl\u2069 mark\u200f",
    "zero\u200dwidth joiner 👨\u200d👩\u200d👧",
    "line\u2028separator",
    "emoji 🍵☕ and wide 東京都の天気",
    "word" * 80,
    "multi\nline\ttabbed",
)
DUPLICATE_OWNER = "dup [@click=app.quit]quit-click[/] \x1b[2J"
# What each of these looks like when shown literally, short enough to sit on one line.
SHOWN = (
    "[@click=app.quit]quit-click[/]",
    "[/] t",
    "[bold red]RED-X[/]",
    "[link=file:///etc/passwd]passwd-link[/link]",
    "clear\\x1b[2Jscreen",
    "title\\x1b]0;pwned-title\\x07set",
    "c1 csi\\x9b2Jhere",
    "bidi \\u202eevil.exe\\u202c gpj",
    ":warning: :smile: shortcodes",
)
# Nothing a terminal would act on: C0 but newline and tab, DEL, C1, bidi controls.
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def hostile_memory(index: int, text: str) -> dict[str, Any]:
    """The corpus string in every text field of a memory."""
    return {
        "title": text,
        "content": f"content {index}: {text}",
        "owner": f"owner{index % 3} {text[:40]}",
        "topic": "general",
        "keywords": [text[:60], "hostile"],
        "metadata": {"note": text, text[:20]: index},
        "memory_type": "episodic",
        "decay_policy": "standard",
        "confidence": 0.8,
        "base_confidence": 0.8,
        "importance": 0.5,
        "created_at": NOW - 400 * DAY,
        "updated_at": NOW - 400 * DAY,
    }


def fill_hostile(store: Store) -> list[int]:
    """The corpus as memories, each recalled by a corpus query; one forgotten with a corpus
    reason. Old enough to decay, so maintenance lists them."""
    ids = [store.add(hostile_memory(i, text), now=NOW - 400 * DAY) for i, text in enumerate(CORPUS)]
    for ident, text in zip(ids, CORPUS, strict=True):
        store.record_access(
            [ident], now=NOW - 200 * DAY, query=text, scores={ident: {"keyword_rank": 1}}
        )
    store.forget([ids[1]], reason=CORPUS[14], now=NOW - 150 * DAY)
    # Duplicates of one hostile owner (one text, three titles), which the consolidate pass
    # proposes to merge.
    for text in (CORPUS[0], CORPUS[4], CORPUS[13]):
        duplicate = hostile_memory(0, " ".join((CORPUS[0], CORPUS[4], CORPUS[13])))
        duplicate.update(owner=DUPLICATE_OWNER, keywords=["green", "tea", "[/] t"], title=text)
        ids.append(store.add(duplicate, now=NOW - 400 * DAY))
    return ids


def hostile_vocabulary(path: Path) -> None:
    """Topics and sources outside the vocabulary, as another program could write them."""
    with contextlib.closing(sqlite3.connect(path)) as conn, conn:
        for index, text in enumerate(CORPUS):
            conn.execute(
                "UPDATE memory SET topic = ?, source = ? WHERE id = ?",
                (f"topic {text[:40]}", text[:40], index + 1),
            )


@pytest.fixture
def hostile_db(tmp_path: Path) -> Path:
    path = tmp_path / "hostile.db"
    with Store(path, actor="test") as store:
        fill_hostile(store)
    hostile_vocabulary(path)
    return path


def run(argv: list[str]) -> tuple[int, str, str]:
    """main() in-process with strict UTF-8 streams, as a piped terminal gets them."""
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", write_through=True)
    err = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", write_through=True)
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    texts = []
    for stream in (out, err):
        buffer = stream.buffer
        assert isinstance(buffer, io.BytesIO)
        raw = buffer.getvalue()
        # No ESC byte and no C1 control (UTF-8 C2 80..C2 9F) reaches the terminal.
        assert b"\x1b" not in raw
        assert not re.search(rb"\xc2[\x80-\x9f]", raw)
        texts.append(raw.decode("utf-8"))
    for text in texts:
        found = RAW.search(text)
        assert found is None, f"raw {found.group()!r} in output"
    return code, texts[0], texts[1]


# -- the helper ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a\x1b[2Jb", "a\\x1b[2Jb"),
        ("\x9b2J", "\\x9b2J"),
        ("bell\x07del\x7f", "bell\\x07del\\x7f"),
        ("cr\rnul\x00", "cr\\rnul\\x00"),
        ("\u202eabc\u2066\u200e\u061c", "\\u202eabc\\u2066\\u200e\\u061c"),
        ("lone \udc80", "lone \\udc80"),
        ("keep\nlines\tand tabs", "keep\nlines\tand tabs"),
        ("[@click=app.quit]x[/] 👨\u200d👩 東京", "[@click=app.quit]x[/] 👨\u200d👩 東京"),
    ],
)
def test_visible_writes_hidden_characters_as_escapes(text: str, expected: str) -> None:
    assert visible(text) == expected


def test_one_line_visible_escapes_newlines_and_tabs_too() -> None:
    assert visible("a\nb\tc\u2028d", layout=False) == "a\\nb\\tc\\u2028d"


def test_literal_is_exactly_the_text_with_only_its_escapes_styled() -> None:
    shown = literal("[@click=app.quit]x[/] \x1b]8;;file:///etc/passwd\x1b\\", style="bold")
    assert shown.plain == "[@click=app.quit]x[/] \\x1b]8;;file:///etc/passwd\\x1b\\"
    # No markup or link meta: the only spans mark the two escapes, so that an escape made for
    # an ESC is told from a backslash the text holds.
    assert [(span.start, span.end, str(span.style)) for span in shown.spans] == [
        (22, 26, ESCAPE_STYLE),
        (48, 52, ESCAPE_STYLE),
    ]
    assert all(not Style.parse(str(span.style)).meta for span in shown.spans)
    assert str(shown.style) == "bold"
    assert literal("a \\x1b b").spans == []  # a backslash the text holds is plain text


def test_json_text_escapes_c1_and_bidi_and_decodes_to_the_stored_string() -> None:
    value = {"t": "c1\x9b bidi\u202e nl\n esc\x1b sep\u2028 lone\udc80 ok東京"}
    dumped = json_text(value, indent=2)
    assert not RAW.search(dumped.replace("\n", ""))
    assert "\\u009b" in dumped and "\\u202e" in dumped and "\\u2028" in dumped
    assert json.loads(dumped) == value


# -- the CLI ------------------------------------------------------------------------------


def cli(db: Path, *argv: str) -> str:
    code, out, err = run([*argv, "--db", str(db), "--now", ISO_NOW])
    assert code == 0, err
    return out


def shows_literally(out: str, expected: tuple[str, ...] = SHOWN) -> None:
    for text in expected:
        assert text in out, f"{text!r} not shown literally"


def test_list_shows_stored_text_literally(hostile_db: Path) -> None:
    out = cli(hostile_db, "list", "--limit", "100")
    shows_literally(out)
    assert "RED-X" in out and "pwned-title" in out


def test_list_on_a_narrow_terminal_marks_status_after_a_literal_title(
    hostile_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A terminal narrower than 120 columns gets the short table, status after the title."""
    monkeypatch.setenv("COLUMNS", "100")
    monkeypatch.setenv("TERM", "dumb")  # no colour codes: any ESC would be stored text's
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", write_through=True)
    monkeypatch.setattr(out, "isatty", lambda: True)
    with contextlib.redirect_stdout(out):
        assert main(["list", "--db", str(hostile_db), "--status", "archived"]) == 0
    buffer = out.buffer
    assert isinstance(buffer, io.BytesIO)
    text = buffer.getvalue().decode("utf-8")
    assert "\x1b" not in text and not RAW.search(text)
    assert "owner/topic" not in text  # the narrow table
    assert "[@click=app.screenshot('pwned.svg','.')]shot-click[/]" in text
    assert "(archived)" in text


def test_show_and_accesses_show_every_field_literally(hostile_db: Path) -> None:
    for ident in range(1, len(CORPUS) + 1):
        out = cli(hostile_db, "show", str(ident), "--accesses")
        text = CORPUS[ident - 1]
        if len(text) < 60 and "\n" not in text:
            assert visible(text) in out
    out = cli(hostile_db, "show", "2", "--accesses")
    assert "source         [@click=app.screenshot('pwned.svg','.')]" in out
    assert "topic [@click=app.screenshot('pwned.svg','.')]" in out


@pytest.mark.parametrize("mode", ["keyword", "hybrid"])
@pytest.mark.parametrize("query", ["[/] t", "[@click=app.quit]", "clear\x1b[2J", "bidi \u202e"])
def test_search_echo_and_hits_are_literal(hostile_db: Path, query: str, mode: str) -> None:
    # Hybrid search on a store without embeddings says so on stderr and ranks by keyword.
    out = cli(hostile_db, "search", query, "--mode", mode)
    assert "hits (keyword)" in out
    data = json.loads(cli(hostile_db, "search", query, "--mode", mode, "--json"))
    assert data["query"] == query
    found = cli(hostile_db, "search", "passwd", "--mode", mode)  # titles with markup and OSC 8
    assert "[link=file:///etc/passwd]passwd-link[/link]" in found
    assert "osc8 \\x1b]8;;file:///etc/passwd" in found


def test_stats_lists_owner_and_topic_names_literally(hostile_db: Path) -> None:
    out = cli(hostile_db, "stats")
    assert "[/] t" in out and "clear\\x1b[2Jscreen" in out


def test_decay_and_maintain_printouts_are_literal(hostile_db: Path) -> None:
    shows_literally(cli(hostile_db, "decay", "--dry-run", "--top", "100"))
    cli(hostile_db, "maintain", "--dry-run", "--top", "100")
    plan = json.loads(cli(hostile_db, "maintain", "--dry-run", "--json"))
    assert plan["dry_run"] is True
    applied = cli(hostile_db, "decay", "--apply", "--top", "100")
    shows_literally(applied)
    assert "applied as run 1" in applied
    runs = cli(hostile_db, "runs")
    assert "relevance" in runs
    json.loads(cli(hostile_db, "runs", "--json"))
    with Store(hostile_db, actor="test") as store:
        store.edit(3, {"title": CORPUS[0]}, now=NOW + 1)
    undone = cli(hostile_db, "undo", "1")
    assert "undid run 1" in undone and "#3: " in undone  # changed since the run
    applied = json.loads(cli(hostile_db, "decay", "--apply", "--json"))
    assert applied["run_id"] == 2
    assert json.loads(cli(hostile_db, "undo", "2", "--json"))["run_id"] == 2
    stats = json.loads(cli(hostile_db, "stats", "--json"))
    assert "topic [/] t" in stats["counts"]["topic"]


@pytest.mark.parametrize("fmt", ["jsonl", "mem0"])
def test_export_to_stdout_escapes_and_round_trips(hostile_db: Path, fmt: str) -> None:
    out = cli(hostile_db, "export", "--all", "--history", "--format", fmt, "--reveal")
    lines = [json.loads(line) for line in out.splitlines()]
    text = json.dumps(lines, ensure_ascii=False)
    for stored in CORPUS:
        assert json.dumps(stored, ensure_ascii=False)[1:-1] in text


def test_json_outputs_decode_to_the_stored_strings(hostile_db: Path) -> None:
    rows = json.loads(cli(hostile_db, "list", "--json", "--limit", "100"))
    assert sorted(r["title"] for r in rows) == sorted([*CORPUS, CORPUS[0], CORPUS[4], CORPUS[13]])
    shown = json.loads(cli(hostile_db, "show", "15", "--json", "--accesses"))
    assert shown["title"] == CORPUS[14]
    assert shown["accesses"][0]["query"] == CORPUS[14]


def test_an_error_line_echoing_a_query_is_one_literal_line(hostile_db: Path) -> None:
    code, _, err = run(["search", "\x1b[2J\u202e", "--mode", "semantic", "--db", str(hostile_db)])
    assert code == 1
    assert err.count("\n") == 1 and err.startswith("memory-console: error: ")


# -- the console --------------------------------------------------------------------------

SIZE = (180, 50)
# The words inside the corpus's click actions: clicking them must run nothing.
CLICK_TARGETS = ("quit-click", "shot-click", "archive-click", "bell-click", "passwd-link")


@pytest.fixture
def hostile_store(hostile_db: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Store]:
    """The hostile store opened as the console opens it, the working directory a fresh one
    (where `app.screenshot('pwned.svg', '.')` would write)."""
    monkeypatch.chdir(hostile_db.parent)
    with Store(hostile_db, actor="tui") as store:
        yield store


def screen_text(app: Any) -> str:
    """The screen as the terminal would show it, as text (what export_screenshot draws)."""
    from rich.console import Console

    width, height = app.size
    console = Console(
        width=width, height=height, file=io.StringIO(), force_terminal=True, record=True
    )
    console.print(
        app.screen._compositor.render_update(full=True, screen_stack=app._background_screens)
    )
    text = console.export_text(styles=False)
    found = RAW.search(text)
    assert found is None, f"raw {found.group()!r} on the screen"
    return text


def places(text: str, word: str) -> list[tuple[int, int]]:
    """Screen cells (x, y) where `word` starts."""
    from rich.cells import cell_len

    found = []
    for y, line in enumerate(text.splitlines()):
        start = line.find(word)
        while start != -1:
            found.append((cell_len(line[:start]) + 1, y))
            start = line.find(word, start + 1)
    return found


def archived(store: Store) -> int:
    return int(store._query("SELECT count(*) FROM memory WHERE status = 'archived'")[0][0])


async def click_every_action(pilot: Any, store: Store) -> str:
    """Click each visible click-action word of the corpus; nothing may happen: the app runs
    on, no screenshot file appears, no memory is archived."""
    app = pilot.app
    before = archived(store)
    text = screen_text(app)
    clicked = 0
    for word in CLICK_TARGETS:
        for x, y in places(text, word)[:4]:
            await pilot.click(offset=(x, y))
            await settle(pilot)
            clicked += 1
            assert app.is_running, f"clicking {word} at {x},{y} ended the console"
    assert not list(Path.cwd().glob("*.svg")), "a click wrote a screenshot"
    assert archived(store) == before, "a click archived memories"
    return text


async def cursor_to(pilot: Any, ident: int) -> None:
    from memory_console.tui.widgets.memory_table import MemoryTable

    table = pilot.app.screen.query_one(MemoryTable)
    row = next(i for i, record in enumerate(table.records) if record.id == ident)
    table.move_cursor(row=row, animate=False)
    table.focus()
    await settle(pilot)


def on_screen(text: str, expected: tuple[str, ...]) -> None:
    for shown in expected:
        assert shown in text, f"{shown!r} not on the screen"


async def test_main_screen_tree_table_and_detail_are_literal(hostile_store: Store) -> None:
    app = console(hostile_store)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        text = await click_every_action(pilot, hostile_store)
        on_screen(text, ("[@click=app.quit]quit-click[/]", "[/] t", "[bold red]RED-X[/]"))
        on_screen(text, ("clear\\x1b[2Jscreen", "c1 csi\\x9b2Jhere", "bidi \\u202eevil.exe"))
        on_screen(text, ("owner1 [/] t", ":warning: :smile:"))  # the topics tree
        for _ in range(len(CORPUS) + 3):  # the detail pane follows the cursor over every row
            await pilot.press("down")
            await settle(pilot)
            screen_text(app)
        assert app.is_running


async def test_story_screens_show_fields_history_and_accesses_literally(
    hostile_store: Store,
) -> None:
    from memory_console.tui.screens.story import StoryScreen

    app = console(hostile_store)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        for ident in range(1, len(CORPUS) + 4):
            app.push_screen(StoryScreen(ident))
            await settle(pilot)
            text = screen_text(app)
            stored = CORPUS[(ident - 1) % len(CORPUS)] if ident <= len(CORPUS) else None
            if stored is not None and len(stored) < 60 and "\n" not in stored:
                assert visible(stored) in text
            if ident in (1, 3, 14):
                await click_every_action(pilot, hostile_store)
            await pilot.press("escape")
            await settle(pilot)
        assert app.is_running


@pytest.mark.parametrize("query", ["[/] t", "[@click=app.quit]", "clear\x1b[2J", "\x00nul"])
async def test_search_and_filters_echo_queries_literally(hostile_store: Store, query: str) -> None:
    from textual.widgets import Input, Select

    app = console(hostile_store)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("slash")
        await settle(pilot)
        search = app.screen.query_one("#search-input", Input)
        search.value = query
        await pilot.press("enter")
        await settle(pilot)
        text = screen_text(app)
        assert visible(query, layout=False) in text
        await click_every_action(pilot, hostile_store)
        await pilot.press("escape")
        await settle(pilot)
        app.screen.query_one("#filter-text", Input).value = query
        await settle(pilot)
        screen_text(app)
        app.screen.query_one("#filter-owner").focus()  # the owners' names in a drop-down
        await pilot.press("enter")
        await settle(pilot)
        assert app.screen.query_one("#filter-owner", Select).expanded
        screen_text(app)
        await pilot.press("escape")
        await settle(pilot)
        assert app.is_running


async def test_maintenance_preview_review_runs_and_health_are_literal(
    hostile_store: Store,
) -> None:
    from memory_console.tui.plan_request import PlanRequest
    from memory_console.tui.screens.preview import PreviewScreen
    from memory_console.tui.screens.review import ReviewScreen
    from memory_console.tui.screens.runs import RunsScreen

    app = console(hostile_store)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("m")
        await settle(pilot)
        screen_text(app)
        await pilot.press("ctrl+r")  # preview the default passes
        await settle(pilot)
        assert isinstance(app.screen, PreviewScreen)
        text = await click_every_action(pilot, hostile_store)
        on_screen(text, ("[@click=app.quit]quit-click[/]",))
        for _ in range(12):  # the detail line follows the cursor
            await pilot.press("down")
            await settle(pilot)
            screen_text(app)
        await pilot.press("escape", "escape")
        await settle(pilot)
        app.push_screen(PreviewScreen(PlanRequest(("consolidate",), "relevance", {}, NOW, NOW)))
        await settle(pilot)
        text = screen_text(app)
        assert visible(DUPLICATE_OWNER, layout=False) in text  # in the merge's reason
        await pilot.press("c")
        await settle(pilot)
        assert isinstance(app.screen, ReviewScreen)
        text = await click_every_action(pilot, hostile_store)
        on_screen(text, ("[/] t", "clear\\x1b[2Jscreen"))
        await pilot.press("escape")
        await settle(pilot)
        await pilot.press("A")  # apply the merge, then see it on the runs screen
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        await pilot.press("R")
        await settle(pilot)
        assert isinstance(app.screen, RunsScreen)
        text = await click_every_action(pilot, hostile_store)
        on_screen(text, ("[/] t",))
        await pilot.press("H")
        await settle(pilot)
        text = await click_every_action(pilot, hostile_store)
        on_screen(text, ("owner1 [/] t",))
        assert app.is_running


async def test_dialogs_palette_help_and_notifications_are_literal(hostile_store: Store) -> None:
    from textual.widgets import Input

    from memory_console.tui.screens.edit import EditScreen
    from memory_console.tui.screens.forget import ForgetScreen

    app = console(hostile_store)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        for ident in (14, 16, 28):  # escape sequences, a tab and newline in the edited fields
            await cursor_to(pilot, ident)
            await pilot.press("e")
            await settle(pilot)
            assert isinstance(app.screen, EditScreen)
            screen_text(app)
            await pilot.press("escape")
            await settle(pilot)
        await cursor_to(pilot, 1)
        await pilot.press("f")
        await settle(pilot)
        assert isinstance(app.screen, ForgetScreen)
        on_screen(screen_text(app), ("[@click=app.quit]quit-click[/]",))
        app.screen.query_one("#forget-reason", Input).value = CORPUS[4]
        await pilot.press("enter")
        await settle(pilot)
        screen_text(app)
        app.notify(CORPUS[4], title=CORPUS[6])
        app.notify(CORPUS[13] + CORPUS[0])
        await settle(pilot)
        on_screen(screen_text(app), ("[/] t", "[bold red]RED-X[/]", "clear\\x1b[2Jscreen"))
        await click_every_action(pilot, hostile_store)
        await pilot.press("question_mark")
        await settle(pilot)
        screen_text(app)
        await pilot.press("escape")
        await settle(pilot)
        await pilot.press("ctrl+p")
        await settle(pilot)
        await pilot.press(*"sea")
        await settle(pilot)
        screen_text(app)
        await pilot.press("escape")
        await settle(pilot)
        assert app.is_running


async def test_clicking_action_markup_in_a_stored_title_runs_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only click actions (nothing that fails to parse), so the console starts on old code
    too: the clicks themselves are what this checks."""
    monkeypatch.chdir(tmp_path)
    with Store(tmp_path / "clicks.db", actor="tui") as store:
        for index, text in enumerate(CORPUS[:4]):
            store.add(hostile_memory(index, text), now=NOW - 400 * DAY)
        app = console(store)
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            await click_every_action(pilot, store)
            assert app.is_running


# -- snapshots ----------------------------------------------------------------------------

SNAPSHOT_SIZE = (140, 40)


def test_main_screen_snapshot(snap_compare: Any, hostile_store: Store) -> None:
    assert snap_compare(console(hostile_store), terminal_size=SNAPSHOT_SIZE, run_before=settle)


def test_story_screen_snapshot(snap_compare: Any, hostile_store: Store) -> None:
    async def open_story(pilot: Any) -> None:
        from memory_console.tui.screens.story import StoryScreen

        await settle(pilot)
        pilot.app.push_screen(StoryScreen(16))  # the OSC 8 link, recalled by its own text
        await settle(pilot)

    assert snap_compare(console(hostile_store), terminal_size=SNAPSHOT_SIZE, run_before=open_story)


# -- the structure ------------------------------------------------------------------------

PACKAGE = Path(__file__).resolve().parent.parent / "memory_console"
STORED_FIELDS = {
    "title", "content", "owner", "topic", "keywords", "metadata", "source", "query", "reason",
    "actor",
}  # fmt: skip


def calls(folder: str) -> Iterator[tuple[str, Any]]:
    """(module, call node) of every call in the modules under memory_console/`folder`."""
    import ast

    for path in sorted((PACKAGE / folder).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                yield path.name, node


def name_of(call: Any) -> str:
    import ast

    func = call.func
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else ""


def reads_stored_field(node: Any) -> bool:
    import ast

    return any(
        isinstance(sub, ast.Attribute) and sub.attr in STORED_FIELDS for sub in ast.walk(node)
    )


@pytest.mark.parametrize("folder", ["tui", "commands"])
def test_stored_fields_become_renderables_only_through_literal(folder: str) -> None:
    """A Text, Content or markup parser is never built from a stored field directly, and
    widgets that would parse a str as markup are only the console's literal kinds."""
    import ast

    wrong = []
    for module, call in calls(folder):
        name = name_of(call)
        if name in ("Text", "Content", "from_markup", "from_ansi", "render_markup"):
            if any(reads_stored_field(arg) for arg in call.args):
                wrong.append(f"{module}:{call.lineno} {name} of a stored field")
        if name in ("from_markup", "render_markup"):
            wrong.append(f"{module}:{call.lineno} parses markup")
        if name in ("DataTable", "Input", "TextArea"):
            wrong.append(f"{module}:{call.lineno} a {name} that would show stored text raw")
        for keyword in call.keywords:
            if keyword.arg == "markup" and not (
                isinstance(keyword.value, ast.Constant) and keyword.value.value is False
            ):
                wrong.append(f"{module}:{call.lineno} markup on")
    assert not wrong, wrong


def test_only_the_literal_widgets_derive_from_the_raw_ones() -> None:
    """Tables, inputs and trees of the console show str as written: a new DataTable, Input or
    TextArea kind derives from the literal ones, and a Tree kind reads its labels literally."""
    import ast

    wrong = []
    for path in sorted((PACKAGE / "tui").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ClassDef):
                continue
            bases = [ast.unparse(base).split("[")[0] for base in node.bases]
            raw = set(bases) & {"DataTable", "Input", "TextArea"}
            if raw and not path.name.startswith("literal_"):
                wrong.append(f"{path.name}:{node.name}({', '.join(raw)})")
            methods = {item.name for item in node.body if isinstance(item, ast.FunctionDef)}
            if "Tree" in bases and "process_label" not in methods:
                wrong.append(f"{path.name}:{node.name}(Tree) without process_label")
    assert not wrong, wrong


async def test_merge_review_masks_the_secrets_of_members_and_merged_memory(
    tmp_path: Path,
) -> None:
    """The review has no reveal key: a secret in a merge's members stays masked there."""
    from memory_console.tui.plan_request import PlanRequest
    from memory_console.tui.screens.preview import PreviewScreen
    from memory_console.tui.screens.review import ReviewScreen

    with Store(tmp_path / "secret.db", actor="tui") as store:
        for _ in range(3):
            secret = hostile_memory(0, "office wifi password = Zq7hunter22")
            secret.update(owner="sam", keywords=["office", "wifi", "password"])
            store.add(secret, now=NOW - 400 * DAY)
        app = console(store)
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            app.push_screen(PreviewScreen(PlanRequest(("consolidate",), "relevance", {}, NOW, NOW)))
            await settle(pilot)
            await pilot.press("c")
            await settle(pilot)
            assert isinstance(app.screen, ReviewScreen)
            text = screen_text(app)
            assert "office wifi password" in text
            assert "Zq7hunter22" not in text
