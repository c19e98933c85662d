"""Ids live once, for the life of the store, on both backends: a memory never takes the id of
one an undo or a purge removed, so no history is shown under the wrong memory, and a purge
file can always be imported back."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from memory_console.store import Store
from tests.helpers import NOW


def cli(*argv: str) -> subprocess.CompletedProcess[str]:
    """The real entry point in a process of its own, as an operator's shell runs it."""
    return subprocess.run(
        [sys.executable, "-m", "memory_console", *argv],
        capture_output=True,
        text=True,
        timeout=600,
    )


def remember_in_another_process(db: str, text: str) -> int:
    script = (
        "import sys\n"
        "from memory_console.api import MemoryAPI\n"
        "with MemoryAPI(sys.argv[1], owner='alice') as api:\n"
        "    print(api.remember(sys.argv[2]).id)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, db, text], capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr
    return int(done.stdout.strip())


def test_after_undoing_a_consolidation_a_new_memory_takes_a_new_id(db: str) -> None:
    assert cli("--db", db, "demo", "--count", "400").returncode == 0
    assert cli("--db", db, "reindex").returncode == 0
    applied = cli("--db", db, "maintain", "--passes", "consolidate", "--apply", "--json")
    assert applied.returncode == 0, applied.stderr
    run = json.loads(applied.stdout)["run_id"]
    with Store(db) as store:
        created = [
            row[0]
            for row in store._query(
                "SELECT memory_id FROM memory_event WHERE run_id = ? AND kind = 'created'", (run,)
            )
        ]
    assert created, "the demo has near-duplicates to merge"
    assert cli("--db", db, "undo", str(run)).returncode == 0
    new = remember_in_another_process(db, "Remember that my cat Pixel is nine years old.")
    assert new > max(created)
    shown = json.loads(cli("--db", db, "show", str(new), "--json").stdout)
    assert [event["kind"] for event in shown["history"]] == ["created"]
    checked = cli("--db", db, "check")
    assert checked.returncode == 0, checked.stdout


def test_a_purge_file_imports_back_after_new_memories_were_added(db: str, tmp_path: Path) -> None:
    with Store(db, actor="test") as store:
        ids = store.add_many([{"content": f"fact number {n}"} for n in range(5)], now=NOW)
    out = tmp_path / "purged.jsonl"
    assert cli("--db", db, "purge", str(ids[-1]), "--out", str(out)).returncode == 0
    lines = tmp_path / "new.jsonl"
    lines.write_text(json.dumps({"content": "a memory imported later"}) + "\n")
    assert cli("--db", db, "import", str(lines)).returncode == 0
    with Store(db) as store:
        (later,) = [
            row[0] for row in store._query("SELECT id FROM memory WHERE content LIKE 'a memory%'")
        ]
    assert later > ids[-1]
    restored = cli("--db", db, "import", str(out))
    assert restored.returncode == 0, restored.stderr
    with Store(db) as store:
        assert store.require(ids[-1]).content == "fact number 4"


def test_check_finds_an_id_used_after_its_memorys_purge(db_path: Path) -> None:
    """What reuse left behind in stores before schema 9: the history of a deleted memory
    followed by another memory's, under one id."""
    with Store(db_path, actor="test") as store:
        (first,) = store.add_many([{"content": "first life"}], now=NOW)
        with store.transaction("as schema 8 let it happen") as conn:
            conn.execute(
                "INSERT INTO memory_event (memory_id, at, actor, kind) "
                "VALUES (?, ?, 'undo', 'purged')",
                (first, NOW),
            )
    done = cli("--db", str(db_path), "check")
    assert done.returncode == 1
    assert f"memory {first} exists after its purge (its id was used again)" in done.stdout
