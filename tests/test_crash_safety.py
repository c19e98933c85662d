"""SIGKILL during apply, undo, import, purge or migration leaves the store before or after.

The store passes integrity_check every time; the benchmark runs 50 random kills per
operation, these tests three chosen ones."""

from __future__ import annotations

import os
import random
import sys
import time
from pathlib import Path

import pytest

from memory_console.store import Store
from tests.harness.crash_child import (
    NOW,
    OPERATIONS,
    Action,
    Operation,
    calibrate,
    prepare_operations,
    run_trial,
)

pytestmark = pytest.mark.skipif(
    sys.platform == "win32" or not hasattr(os, "fork"), reason="needs fork and SIGKILL"
)


@pytest.fixture(scope="module")
def operations(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Operation]:
    return prepare_operations(tmp_path_factory.mktemp("crash"), 1000)


@pytest.mark.parametrize("name", OPERATIONS)
def test_a_kill_leaves_the_store_before_or_after(
    operations: dict[str, Operation], name: str
) -> None:
    """Held at COMMIT: before. Killed at a random moment of its write transaction: before or
    after. Killed after it returned: after (the commit survives the kill)."""
    operation = operations[name]
    calibration = calibrate(operation, runs=1)
    assert calibration.problems == [] and operation.done_s > 0
    rng = random.Random(name)
    held = run_trial(operation, at="C")
    inside = run_trial(operation, delay=rng.uniform(operation.begin_s, operation.commit_s))
    returned = run_trial(operation, at="D")
    for trial in (held, inside, returned):
        assert trial.problems == [], (trial.moment, trial.phase, trial.problems)
    assert held.outcome == "before" and returned.outcome == "after"
    assert inside.outcome in ("before", "after")


def test_the_trial_sees_an_operation_that_is_not_atomic(
    operations: dict[str, Operation], tmp_path: Path
) -> None:
    """Two transactions with a pause between them, killed in the pause: the check must call
    the store neither before nor after (so the clean trials above mean something)."""
    purge = operations["purge"]
    ids = list(range(1, 201))

    def prepare() -> Action:
        store = Store(two_step.work, actor="crash")

        def archive_in_two() -> None:
            store.archive(ids[:100], now=NOW)
            time.sleep(0.5)
            store.archive(ids[100:], now=NOW)

        return archive_in_two

    two_step = Operation("archive", purge.template, tmp_path / "two-step.db", prepare)
    assert calibrate(two_step, runs=1).problems == []
    torn = run_trial(two_step, delay=0.25)
    assert torn.outcome == "torn" and any("neither" in text for text in torn.problems)
