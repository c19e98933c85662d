"""Read-only mode (--read-only, the setting, unwritable files and folders) and owner-only files."""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from memory_console.store import Store
from tests.helpers import ISO_NOW, console, invoke, notes, one_error_line, open_on, settle

LATER = "2027-06-01T00:00:00Z"


def store_state(path: Path) -> tuple[str, list[tuple[object, ...]]]:
    """The store file's bytes (hashed) and every memory and event row."""
    with Store(path, read_only=True) as store:
        rows = store._query("SELECT * FROM memory ORDER BY id")
        rows += store._query("SELECT * FROM memory_event ORDER BY id")
        rows += store._query("SELECT * FROM maintenance_run ORDER BY id")
    return hashlib.sha256(path.read_bytes()).hexdigest(), rows


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A settled store (write-ahead log checkpointed) with one applied decay run."""
    folder = tmp_path_factory.mktemp("read-only")
    path = folder / "store.db"
    source = folder / "in.jsonl"
    source.write_text(
        "".join(
            json.dumps(line) + "\n"
            for line in [
                {
                    "content": "Prefers dark mode.",
                    "memory_type": "episodic",
                    "created_at": "2026-01-01T00:00:00Z",
                },
                {
                    "content": "Weekly sync with Bob.",
                    "memory_type": "episodic",
                    "created_at": "2026-02-01T00:00:00Z",
                    "status": "archived",
                },
            ]
        )
    )
    assert invoke(["import", str(source), "--db", str(path), "--now", ISO_NOW]).code == 0
    assert invoke(["decay", "--apply", "--db", str(path), "--now", ISO_NOW]).code == 0
    with Store(path) as store:
        store.connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return path


@pytest.fixture
def settled(template: Path, tmp_path: Path) -> Path:
    folder = tmp_path / "data"
    folder.mkdir()
    path = folder / "store.db"
    shutil.copy(template, path)
    return path


def write_commands(folder: Path) -> dict[str, list[str]]:
    """Every command that writes, as the word its refusal names and its arguments."""
    source = folder.parent / "more.jsonl"
    source.write_text('{"content": "Likes tea."}\n')
    return {
        "import": ["import", str(source)],
        "protect": ["protect", "1"],
        "unprotect": ["unprotect", "1"],
        "archive": ["archive", "1"],
        "restore": ["restore", "2"],
        "forget": ["forget", "1"],
        "purge": ["purge", "1", "--out", str(folder.parent / "purged.jsonl")],
        "decay --apply": ["decay", "--apply", "--now", LATER],
        "maintain --apply": ["maintain", "--apply", "--now", LATER],
        "undo": ["undo", "1"],
        "reindex": ["reindex"],
        "demo": ["demo", "--count", "5", "--force"],
    }


READ_COMMANDS = [
    ["list"],
    ["list", "--json"],
    ["show", "1"],
    ["stats"],
    ["runs"],
    ["search", "dark", "--mode", "keyword"],
    ["export"],
    ["decay", "--dry-run", "--now", LATER],
    ["maintain", "--dry-run", "--now", LATER],
]


@pytest.mark.parametrize("how", ["global flag", "command flag", "setting"])
def test_read_only_mode_refuses_every_write_and_reads_all(
    settled: Path, how: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def argv(command: list[str]) -> list[str]:
        if how == "global flag":
            return ["--read-only", *command, "--db", str(settled)]
        if how == "command flag":
            return [*command, "--read-only", "--db", str(settled)]
        monkeypatch.setenv("MEMORY_CONSOLE_READ_ONLY", "1")
        return [*command, "--db", str(settled)]

    before = store_state(settled)
    for what, command in write_commands(settled.parent).items():
        line = one_error_line(invoke(argv(command)))
        assert line == (
            f"memory-console: error: read-only mode: {what} refused "
            "(--read-only, or read_only in the settings)"
        ), line
    for command in READ_COMMANDS:
        result = invoke(argv(command))
        assert result.code == 0, (command, result.err)
    assert store_state(settled) == before
    assert not (settled.parent.parent / "purged.jsonl").exists()


@contextlib.contextmanager
def immutable(path: Path) -> Iterator[None]:
    """The file or folder made immutable (chattr +i), which binds root too; skipped where the
    file system has no such attribute."""
    done = subprocess.run(["chattr", "+i", str(path)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(
            f"chattr +i does not work here ({done.stderr.strip()}); "
            "test_permission_bits_for_an_unprivileged_user covers read-only files"
        )
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", str(path)], check=True)


def test_an_unwritable_file_is_read_and_never_written(settled: Path) -> None:
    before = store_state(settled)
    with immutable(settled):
        for command in READ_COMMANDS:
            result = invoke([*command, "--db", str(settled)])
            assert result.code == 0, (command, result.err)
        for what, command in write_commands(settled.parent).items():
            line = one_error_line(invoke([*command, "--db", str(settled)]))
            assert line == (
                f"memory-console: error: {settled}: read-only file (no write "
                f"permission): {what} refused; nothing was written"
            ), line
    assert store_state(settled) == before


def test_an_unwritable_folder_is_read_and_never_written(template: Path, settled: Path) -> None:
    before = store_state(template)  # the copy's folder holds the store file alone
    folder = settled.parent
    with immutable(folder):
        for command in READ_COMMANDS:
            result = invoke([*command, "--db", str(settled)])
            assert result.code == 0, (command, result.err)
        for what, command in write_commands(folder).items():
            line = one_error_line(invoke([*command, "--db", str(settled)]))
            assert line == (
                f"memory-console: error: {settled}: its directory {folder} is "
                f"read-only: {what} refused; nothing was written"
            ), line
        new = folder / "new.db"
        line = one_error_line(invoke([*write_commands(folder)["import"], "--db", str(new)]))
        assert line.startswith(f"memory-console: error: {new}: cannot create")
        assert sorted(p.name for p in folder.iterdir()) == ["store.db"]
    assert store_state(settled) == before


UNPRIVILEGED = textwrap.dedent("""
    import contextlib, io, json, sys
    from memory_console.cli import main

    def run(*argv):
        err = io.StringIO()
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
            code = main(list(argv))
        return [code, err.getvalue()]

    results = {}
    for db in sys.argv[1:]:
        results[db] = {
            "list": run("list", "--db", db),
            "stats": run("stats", "--db", db, "--json"),
            "protect": run("protect", "1", "--db", db),
            "decay": run("decay", "--apply", "--db", db),
            "import": run("import", db + ".jsonl", "--db", db),
        }
    print(json.dumps(results))
