"""Helpers shared by the tests (this module holds no tests): one fixed moment, store builders,
the in-process CLI, the console factory, settling a pilot and labelled texts for the secret scan."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import random
import re
import shutil
import sqlite3
import subprocess
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot

from memory_console.cli import main
from memory_console.settings import Settings
from memory_console.store import Store
from memory_console.store.validate import INSERT_COLUMNS
from memory_console.tui.app import MemoryConsoleApp, make_app
from memory_console.tui.screens.main import MainScreen
from tests.harness.clock import DAY, ISO_NOW, NOW  # noqa: F401
from tests.harness.console import settle  # noqa: F401
from tests.harness.files import scan_store_files, store_files  # noqa: F401
from tests.harness.masking import (  # noqa: F401
    reference_find,
    reference_mask,
    reference_mask_record,
    reference_mask_value,
)
from tests.harness.pairs import (  # noqa: F401
    PAIRS,
    add_pairs,
    consolidation_pairs,
    merged_pairs,
    precision_recall,
)
from tests.harness.pg_machines import database_url  # noqa: F401

# -- stores built from rows -------------------------------------------------------------------

SNAPSHOT_COLUMNS = (
    "id, owner, topic, tier, memory_type, title, content, keywords, source, importance, "
    "confidence, base_confidence, retrieval_count, created_at, updated_at, last_accessed_at, "
    "decay_policy, is_protected, status, consolidated_into, metadata, external_id"
)


def memory(content: str, *, days_old: float, **fields: Any) -> dict[str, Any]:
    """A memory created `days_old` days before NOW (episodic unless told)."""
    fields.setdefault("memory_type", "episodic")
    return {"content": content, "created_at": NOW - days_old * DAY, **fields}


DUPLICATE_TEXTS = (
    "Prefers green tea in the afternoon.",
    "Keeps the release checklist in the team wiki.",
    "Likes the aisle seat on short flights.",
    "Writes commit messages in the imperative mood.",
)


def add_duplicate_groups(store: Store, sizes: tuple[int, ...] = (3, 4, 3)) -> list[list[int]]:
    """Groups of exact duplicates (one text said again, as consolidation merges without
    vectors), one group per size, each of its own text; returns their ids."""
    groups = []
    for size, text in zip(sizes, DUPLICATE_TEXTS, strict=False):
        row = {"owner": "alice", "topic": "general", "content": text, "keywords": ["duplicate"]}
        groups.append(store.add_many([dict(row) for _ in range(size)], now=NOW - 40 * DAY))
    return groups


def snapshot(path: Path | str) -> dict[int, tuple[Any, ...]]:
    """Every memory's fields except revision, by id (of an SQLite file, or a PostgreSQL
    store's URL, read from the server)."""
    sql = f"SELECT {SNAPSHOT_COLUMNS} FROM memory ORDER BY id"
    if str(path).startswith("postgresql://"):
        return {row[0]: row for row in server_rows(str(path), sql)}
    with sqlite3.connect(path) as conn:
        rows = conn.execute(sql).fetchall()
    return {row[0]: row for row in rows}


def synthetic_rows(count: int, seed: int = 1) -> Iterator[tuple[Any, ...]]:
    """Memory rows (INSERT_COLUMNS order) that all decay at NOW: 40 to 400 days old, never
    accessed, episodic or procedural, standard policy, spread over five owners."""
    rng = random.Random(seed)
    for i in range(count):
        created = NOW - rng.uniform(40, 400) * DAY
        yield (
            f"owner{i % 5}",
            "general",
            "long_term",
            rng.choice(("episodic", "procedural")),
            f"memory {i}",
            f"memory {i} about a project",
            "[]",
            "manual",
            rng.random(),
            1.0,
            1.0,
            rng.randrange(12),
            created,
            created,
            None,
            "standard",
            0,
            "active",
            None,
            "{}",
            None,
            None,
            None,
        )


def build_synthetic_store(path: Path, count: int, seed: int = 1) -> Path:
    """A store of `count` synthetic memories, loaded as the demo builder does: indexes and
    the text index filled once after inserting, then the trigger put back."""
    with Store(path, actor="test") as store, store.transaction("building") as conn:
        indexes = conn.execute(
            "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'memory' "
            "AND sql IS NOT NULL"
        ).fetchall()
        for name, _ in indexes:
            conn.execute(f'DROP INDEX "{name}"')
        (trigger,) = conn.execute(
            "SELECT sql FROM sqlite_master WHERE name = 'memory_fts_ai'"
        ).fetchone()
        conn.execute("DROP TRIGGER memory_fts_ai")
        marks = ", ".join("?" * len(INSERT_COLUMNS))
        conn.executemany(
            f"INSERT INTO memory ({', '.join(INSERT_COLUMNS)}, revision) VALUES ({marks}, 0)",
            synthetic_rows(count, seed),
        )
        conn.execute(
            "INSERT INTO memory_fts (rowid, title, content, keywords) "
            "SELECT id, title, content, keywords FROM memory"
        )
        conn.execute(trigger)
        for _, sql in indexes:
            conn.execute(sql)
    return path


