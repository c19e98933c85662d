"""Paths and files an operator hands us: purge's new file, non-regular store paths, --now."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from memory_console.store import Store
from memory_console.store.errors import StoreError
from tests.test_hostile_input import (
    Outcome,
    count,
    digest,
    fill,
    invoke,
    one_error_line,
    small_disk,
)

NOW = "2026-11-17T00:00:00Z"


@pytest.fixture
def small_store(tmp_path: Path) -> Path:
    path = tmp_path / "small.db"
    assert (
        invoke(["demo", "--count", "20", "--seed", "5", "--db", str(path), "--now", NOW]).code == 0
    )
    return path


def purge(store: Path, out: str | Path, *ids: str) -> Outcome:
    return invoke(["purge", *(ids or ("1", "2")), "--db", str(store), "--out", str(out)])


# -- purge --out ---------------------------------------------------------------------------


def test_purge_writes_a_new_private_file_that_imports_again(
    small_store: Path, tmp_path: Path
) -> None:
    out = tmp_path / "purged.jsonl"
    result = purge(small_store, out, "1", "2")
    assert result.code == 0, result
    assert str(out) not in result.out.replace(f"written to {out}", "")  # no data on stdout
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert [line["id"] for line in lines] == [1, 2] and all(line["history"] for line in lines)
    assert count(small_store) == 18
    again = tmp_path / "again.db"
    assert invoke(["import", str(out), "--db", str(again), "--now", NOW]).code == 0
    assert count(again) == 2


@pytest.mark.parametrize("kind", ["existing file", "symlink to a file", "dangling symlink"])
def test_purge_refuses_an_existing_path_or_a_symlink(
    small_store: Path, tmp_path: Path, kind: str
) -> None:
    target = tmp_path / "notes.txt"
    target.write_text("someone's notes\n")
    os.chmod(target, 0o644)
    out = tmp_path / "out.jsonl"
    if kind == "existing file":
        out = target
    elif kind == "symlink to a file":
        out.symlink_to(target)
    else:
        out.symlink_to(tmp_path / "nowhere.jsonl")
    before = digest(small_store)
    line = one_error_line(purge(small_store, out))
    assert str(out) in line and "purge writes a new file" in line, line
    assert target.read_text() == "someone's notes\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o644
    assert not (tmp_path / "nowhere.jsonl").exists()
    assert digest(small_store) == before and count(small_store) == 20


@pytest.mark.parametrize("out", ["/dev/stdout", "/dev/null", "-", "directory"])
def test_purge_refuses_devices_streams_and_directories(
    small_store: Path, tmp_path: Path, out: str
) -> None:
    where = str(tmp_path) if out == "directory" else out
    line = one_error_line(purge(small_store, where))
    assert "purge writes a new file" in line, line
    assert count(small_store) == 20


def test_purge_to_a_fifo_is_refused_without_waiting_for_a_reader(
    small_store: Path, tmp_path: Path
) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    command = [sys.executable, "-m", "memory_console.cli", "purge", "1", "--db", str(small_store)]
    # Without a reader, opening the FIFO for writing blocks forever: the timeout turns such a
    # hang into a failure instead of a stuck test run.
    done = subprocess.run(
        [*command, "--out", str(fifo)], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 1 and done.stdout == "", done
    assert "named pipe" in done.stderr and "purge writes a new file" in done.stderr
    assert count(small_store) == 20


def test_a_purge_that_cannot_write_deletes_nothing_and_leaves_no_file(
    small_store: Path, tmp_path: Path
) -> None:
    with small_disk(tmp_path / "disk") as disk:
        fill(disk / "filler")
        out = disk / "purged.jsonl"
        line = one_error_line(purge(small_store, out, *map(str, range(1, 21))))
        assert "the disk is full" in line and "nothing was purged" in line, line
        assert not out.exists()
    missing = tmp_path / "no" / "such" / "out.jsonl"
    with Store(small_store) as store, pytest.raises(StoreError, match="nothing was purged"):
        store.purge([2], missing)
    assert count(small_store) == 20


def test_text_stored_before_surrogates_were_refused_is_purged_escaped(
    small_store: Path, tmp_path: Path
) -> None:
    with Store(small_store) as store:
        store.connection.execute(
            "UPDATE memory_event SET before = ? WHERE memory_id = 1", ('{"title": "\\ud800"}',)
        )
    out = tmp_path / "purged.jsonl"
    assert purge(small_store, out, "1").code == 0
    (line,) = out.read_text().splitlines()
    assert "\\ud800" in line
    assert count(small_store) == 19


# -- paths that are not regular files --------------------------------------------------------


@pytest.mark.parametrize("command", [["demo", "--count", "5"], ["demo", "--count", "5", "--force"]])
def test_demo_refuses_a_fifo_and_a_device(tmp_path: Path, command: list[str]) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    for path in (fifo, Path("/dev/null")):
        line = one_error_line(invoke([*command, "--db", str(path)]))
        assert str(path) in line and "not a regular file" in line, line
        assert "demo --db" not in line
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pipe"]


def test_the_console_does_not_offer_a_demo_store_at_a_device(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    for path in (fifo, Path("/dev/null")):
        for argv in (["--db", str(path)], ["--demo", "--db", str(path)]):
            line = one_error_line(invoke(argv))
            assert "not a regular file" in line and "demo --db" not in line, line
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pipe"]


def test_import_refuses_a_fifo_as_its_store(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    source = tmp_path / "in.jsonl"
    source.write_text('{"content": "Likes tea"}\n')
    line = one_error_line(invoke(["import", str(source), "--db", str(fifo)]))
    assert "not a regular file" in line and "demo --db" not in line, line
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


# -- --now ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "moment",
    [
        "9999-12-31T23:59:59Z",
        "9999-12-31T23:59:59-12:00",
        "9000-01-01T00:00:00Z",
        "1969-12-31T23:59:59Z",
        "0001-01-01T00:00:00+14:00",
    ],
)
@pytest.mark.parametrize(
    "command",
    [
        ["show", "1"],
        ["show", "1", "--json"],
        ["decay", "--dry-run"],
        ["maintain", "--dry-run"],
        ["stats"],
    ],
)
def test_now_outside_the_store_range_is_one_clear_error(
    small_store: Path, moment: str, command: list[str]
) -> None:
    line = one_error_line(invoke([*command, "--db", str(small_store), "--now", moment]))
    assert line == (
        f"memory-console: error: --now: {moment!r} is outside "
        "1970-01-01T00:00:00Z .. 8999-12-31T23:59:59Z"
    )


@pytest.mark.parametrize(
    "command", [["show", "1"], ["decay", "--dry-run"], ["maintain", "--dry-run"]]
)
def test_now_at_the_edges_of_the_range_works(small_store: Path, command: list[str]) -> None:
    for moment in ("1970-01-01T00:00:00Z", "8999-12-31T23:59:59Z", "8999-12-31T12:00:00-11:59"):
        result = invoke([*command, "--db", str(small_store), "--now", moment])
        assert result.code == 0, (moment, result)


def test_ages_before_the_memories_were_made_are_zero_not_negative(small_store: Path) -> None:
    result = invoke(["stats", "--json", "--db", str(small_store), "--now", "1970-01-01T00:00:00Z"])
    assert result.code == 0, result
    ages = json.loads(result.out)["age_days"]
    assert ages["min"] == ages["mean"] == ages["max"] == 0.0