""")


def test_permission_bits_for_an_unprivileged_user(template: Path) -> None:
    """Root ignores permission bits, so this runs as nobody (setpriv), keeping only the
    capability to read and search everywhere (the interpreter lives under /root): a store
    file of mode 0400 and a store in a folder of mode 0500 are read, never written."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv to run a check as an unprivileged user")
    base = Path(tempfile.mkdtemp(prefix="memory-console-ro-", dir="/tmp"))
    try:
        base.chmod(0o755)
        paths = {}
        for case, (file_mode, folder_mode) in {
            "file": (0o400, 0o700),
            "folder": (0o600, 0o500),
        }.items():
            folder = base / case
            folder.mkdir()
            path = folder / "store.db"
            shutil.copy(template, path)
            Path(f"{path}.jsonl").write_text('{"content": "Likes tea."}\n')
            for item in (path, Path(f"{path}.jsonl"), folder):
                os.chown(item, 65534, 65534)
            path.chmod(file_mode)
            folder.chmod(folder_mode)
            paths[case] = path
        before = store_state(template)  # their folders hold the store files alone
        done = subprocess.run(
            [
                "setpriv",
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                "--inh-caps=+dac_read_search",
                "--ambient-caps=+dac_read_search",
                sys.executable,
                "-c",
                UNPRIVILEGED,
                *map(str, paths.values()),
            ],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=base,
        )
        if done.returncode != 0 and "setpriv" in done.stderr:
            pytest.skip(f"setpriv cannot drop to nobody here: {done.stderr.strip()}")
        assert done.returncode == 0, done.stderr
        results = json.loads(done.stdout)
        for case, path in paths.items():
            outcome = results[str(path)]
            assert outcome["list"][0] == 0 and outcome["stats"][0] == 0, outcome
            why = (
                "read-only file (no write permission)"
                if case == "file"
                else f"its directory {path.parent} is read-only"
            )
            for what in ("protect", "decay", "import"):
                code, err = outcome[what]
                assert code == 1 and err.startswith(f"memory-console: error: {path}: {why}: "), (
                    case,
                    what,
                    err,
                )
            assert store_state(path) == before
    finally:
        shutil.rmtree(base, ignore_errors=True)