def count(path: Path) -> int:
    """How many memories the store at `path` holds."""
    with Store(path, read_only=True) as store:
        return store.count()


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def rows_digest(db: str | Path) -> str:
    """One hash of every row of every table of the store (as `copy` verifies a copy), on
    either backend: equal before and after means nothing was written."""
    from memory_console.store.copy import TABLES, Digest

    digest = Digest()

    def read(conn: Any) -> None:
        for table in TABLES:
            digest.read(conn, table)

    with Store(db, read_only=True) as store, store.snapshot():
        store.read(read)
    return digest.total()


def server_rows(url: str, sql: str) -> list[tuple[Any, ...]]:
    """Rows read from a PostgreSQL store straight from the server, past the Store: a test's
    proof that its data is in the database and not in a file named like the URL."""
    import psycopg

    with psycopg.connect(url) as conn:
        return conn.execute(sql).fetchall()


def copy_to_postgres(source: Path, url: str) -> None:
    """The SQLite store at `source` into the new PostgreSQL database at `url`, as `memory-console
    copy` moves it (ids kept, sequences past them, verified): how the PostgreSQL console tests
    get the demo store the SQLite ones open (its text index and vector column are the
    server's)."""
    from memory_console.store.copy import copy_from

    with Store(source, read_only=True) as store:
        copy_from(store, url)


def db_rows(db: Path | str, sql: str, params: tuple[Any, ...] | list[Any] = ()) -> list[Any]:
    """Rows of one statement (`?` parameters) read past the Store: from an SQLite file, or
    from the server a PostgreSQL store's URL names."""
    if str(db).startswith("postgresql://"):
        import psycopg

        from memory_console.store.postgres import placeholders

        with psycopg.connect(str(db)) as conn:
            return conn.execute(placeholders(sql), list(params) or None).fetchall()
    with sqlite3.connect(db) as conn:
        rows = conn.execute(sql, params).fetchall()
    conn.close()
    return rows


