"""The console on a PostgreSQL store from the command line: `memory-console --db URL` opens
it at a terminal, and a database without a store is refused with the command that makes one.
(The screens themselves run on both backends in the other console tests.)"""

from __future__ import annotations

import os
import select
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from memory_console.store import MemoryFilter, Store
from memory_console.store.postgres import shown_url
from tests.helpers import (
    console,
    dialog_text,
    invoke,
    notes,
    one_error_line,
    open_on,
    server_rows,
    settle,
    terminal_output,
    where,
)

PROGRAM = [sys.executable, "-m", "memory_console"]


def at_a_terminal(
    argv: list[str], until: bytes, keys: bytes, timeout: float = 60.0
) -> tuple[int, bytes]:
    """The program on a pseudo-terminal of 120 x 36: once its screen shows `until`, the keys
    are typed; (exit code, everything it drew)."""
    import fcntl
    import pty
    import struct
    import termios

    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 36, 120, 0, 0))
    environment = {
        **os.environ,
        "TERM": "xterm-256color",
        "PYTHONPATH": str(Path(__file__).resolve().parent.parent),
    }
    child = subprocess.Popen(
        [*PROGRAM, *argv], stdin=follower, stdout=follower, stderr=follower, env=environment
    )
    os.close(follower)
    shown = b""
    typed = False
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([leader], [], [], 0.2)
            if ready:
                chunk = terminal_output(leader)
                if not chunk:
                    break
                shown += chunk
            if not typed and until in shown:
                time.sleep(0.5)  # the first screen finished drawing
                os.write(leader, keys)
                typed = True
            if child.poll() is not None and not ready:
                break
        return child.wait(timeout=30), shown
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        os.close(leader)


@pytest.mark.parametrize("backend", ["postgresql"])
def test_the_console_opens_a_postgresql_store_and_quits(backend_demo_store: Store) -> None:
    url = where(backend_demo_store)
    database = url.split("/")[3].split("?")[0]
    code, shown = at_a_terminal(["--db", url], until=b"hybrid search", keys=b"q")
    assert code == 0, shown.decode(errors="replace")[-2000:]
    assert database.encode() in shown, "the header names the database"


def test_a_database_without_a_store_is_refused_naming_the_demo_command(pg_url: str) -> None:
    for argv in (["--db", pg_url], ["--demo", "--db", pg_url]):
        line = one_error_line(invoke(argv))
        assert "no store in this database yet" in line, line
        assert f"memory-console demo --db {shown_url(pg_url)}" in line, line
    tables = "SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public'"
    assert server_rows(pg_url, tables) == [(0,)], "nothing was created"


@pytest.mark.parametrize("backend", ["postgresql"])
async def test_purge_in_the_console_erases_from_postgresql(backend_demo_store: Store) -> None:
    """X on a PostgreSQL store asks as on SQLite, names a purge file in the user's data
    directory, erases the memory, and says what the database's files still keep."""
    store = backend_demo_store
    ident = store.page(MemoryFilter(status="active", is_protected=False), limit=1).rows[0].id
    app = console(store)
    seen = notes(app)
    async with app.run_test(size=(120, 36)) as pilot:
        await open_on(app, pilot, [ident])
        await pilot.press("X")
        await settle(pilot)
        said = dialog_text(app)
        assert "Purge 1 memory for good?" in said and ".purged-" in said
        await pilot.click("#confirm-yes")
        await settle(pilot)
    assert store.get(ident) is None
    [note] = [note for note in seen if note.startswith("purged 1 memory")]
    assert "write-ahead log" in note, note
    [out] = list((Path(os.environ["MEMORY_CONSOLE_DATA_DIR"])).glob("*.purged-*.jsonl"))
    assert f'"id": {ident}' in out.read_text() or f'"id":{ident}' in out.read_text()


@pytest.mark.parametrize("backend", ["postgresql"])
async def test_semantic_search_ranks_in_the_database(backend_demo_store: Store) -> None:
    """The real embedder fills pgvector's column in the background; a search by meaning
    then ranks there (embed/database_index.py), and the console says hybrid."""
    from memory_console.embed.database_index import DatabaseIndex
    from memory_console.settings import Settings
    from memory_console.tui.app import make_app
    from memory_console.tui.screens.main import MainScreen
    from memory_console.tui.widgets.search_readiness import SearchReadiness
    from tests.helpers import NOW

    store = backend_demo_store
    app = make_app(Settings(db=where(store), page_size=30), store, now=NOW)
    app.typing.window = 0.0  # a pilot's keys come faster than typing
    async with app.run_test(size=(120, 36)) as pilot:
        readiness = app.screen.query_one(SearchReadiness)
        for _ in range(600):
            await pilot.pause(0.1)
            if str(readiness.render()) == "hybrid search":
                break
        assert str(readiness.render()) == "hybrid search"
        engine: Any = app.context.search
        assert isinstance(engine.semantic.index, DatabaseIndex)
        await pilot.press("slash", *"hot drinks", "enter")
        await settle(pilot)
        main = app.screen
        assert isinstance(main, MainScreen) and main.search is not None
        query, mode, hits = main.search
        assert mode == "hybrid" and hits
        assert any(hit.cosine is not None and hit.cosine > 0.3 for hit in hits)
    stored = server_rows(where(store), "SELECT count(*) FROM embedding WHERE embedding IS NOT NULL")
    assert stored[0][0] >= store.count(MemoryFilter(status="active"))