async def test_the_console_on_an_unwritable_store_is_read_only(settled: Path) -> None:
    from memory_console.commands import common

    before = store_state(settled)
    with immutable(settled):
        store = common.open_store(argparse.Namespace(db=str(settled)), actor="tui")
        try:
            assert store.read_only
            app = console(store)
            seen = notes(app)
            async with app.run_test(size=(120, 36)) as pilot:
                await open_on(app, pilot, [1])
                assert app.sub_title.endswith("(read-only)")
                await pilot.press("p")
                await pilot.press("f")
                await settle(pilot)
        finally:
            store.close()
    assert any("read-only store: protect is disabled" in text for text in seen), seen
    assert store_state(settled) == before


def test_the_agent_api_on_a_read_only_store_is_refused(settled: Path) -> None:
    from memory_console.api import MemoryAPI
    from memory_console.store import ReadOnlyError

    before = store_state(settled)
    with Store(settled, read_only=True, actor="api") as store:
        memory = MemoryAPI(store, semantic=False)
        with pytest.raises(ReadOnlyError, match="read-only store: adding memories refused"):
            memory.remember("Remember that I like jazz")
        with pytest.raises(ReadOnlyError, match="recording an access refused"):
            memory.recall("dark mode", k=1)  # recall reinforces what it returns: a write
    assert store_state(settled)[1] == before[1]


# -- new files are the owner's only ------------------------------------------------------------


@pytest.fixture
def open_umask() -> Iterator[None]:
    """A umask that would leave new files readable by everyone."""
    previous = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(previous)


def mode(path: Path) -> int:
    return path.stat().st_mode & 0o777


def test_new_stores_exports_and_folders_are_owner_only(tmp_path: Path, open_umask: None) -> None:
    from memory_console.api import MemoryAPI

    source = tmp_path / "in.jsonl"
    source.write_text('{"content": "Likes tea."}\n{"content": "Walks daily."}\n')
    imported = tmp_path / "new" / "folder" / "imported.db"
    assert invoke(["import", str(source), "--db", str(imported)]).code == 0
    with Store(imported) as store:  # an open store has its -wal and -shm files
        store.add({"content": "Reads at night."})
        siblings = [Path(f"{imported}{suffix}") for suffix in ("-wal", "-shm")]
        assert {mode(p) for p in siblings} == {0o600}
    demo = tmp_path / "demo.db"
    assert invoke(["demo", "--count", "20", "--db", str(demo)]).code == 0
    with MemoryAPI(tmp_path / "agent.db", semantic=False) as memory:
        memory.remember("Remember that I like jazz")
    export = tmp_path / "export.jsonl"
    assert invoke(["export", "--db", str(imported), "--out", str(export)]).code == 0
    purged = tmp_path / "purged.jsonl"
    assert invoke(["purge", "1", "--db", str(imported), "--out", str(purged)]).code == 0
    for path in (imported, demo, tmp_path / "agent.db", export, purged):
        assert mode(path) == 0o600, path
    assert mode(imported.parent) == 0o700 and mode(imported.parent.parent) == 0o700