def scan_pg_files(
    url: str, tokens: list[str], tables: tuple[str, ...]
) -> dict[str, dict[str, int]]:
    """The raw bytes of the files PostgreSQL keeps `tables` in (heap, TOAST, every index, all
    forks and segments), searched case-insensitively after a CHECKPOINT: file -> token ->
    occurrences, for the files and tokens found (empty: no trace). Needs a superuser on this
    machine's server (the tests' own): it reads the server's data directory."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CHECKPOINT")
        folder = Path(conn.execute("SHOW data_directory").fetchone()[0])
        rows = conn.execute(
            "SELECT c.relname, pg_relation_filepath(c.oid) FROM pg_class AS c "
            "WHERE c.oid = ANY(%(t)s::regclass[]) "
            "OR c.oid IN (SELECT indexrelid FROM pg_index WHERE indrelid = ANY(%(t)s::regclass[])) "
            "OR c.oid IN (SELECT reltoastrelid FROM pg_class WHERE oid = ANY(%(t)s::regclass[])) "
            "OR c.oid IN (SELECT i.indexrelid FROM pg_index AS i JOIN pg_class AS t "
            "ON t.reltoastrelid = i.indrelid WHERE t.oid = ANY(%(t)s::regclass[]))",
            {"t": list(tables)},
        ).fetchall()
    assert {name for name, _ in rows} >= set(tables)
    found: dict[str, dict[str, int]] = {}
    for name, relative in rows:
        base = folder / relative
        for path in sorted(base.parent.glob(base.name + "*")):
            if path.name != base.name and path.name[len(base.name)] not in "._":
                continue  # another relation whose number begins with this one's
            data = path.read_bytes().lower()
            hits = {token: data.count(token.lower().encode()) for token in tokens}
            hits = {token: number for token, number in hits.items() if number}
            if hits:
                found[f"{name} ({path.name})"] = hits
    return found


def terminal_output(leader: int) -> bytes:
    """What a pseudo-terminal's program wrote since the last read; b"" once it has closed
    (the child gone: reading its leader then fails or returns nothing)."""
    try:
        return os.read(leader, 65536)
    except OSError:
        return b""


# -- the CLI in-process -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Outcome:
    code: int
    out: str
    err: str


def invoke(argv: list[str]) -> Outcome:
    """main() in-process, with strict UTF-8 streams like a real terminal's: its exit code
    (returned, or from SystemExit), stdout and stderr. Any other exception is a crash and
    propagates to the test."""
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", write_through=True)
    err = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", write_through=True)
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exit_:
            code = exit_.code if isinstance(exit_.code, int) else int(exit_.code is not None)
    texts = []
    for stream in (out, err):
        stream.flush()
        buffer = stream.buffer
        assert isinstance(buffer, io.BytesIO)
        texts.append(buffer.getvalue().decode("utf-8"))
    return Outcome(code, texts[0], texts[1])


# A long job's plain progress line (commands/common.py plain_progress): said only once the job
# has run two seconds, so whether one precedes an error depends on the machine's pace.
PROGRESS_LINE = re.compile(r"memory-console: .+: (?:[\d,]+ of [\d,]+ \()?\d+%\)?")


def one_error_line(result: Outcome) -> str:
    """The single error line a failed command printed on stderr (after progress lines, if the
    job ran long enough to say any: nothing else)."""
    assert result.code == 1, result
    lines = [line for line in result.err.splitlines() if not PROGRESS_LINE.fullmatch(line)]
    assert len(lines) == 1 and lines[0].startswith("memory-console: error: "), result.err
    return lines[0]


# -- a full disk ------------------------------------------------------------------------------


@contextlib.contextmanager
def small_disk(folder: Path, size: str = "2m") -> Iterator[Path]:
    """A tmpfs of `size` mounted at folder (skipped where mounting is refused)."""
    folder.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        pytest.skip(
            f"cannot mount a small tmpfs here ({done.stderr.strip()}); "
            "the simulated SQLITE_FULL test covers the store"
        )
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


def fill(path: Path) -> None:
    """Write zeros into `path` until the disk is full."""
    with path.open("wb", buffering=0) as handle:
        with contextlib.suppress(OSError):
            while True:
                handle.write(b"\0" * 65536)
        with contextlib.suppress(OSError):
            while True:
                handle.write(b"\0" * 512)
    assert shutil.disk_usage(path.parent).free < 4096


# -- the console ------------------------------------------------------------------------------

DEMO_COUNT = 300  # the console tests' demo store (built once, see conftest.demo_file)
DEMO_SEED = 7
PAGE_SIZE = 30  # enough rows to fill the test terminals, and cheap to redraw
# A console test of the screen's own behaviour (themes, the palette, a form's checks, progress
# shown while planning), which reads nothing the backends answer differently: it runs on SQLite
# only, and the suite's time goes to the tests whose reads and writes differ.
SCREEN_ONLY = pytest.mark.parametrize("backend", ["sqlite"])


def where(store: Store) -> str:
    """What --db names for this store: its file, or its URL."""
    return store.url if store.url is not None else str(store.path)


def console(store: Store, **settings: Any) -> MemoryConsoleApp:
    """The app as the CLI builds it, at the fixed `now`, without the background embedder."""
    settings.setdefault("page_size", PAGE_SIZE)
    app = make_app(Settings(db=where(store), **settings), store, now=NOW, semantic=False)
    # A pilot presses keys faster than anyone types: its single keys act at once here, and
    # tests/test_typing_burst.py drives the typing window itself.
    app.typing.window = 0.0
    return app


def notes(app: MemoryConsoleApp) -> list[str]:
    """Record every notification the app shows (the person's only feedback)."""
    seen: list[str] = []
    original = app.notify

    def notify(message: str, *args: Any, **kwargs: Any) -> Any:
        seen.append(str(message))
        return original(message, *args, **kwargs)

    app.notify = notify  # type: ignore[method-assign]
    return seen


async def open_on(app: MemoryConsoleApp, pilot: Pilot[Any], ids: list[int]) -> MainScreen:
    """Narrow the main screen's table to these memories (through the filter it uses)."""
    screen = app.screen
    assert isinstance(screen, MainScreen)
    screen.view = screen.view.with_filter(ids=tuple(ids))
    screen.reset_view()
    await settle(pilot)
    return screen


# -- labelled texts for the secret scan -------------------------------------------------------

LABELLED_TEXTS = Path(__file__).parent / "data" / "labelled_texts.json"


def labelled_texts(name: str) -> list[str]:
    """One list of tests/data/labelled_texts.json: its sections' texts in order, a section
    that names another list (`include`) standing for that list's texts."""
    lists = json.loads(LABELLED_TEXTS.read_text(encoding="utf-8"))
    texts: list[str] = []
    for section in lists[name]["sections"]:
        texts += labelled_texts(section["include"]) if "include" in section else section["texts"]
    return texts


PROSE_SECRET_TEXTS = labelled_texts("prose_secret_texts")
PROSE_CLEAN_TEXTS = labelled_texts("prose_clean_texts")

SECRET_TEXTS = labelled_texts("secret_texts")
CLEAN_TEXTS = labelled_texts("clean_texts")

HEALTH_TEXTS = labelled_texts("health_texts")
NOT_HEALTH_TEXTS = labelled_texts("not_health_texts")


# Every screen's snapshot is taken at both sizes an operator's terminal is likely to have.
SNAPSHOT_SIZES = pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])


