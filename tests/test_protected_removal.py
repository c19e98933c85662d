"""Protected memories in actions that take memories out of recall: named, asked about, and
left out of a script's --yes unless --include-protected."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from memory_console.store import Store
from tests.helpers import ISO_NOW, NOW, invoke, memory


def cli(*argv: str) -> subprocess.CompletedProcess[str]:
    """The real entry point in another process, its stdin not a terminal (a script)."""
    return subprocess.run(
        [sys.executable, "-m", "memory_console.cli", *argv, "--now", ISO_NOW],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
        env=os.environ.copy(),
    )


@pytest.fixture
def three(store: Store) -> list[int]:
    """Three memories, the last two protected."""
    return store.add_many(
        [
            memory("Plain note", days_old=3, title="Plain note", owner="alice"),
            memory("Kept one", days_old=3, title="Kept one", owner="alice", is_protected=True),
            memory("Kept two", days_old=3, title="Kept two", owner="alice", is_protected=True),
        ],
        now=NOW,
    )


def statuses(store: Store, ids: list[int]) -> list[str]:
    return [store.require(i).status for i in ids]


def test_bulk_forget_of_protected_memories_is_refused_in_a_script_without_yes(
    store: Store, db_path: Path, three: list[int]
) -> None:
    listed = ",".join(map(str, three))
    result = cli("forget", listed, "--db", str(db_path))
    assert result.returncode == 1
    assert f"2 of these are protected: #{three[1]} Kept one, #{three[2]} Kept two" in result.stdout
    assert "3 memories, 2 of them protected, needs an answer at a terminal" in result.stderr
    assert "nothing was changed" in result.stderr
    assert statuses(store, three) == ["active"] * 3


def test_yes_leaves_the_protected_out_and_says_so(
    store: Store, db_path: Path, three: list[int]
) -> None:
    result = cli("forget", ",".join(map(str, three)), "--db", str(db_path), "--yes")
    assert result.returncode == 0, result.stderr
    assert "forgot 1 memories" in result.stdout
    assert f"left out 2 protected (#{three[1]}, #{three[2]})" in result.stdout
    assert statuses(store, three) == ["archived", "active", "active"]


def test_include_protected_forgets_them_too(store: Store, db_path: Path, three: list[int]) -> None:
    result = cli("forget", *map(str, three), "--db", str(db_path), "--include-protected")
    assert result.returncode == 0, result.stderr
    assert statuses(store, three) == ["archived"] * 3


def test_archive_in_bulk_leaves_the_protected_out_with_yes(
    store: Store, db_path: Path, three: list[int]
) -> None:
    outcome = invoke(
        ["archive", ",".join(map(str, three)), "--db", str(db_path), "--yes", "--json"]
    )
    assert outcome.code == 0, outcome
    data = json.loads(outcome.out)
    assert data["changed"] == three[:1] and data["left_out_protected"] == three[1:]
    assert statuses(store, three) == ["archived", "active", "active"]


def test_forget_by_filter_with_yes_leaves_the_protected_out(
    store: Store, db_path: Path, three: list[int]
) -> None:
    outcome = invoke(["forget", "--owner", "alice", "--yes", "--json", "--db", str(db_path)])
    assert outcome.code == 0, outcome
    data = json.loads(outcome.out)
    assert data["changed"] == three[:1] and data["left_out_protected"] == three[1:]
    assert "2 of these are protected" in outcome.err  # --json keeps stdout for the JSON
    assert statuses(store, three) == ["archived", "active", "active"]
