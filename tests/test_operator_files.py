"""Paths and files an operator hands us: purge's new file, non-regular store paths, --now."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from memory_console.store import Store
from memory_console.store.errors import StoreError
from tests.helpers import (
    ISO_NOW,
    Outcome,
    count,
    digest,
    fill,
    invoke,
    one_error_line,
    small_disk,
)


@pytest.fixture
def small_store(tmp_path: Path) -> Path:
    path = tmp_path / "small.db"
    assert (
        invoke(["demo", "--count", "20", "--seed", "5", "--db", str(path), "--now", ISO_NOW]).code
        == 0
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
    assert invoke(["import", str(out), "--db", str(again), "--now", ISO_NOW]).code == 0
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


# -- import: all or nothing, nothing left behind -----------------------------------------------


def test_a_failed_import_into_a_new_store_leaves_nothing(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"content": "Likes tea"}\n{"content": "ok", "confidence": 2}\n')
    store = tmp_path / "new" / "deeper" / "store.db"
    line = one_error_line(invoke(["import", str(bad), "--db", str(store), "--now", ISO_NOW]))
    assert f"{bad}:2: confidence" in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.jsonl"]
    empty = tmp_path / "empty.db"
    empty.write_bytes(b"")
    one_error_line(invoke(["import", str(bad), "--db", str(empty), "--now", ISO_NOW]))
    assert empty.read_bytes() == b""
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.jsonl", "empty.db"]


def test_a_failed_import_into_a_store_leaves_its_content_as_it_was(
    small_store: Path, tmp_path: Path
) -> None:
    def content() -> str:
        result = invoke(["export", "--all", "--history", "--reveal", "--db", str(small_store)])
        assert result.code == 0
        return result.out

    before = content()
    bad = tmp_path / "bad.jsonl"
    good = "".join(json.dumps({"content": f"Memory {n}"}) + "\n" for n in range(5000))
    bad.write_text(good + '{"content": "ok", "importance": "high"}\n')
    line = one_error_line(invoke(["import", str(bad), "--db", str(small_store), "--now", ISO_NOW]))
    assert f"{bad}:5001: importance" in line
    assert content() == before and count(small_store) == 20


def test_a_large_import_is_inserted_in_batches_all_in_one_transaction(tmp_path: Path) -> None:
    source = tmp_path / "many.jsonl"
    source.write_text(
        "".join(json.dumps({"id": n, "content": f"Memory {n}"}) + "\n" for n in range(1, 5001))
    )
    store = tmp_path / "store.db"
    result = invoke(["import", str(source), "--db", str(store), "--now", ISO_NOW, "--json"])
    assert result.code == 0, result
    assert json.loads(result.out)["imported"] == 5000 and count(store) == 5000
    source.write_text(
        "".join(json.dumps({"id": n, "content": f"Memory {n}"}) + "\n" for n in range(5001, 9001))
        + json.dumps({"id": 8500, "content": "again"})
        + "\n"
    )
    line = one_error_line(invoke(["import", str(source), "--db", str(store), "--now", ISO_NOW]))
    assert line.endswith(f"{source}:4001: duplicate id 8500 (first on line 3500)"), line
    assert count(store) == 5000


def test_gzip_is_read_by_its_magic_bytes_whatever_its_name(tmp_path: Path) -> None:
    import gzip

    packed = tmp_path / "memories.data"
    with gzip.open(packed, "wt", encoding="utf-8") as handle:
        for n in range(50):
            handle.write(json.dumps({"content": f"Memory {n} about tea"}) + "\n")
    store = tmp_path / "store.db"
    result = invoke(["import", str(packed), "--db", str(store), "--now", ISO_NOW])
    assert result.code == 0, result
    assert count(store) == 50


def peak_rss_of_import(source: Path, store: Path, *options: str) -> tuple[int, str, int]:
    """Exit code, stderr and the peak RSS (bytes) of a child process importing `source`."""
    script = (
        "import resource, subprocess, sys;"
        "done = subprocess.run(sys.argv[1:], capture_output=True, text=True);"
        "peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss;"
        "print(done.returncode, peak * 1024, done.stderr.strip(), sep='\\n')"
    )
    command = [sys.executable, "-m", "memory_console.cli", "import", str(source), *options]
    done = subprocess.run(
        [sys.executable, "-c", script, *command, "--db", str(store), "--now", ISO_NOW],
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    code, peak, err = done.stdout.split("\n", 2)
    return int(code), err.strip(), int(peak)


def test_a_gzip_bomb_fails_at_the_line_limit_in_bounded_memory(tmp_path: Path) -> None:
    import gzip

    bomb = tmp_path / "bomb.jsonl.gz"
    chunk = b"a" * 2**20
    with gzip.GzipFile(bomb, "wb", compresslevel=1) as handle:
        handle.write(b'{"content": "')
        for _ in range(1100):  # 1.1 GB of one line, a few MB on disk
            handle.write(chunk)
    assert bomb.stat().st_size < 10 * 2**20
    store = tmp_path / "store.db"
    code, err, peak = peak_rss_of_import(bomb, store, "--format", "jsonl")
    assert code == 1 and err == (
        f"memory-console: error: {bomb}:1: line longer than 16,777,216 bytes"
    ), err
    assert peak < 300 * 2**20, f"peak RSS {peak / 2**20:.0f} MB"
    assert not store.exists()
    # Detected: a first line longer than any JSONL line is a one-line JSON document.
    code, err, peak = peak_rss_of_import(bomb, store)
    assert code == 1 and "larger than 64 MB, the limit for a file read whole" in err, err
    assert peak < 300 * 2**20, f"peak RSS {peak / 2**20:.0f} MB"
    assert not store.exists()


def test_a_line_over_the_limit_is_refused_without_holding_it(tmp_path: Path) -> None:
    long_line = tmp_path / "long.jsonl"
    with long_line.open("wb") as handle:
        handle.write(b'{"content": "Likes tea"}\n{"content": "')
        handle.write(b"a" * (300 * 2**20))
        handle.write(b'"}\n')
    store = tmp_path / "store.db"
    code, err, peak = peak_rss_of_import(long_line, store)
    assert code == 1 and err.endswith(f"{long_line}:2: line longer than 16,777,216 bytes"), err
    assert peak < 300 * 2**20, f"peak RSS {peak / 2**20:.0f} MB"


def test_a_peer_format_document_over_its_size_bound_is_refused(tmp_path: Path) -> None:
    document = tmp_path / "mem0.json"
    with document.open("w") as handle:
        handle.write('{"results": [')
        handle.write(
            ",".join(f'{{"id": "m-{n}", "memory": "{"x" * 1000}"}}' for n in range(70_000))
        )
        handle.write("]}")
    line = one_error_line(invoke(["import", str(document), "--db", str(tmp_path / "s.db")]))
    assert "larger than 64 MB" in line and str(document) in line, line


# -- data that imports must export -------------------------------------------------------------


def nested(depth: int) -> dict[str, object]:
    """An object nested `depth` levels deep ({} is one level)."""
    value: dict[str, object] = {"leaf": "tea"}
    for _ in range(depth - 1):
        value = {"k": value}
    return value


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ({"content": "x", "metadata": nested(500)}, "nested more than"),
        ({"content": "x", "metadata": nested(33)}, "metadata is nested more than 32 levels"),
        ({"content": "x", "extra": nested(32)}, "metadata is nested more than 32 levels"),
        ({"content": "x\ud800"}, "unpaired surrogate"),
        ({"content": "x", "title": "\udc00"}, "unpaired surrogate"),
        ({"content": "x", "metadata": {"\ud800": 1}}, "unpaired surrogate"),
        ({"content": "x", "metadata": {"a": ["\udfff"]}}, "unpaired surrogate"),
        (
            {
                "content": "x",
                "history": [
                    {"at": "2026-01-01T00:00:00Z", "kind": "edited", "before": {"title": "\ud800"}}
                ],
            },
            "unpaired surrogate",
        ),
        (
            {
                "content": "x",
                "history": [{"at": "2026-01-01T00:00:00Z", "kind": "edited", "after": nested(33)}],
            },
            "history event 1: after is nested more than 32 levels",
        ),
        (
            {
                "content": "x",
                "history": [{"at": "2026-01-01T00:00:00Z", "kind": "accessed", "query": "\ud800"}],
            },
            "unpaired surrogate",
        ),
    ],
)
def test_what_cannot_be_written_back_is_refused_at_import(
    tmp_path: Path, line: dict[str, object], reason: str
) -> None:
    source = tmp_path / "in.jsonl"
    source.write_text('{"content": "Likes tea"}\n' + json.dumps(line) + "\n")  # \ud800 escaped
    store = tmp_path / "store.db"
    error = one_error_line(invoke(["import", str(source), "--db", str(store), "--now", ISO_NOW]))
    assert f"{source}:2: " in error and reason in error, error
    assert not store.exists()


def test_what_imports_exports_and_shows(tmp_path: Path) -> None:
    deep = {
        "content": "Deep and escaped: \ud83c\udf75 tea",
        "metadata": nested(32),
        "history": [
            {
                "at": "2026-01-01T00:00:00Z",
                "kind": "edited",
                "before": {"metadata": nested(30)},
                "after": {"title": "\ud83c\udf75"},
            }
        ],
    }
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps(deep) + "\n")
    store = tmp_path / "store.db"
    assert invoke(["import", str(source), "--db", str(store), "--now", ISO_NOW]).code == 0
    for command in (
        ["show", "1", "--json"],
        ["show", "1"],
        ["list", "--json"],
        ["export", "--history"],
        ["export", "--history", "--format", "mem0"],
    ):
        result = invoke([*command, "--db", str(store), "--now", ISO_NOW])
        assert result.code == 0, (command, result)
    out = tmp_path / "export.jsonl"
    assert invoke(["export", "--history", "--out", str(out), "--db", str(store)]).code == 0
    assert not list(tmp_path.glob("*.partial"))
    again = tmp_path / "again.db"
    assert invoke(["import", str(out), "--db", str(again), "--now", ISO_NOW]).code == 0


def test_the_store_api_refuses_what_could_not_be_written_back(tmp_path: Path) -> None:
    from memory_console.store.errors import ValidationError

    with Store(tmp_path / "store.db") as store:
        with pytest.raises(ValidationError, match="nested more than 32"):
            store.add({"content": "x", "metadata": nested(33)})
        with pytest.raises(ValidationError, match="unpaired surrogate"):
            store.add({"content": "x", "metadata": {"note": "\ud800"}})
        with pytest.raises(ValidationError, match="unpaired surrogate"):
            store.add({"content": "x", "metadata": {"\udc00": "key"}})
        assert store.add({"content": "x", "metadata": nested(32)}) == 1


def test_a_file_rewritten_between_the_two_readings_imports_nothing(tmp_path: Path) -> None:
    """The second reading does not screen for secrets again: it relies on reading the same
    bytes, so a file changed after the first reading (here: a password put in) is refused."""
    from memory_console.ingest.jsonl import ImportFileError, import_jsonl

    source = tmp_path / "memories.jsonl"
    lines = [json.dumps({"id": i, "content": f"likes tea number {i}"}) for i in (1, 2)]
    source.write_text("\n".join(lines) + "\n")

    class RewrittenBetweenReadings(Store):
        def existing_ids(self, ids: Any) -> list[int]:  # asked between the two readings
            source.write_text(
                lines[0] + "\n" + json.dumps({"id": 2, "content": "password = Zq7hunter22"}) + "\n"
            )
            return super().existing_ids(ids)

    with RewrittenBetweenReadings(tmp_path / "store.db") as store:
        with pytest.raises(ImportFileError, match="the file changed while it was imported"):
            import_jsonl(store, source)
        assert store.count() == 0


def test_the_read_ahead_hands_over_every_item_then_the_error_and_stops_when_left(
    tmp_path: Path,
) -> None:
    """The second reading runs in a thread: its items arrive in order, an error it meets is
    raised in the importing thread after the items before it, and an import that stops early
    (a database error) closes the reading and ends the thread."""
    import threading

    from memory_console.ingest.jsonl import ImportFileError, read_ahead

    closed: list[bool] = []

    def reading(fail_at: int | None) -> Any:
        try:
            for number in range(10):
                if number == fail_at:
                    raise ImportFileError(f"memories.jsonl:{number}: bad")
                yield number
        finally:
            closed.append(True)

    assert list(read_ahead(reading(None), 2)) == list(range(10))
    seen: list[int] = []
    with pytest.raises(ImportFileError, match="memories.jsonl:7: bad"):
        seen.extend(read_ahead(reading(7), 2))
    assert seen == list(range(7))
    items = read_ahead(reading(None), 2)
    assert next(items) == 0
    items.close()
    assert closed == [True, True, True]
    assert not [t for t in threading.enumerate() if t.name == "import-read-ahead"]


def test_demo_force_does_not_replace_a_store_another_process_has_open(tmp_path: Path) -> None:
    """Deleting a store (and its -wal) under a live connection loses what that process writes."""
    path = tmp_path / "live.db"
    with Store(path) as store:
        store.add({"content": "written before"})
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from memory_console.store import Store; s = Store(sys.argv[1]); "
            "s.count(); print('ready', flush=True); sys.stdin.read(); s.close()",
            str(path),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        result = invoke(["demo", "--db", str(path), "--count", "10", "--force"])
        assert "open in another process" in one_error_line(result)
        assert count(path) == 1
    finally:
        holder.communicate("", timeout=30)
    assert invoke(["demo", "--db", str(path), "--count", "10", "--force"]).code == 0
    assert count(path) == 10