def press(*keys: str, settle_each: bool = False) -> Any:
    """A snapshot's run_before: settle, press the keys (settling after each one when asked,
    for screens that open workers on every key), settle."""

    async def run_before(pilot: Any) -> None:
        await settle(pilot)
        for key in keys:
            await pilot.press(key)
            if settle_each:
                await settle(pilot)
        await settle(pilot)

    return run_before


def merge_first_two(frame: Any, fields: dict[str, Any]) -> Any:
    """A consolidate-like pass's result for tests: the frame's first two maintainable rows are
    consolidated into one new memory with `fields` (recorded in the frame, as passes do)."""
    import numpy as np

    from memory_console.maintenance.changes import ChangeSet, NewMemory, PassResult

    ids = frame.ids[np.flatnonzero(frame.maintainable())[:2]]
    new = NewMemory(-1, "merge", {"content": "merged", **fields}, reason="near duplicates")
    members = ChangeSet.build(
        "merge",
        "consolidated",
        ids,
        {
            "status": (np.array(["active"] * 2), np.array(["consolidated"] * 2)),
            "consolidated_into": (
                np.array([None, None], dtype=object),
                np.array([-1, -1], dtype=object),
            ),
        },
        ["merged into a new memory"] * 2,
    )
    frame.record(members)
    return PassResult([members], [new], {"groups": 1})


def dialog_text(app: MemoryConsoleApp) -> str:
    """The title and body of the confirmation dialog on top."""
    from memory_console.tui.screens.confirm import ConfirmScreen

    screen = app.screen
    assert isinstance(screen, ConfirmScreen)
    return screen.title_text + " " + str(screen.body)


def keep_variant_choice(cache_dir: Path, variant: str) -> None:
    """Keep, in cache_dir, a calibration of this machine that chose `variant`: what a
    machine where that variant passed its checks and ran fastest keeps, so a test can exercise
    the rewritten graph's cache whichever variant this machine would pick."""
    from memory_console.embed import calibration
    from memory_console.embed.embedder import candidates_of, file_sha256, read_manifest

    manifest = read_manifest()
    key = calibration.machine_key(file_sha256(manifest.onnx.path), candidates_of(manifest))
    previous = os.environ.get("MEMORY_CONSOLE_CACHE_DIR")
    os.environ["MEMORY_CONSOLE_CACHE_DIR"] = str(cache_dir)
    try:
        calibration.keep(
            calibration.Calibration(key, variant, calibration.INDEX_FLOAT32, measured=False)
        )
    finally:
        if previous is None:
            del os.environ["MEMORY_CONSOLE_CACHE_DIR"]
        else:
            os.environ["MEMORY_CONSOLE_CACHE_DIR"] = previous


# -- import layers ---------------------------------------------------------------------------


def import_cycles(graph: Mapping[str, Collection[str]]) -> list[list[str]]:
    """One cycle (its modules in import order, the first repeated at the end) through each
    group of modules that import each other (Tarjan's strongly connected components), for the
    layer tests of store/ and agent/: `graph` maps a module to the modules it imports."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    found = []
    for group in groups:
        members = set(group)
        start = group[0]
        # The shortest way back to `start` from the first module it imports in the group.
        paths = {start: [start]}
        frontier = [start]
        while frontier and not any(start in graph[node] for node in frontier if node != start):
            after = []
            for node in frontier:
                for target in sorted(graph[node]):
                    if target in members and target not in paths:
                        paths[target] = [*paths[node], target]
                        after.append(target)
            frontier = after
        last = next(node for node in frontier if start in graph[node])
        found.append([*paths[last], start])
    return found
