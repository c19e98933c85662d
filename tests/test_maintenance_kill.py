"""A process killed (SIGKILL) in the middle of an apply leaves the store fully before or after."""

from __future__ import annotations

import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers import NOW, build_synthetic_store

MEMORIES = 25_000
CHILD = """
import sys, time
from memory_console.maintenance import apply, plan
from memory_console.store import Store

store = Store(sys.argv[1], actor="child")
proposal = plan(store, now=float(sys.argv[2]))
print("planned", proposal.changed, flush=True)
started = time.perf_counter()
run = apply(store, proposal)
print("applied", run.id, time.perf_counter() - started, flush=True)
"""

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="needs SIGKILL")


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_synthetic_store(tmp_path_factory.mktemp("kill") / "template.db", MEMORIES)


def start(path: Path) -> tuple[subprocess.Popen[str], int]:
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(path), str(NOW)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    words = child.stdout.readline().split()
    assert words[:1] == ["planned"], child.stderr.read() if child.stderr else ""
    return child, int(words[1])


def state(path: Path) -> tuple[int, int, int]:
    """(run rows, events of runs, decayed memories), after checking the file's integrity."""
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        return (
            conn.execute("SELECT count(*) FROM maintenance_run").fetchone()[0],
            conn.execute("SELECT count(*) FROM memory_event WHERE run_id IS NOT NULL").fetchone()[
                0
            ],
            conn.execute("SELECT count(*) FROM memory WHERE confidence < 1.0").fetchone()[0],
        )


def indexes(path: Path) -> list[tuple[str, str]]:
    with sqlite3.connect(path) as conn:
        return conn.execute(
            "SELECT name, sql FROM sqlite_master WHERE type = 'index' ORDER BY name"
        ).fetchall()


def test_sigkill_during_apply_leaves_all_or_nothing(template: Path, tmp_path: Path) -> None:
    full = tmp_path / "full.db"
    shutil.copy(template, full)
    child, planned = start(full)
    out, err = child.communicate(timeout=120)
    assert child.returncode == 0, err
    seconds = float(out.split()[2])
    assert planned == MEMORIES and state(full) == (1, MEMORIES, MEMORIES)
    before, after = (0, 0, 0), (1, MEMORIES, MEMORIES)
    outcomes = []
    for fraction in (0.15, 0.5, 0.85):
        path = tmp_path / f"killed-{fraction}.db"
        shutil.copy(template, path)
        child, _ = start(path)
        time.sleep(seconds * fraction)
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=60)
        outcome = state(path)
        assert outcome in (before, after), (fraction, outcome)
        assert indexes(path) == indexes(template)
        outcomes.append(outcome)
    assert before in outcomes, "no kill landed before the commit; the test proved nothing"
