"""The due index (docs/ARCHITECTURE.md, "The due index"): a plan that reads only the memories
due by its time proposes exactly what a plan over every memory proposes.

A state machine builds a store of memories in every state a time-driven pass looks at (banks,
types, policies, confidences at and near the floor, ages around each threshold, protected,
archived), then runs in any order: plans at any time (before the last run too), applies, undos,
the writes agents and operators make, and settings changes. After each step, for every set of
time-driven passes, the plan through the index and the plan of every memory must agree change
for change (ids, fields, values, reasons) and in their counts of changes.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import HealthCheck, settings
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    precondition,
    rule,
)

from memory_console.maintenance import apply, plan, undo
from memory_console.maintenance.changes import Plan
from memory_console.maintenance.undo import UndoRefused
from memory_console.store import Store
from memory_console.timeutil import parse_iso
from tests.harness.pg_machines import OnPostgreSQL, run_on_postgresql
from tests.helpers import DAY, NOW, db_rows, memory

# The time-driven passes, alone and as the commands run them.
PASS_SETS = (
    ("decay", "cleanup"),
    ("expire-banks", "expire", "decay", "cleanup"),
    ("expire-banks",),
    ("expire",),
    ("cleanup",),
)
# Figures that count changes (the others count what a plan looked at: among the due memories
# when it read only those).
CHANGE_FIGURES = (
    "decayed",
    "flagged",
    "archived",
    "expired",
    "expired_working",
    "expired_short_term",
)
AGES = (0.01, 0.5, 1.0, 29.99, 30.0, 30.001, 45.0, 89.99, 90.0, 90.01, 200.0, 400.0, 3000.0)
CONFIDENCES = (0.05, 0.1, 0.1000001, 0.11, 0.3, 0.59, 0.61, 0.7, 0.9, 1.0)


def changes(made: Plan) -> list[tuple[Any, ...]]:
    found = []
    for change_set in made.change_sets:
        texts, index = change_set.reasons.texts, change_set.reasons.index.tolist()
        for row, ident in enumerate(change_set.ids.tolist()):
            values = tuple(
                (
                    name,
                    repr(before[row].item() if hasattr(before[row], "item") else before[row]),
                    repr(after[row].item() if hasattr(after[row], "item") else after[row]),
                )
                for name, (before, after) in sorted(change_set.values.items())
            )
            found.append((change_set.pass_name, change_set.kind, ident, values, texts[index[row]]))
    return sorted(found)


def change_figures(made: Plan) -> dict[str, dict[str, int]]:
    return {
        name: {key: value for key, value in figures.items() if key in CHANGE_FIGURES}
        for name, figures in made.figures.items()
    }


class DueIndex(RuleBasedStateMachine):
    """One store; `clock` is the latest time a run was applied at."""

    def new_store(self) -> str | Path:
        self.folder = Path(tempfile.mkdtemp(prefix="due-"))
        return self.folder / "store.db"

    def drop_store(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)

    @initialize(seed=st.integers(0, 2**32 - 1), policy=st.sampled_from(["relevance", "periodic"]))
    def build(self, seed: int, policy: str) -> None:
        rng = np.random.default_rng(seed)
        self.location = self.new_store()
        self.store = Store(self.location, actor="test")
        self.clock = NOW
        self.store.set_setting("decay_policy", policy, now=NOW)
        rows = []
        for i in range(40):
            age = float(rng.choice(AGES))
            accessed = None if rng.random() < 0.5 else NOW - age * DAY * float(rng.random())
            confidence = float(rng.choice(CONFIDENCES))
            rows.append(
                memory(
                    f"memory {i}",
                    days_old=age,
                    last_accessed_at=accessed,
                    memory_type=str(rng.choice(["episodic", "procedural", "semantic"])),
                    tier=str(rng.choice(["long_term", "long_term", "working", "short_term"])),
                    decay_policy=str(
                        rng.choice(["standard", "aggressive", "pending_deletion", "none"])
                    ),
                    is_protected=bool(rng.random() < 0.1),
                    status="archived" if rng.random() < 0.1 else "active",
                    confidence=confidence,
                    base_confidence=max(confidence, float(rng.choice(CONFIDENCES))),
                    retrieval_count=int(rng.integers(0, 13)),
                    importance=float(rng.choice([0.0, 0.05, 0.2, 0.5, 0.9])),
                )
            )
        self.ids = self.store.add_many(rows, now=NOW)
        self.runs: list[int] = []

    def teardown(self) -> None:
        store = getattr(self, "store", None)
        if store is not None:
            store.close()
            self.drop_store()

    def both(self, passes: tuple[str, ...], now: float) -> Plan:
        """The plan through the index and the plan of every memory, held equal."""
        due = plan(self.store, passes, now=now)
        every = plan(self.store, passes, now=now, every=True)
        assert every.read == "all"
        assert changes(due) == changes(every), (due.read, due.read_why)
        assert change_figures(due) == change_figures(every)
        assert [m.fields for m in due.new_memories] == [m.fields for m in every.new_memories]
        assert np.array_equal(due.touched_ids, every.touched_ids)
        return due

    @rule(passes=st.sampled_from(PASS_SETS), days=st.floats(-40, 800))
    def compare(self, passes: tuple[str, ...], days: float) -> None:
        self.both(passes, self.clock + days * DAY)

    @rule(passes=st.sampled_from(PASS_SETS[:2]), days=st.floats(0, 120))
    def run(self, passes: tuple[str, ...], days: float) -> None:
        now = self.clock + days * DAY
        made = self.both(passes, now)
        if made.is_empty:
            return
        self.runs.append(apply(self.store, made).id)
        self.clock = now
        # A second run at the same time finds nothing, and reads no memory it changed.
        again = self.both(passes, now)
        assert again.is_empty
        if again.read == "due":
            assert not set(again.touched_ids.tolist())

    @precondition(lambda self: bool(self.runs))
    @rule()
    def undo_last(self) -> None:
        try:
            undo(self.store, self.runs.pop())
        except UndoRefused:
            pass

    @rule(
        kind=st.sampled_from(["access", "protect", "unprotect", "archive", "restore", "edit"]),
        which=st.integers(0, 39),
        days=st.floats(0, 60),
    )
    def write(self, kind: str, which: int, days: float) -> None:
        ident, at = self.ids[which], self.clock + days * DAY
        if kind == "access":
            self.store.record_access([ident], now=at)
        elif kind == "edit":
            self.store.change_fields(
                [ident], {"confidence": 0.62, "importance": 0.05}, "edited", now=at
            )
        else:
            getattr(self.store, kind)([ident], now=at)

    @rule(
        key=st.sampled_from(
            ["decay_policy", "relevance.period_days", "importance.expiration_days"]
        ),
        value=st.sampled_from(["relevance", "periodic", "exponential", "10", "60"]),
    )
    def change_setting(self, key: str, value: str) -> None:
        try:
            self.store.set_setting(key, value, now=self.clock)
        except ValueError:
            pass  # a policy name for a number, or the other way round

    @rule()
    def every_time_is_known_after_a_run_or_unknown(self) -> None:
        """A stored time is never NaN: unknown is NULL, never is infinity."""
        if isinstance(self.location, Path):
            rows = db_rows(self.location, "SELECT count(*) FROM memory WHERE due_at != due_at")
            assert rows == [(0,)]


DueIndex.TestCase.settings = settings(
    max_examples=int(os.environ.get("MEMORY_CONSOLE_DUE_EXAMPLES", "100")),
    stateful_step_count=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
test_due_index = DueIndex.TestCase


# -- the same rules on PostgreSQL ------------------------------------------------------------------


class PostgreSQLDueIndex(OnPostgreSQL, DueIndex):
    tag = "due"


def test_due_index_on_postgresql(pg_server: tuple[str, str]) -> None:
    examples = int(os.environ.get("MEMORY_CONSOLE_PG_DUE_EXAMPLES", "10"))
    run_on_postgresql(PostgreSQLDueIndex, pg_server, examples, steps=15)


def test_a_plan_reads_only_the_due_memories_and_says_why_it_reads_all(tmp_path: Path) -> None:
    """After a run, a plan at the same time reads none of the memories; a day later only those
    whose decay period ends or that an agent recalled since. A run's own parameters, a pass
    that compares memories and a changed setting make it read every one, and it says why."""
    with Store(tmp_path / "store.db", actor="test") as store:
        ids = store.add_many(
            [memory(f"fact {i}", days_old=30 * (i % 5) + i / 10) for i in range(50)], now=NOW
        )
        first = plan(store, ("decay", "cleanup"), now=NOW)
        assert first.read == "all" and "no due times" in (first.read_why or "")
        apply(store, first)
        assert plan(store, ("decay", "cleanup"), now=NOW).rows_read == 0
        store.record_access(ids[:2], now=NOW + 1)
        later = plan(store, ("decay", "cleanup"), now=NOW + DAY)
        every = plan(store, ("decay", "cleanup"), now=NOW + DAY, every=True)
        assert later.read == "due" and every.read_why == "every memory was asked for"
        assert set(ids[:2]) <= set(due_ids(store, later.now)) and later.rows_read < 10
        assert every.rows_read is not None and later.rows_read < every.rows_read
        assert changes(later) == changes(every)
        consolidate = plan(store, ("consolidate", "decay"), now=NOW + DAY)
        assert consolidate.read == "all" and "consolidate compares" in (consolidate.read_why or "")
        from memory_console.maintenance.registry import build_params

        own = plan(store, ("decay",), build_params(("decay",), overrides={"floor": 0.3}), now=NOW)
        assert own.read == "all" and "parameters" in (own.read_why or "")
        store.set_setting("relevance.period_days", 10, now=NOW)
        changed = plan(store, ("decay", "cleanup"), now=NOW + DAY)
        assert changed.read == "all" and "settings" in (changed.read_why or "")
        apply(store, changed)
        assert plan(store, ("decay", "cleanup"), now=NOW + DAY).read == "due"
        store.set_setting("decay_policy", "exponential", now=NOW)
        apply(store, plan(store, ("cleanup",), now=NOW + DAY))  # the times, as of the policy
        assert plan(store, ("cleanup",), now=NOW + DAY).read == "due"
        pruning = plan(store, ("decay", "cleanup"), now=NOW + DAY)
        assert (
            pruning.read_why
            == "the exponential policy ranks each owner's memories against each other"
        )


def due_ids(store: Store, now: float) -> list[int]:
    """The memories a due plan at `now` reads (through the index, as the plan does)."""
    from memory_console.store import bulk

    rows = bulk.Rows("maintainable", bulk.DUE_ROWS, {"due_now": now})
    return store.read(bulk.load_memory_arrays, rows)["id"].tolist()


@pytest.mark.parametrize("kind", ["access", "protect", "archive", "edit", "undo", "add"])
def test_every_write_makes_a_memory_due(tmp_path: Path, kind: str) -> None:
    """Whatever writes a memory (an agent's recall, an operator's action, an undo, a new
    memory), it is due at once, so no plan can miss the change it brings."""
    with Store(tmp_path / "store.db", actor="test") as store:
        ids = store.add_many([memory(f"fact {i}", days_old=45) for i in range(3)], now=NOW)
        run = apply(store, plan(store, ("decay", "cleanup"), now=NOW))
        assert plan(store, ("decay", "cleanup"), now=NOW).rows_read == 0
        if kind == "access":
            store.record_access([ids[0]], now=NOW)
        elif kind == "edit":
            store.change_fields([ids[0]], {"importance": 0.9}, "edited", now=NOW)
        elif kind == "undo":
            undo(store, run.id)
        elif kind == "add":
            ids = store.add_many([memory("a new fact", days_old=0)], now=NOW)
        else:
            getattr(store, kind)([ids[0]], now=NOW)
        due = [row[0] for row in db_rows(store.path, "SELECT id FROM memory WHERE due_at IS NULL")]
        assert ids[0] in due


def cli(*argv: str) -> dict[str, Any]:
    """The CLI in a process of its own, its JSON output parsed."""
    import json
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "memory_console.cli", *argv, "--json"],
        capture_output=True,
        text=True,
        check=True,
    )
    parsed: dict[str, Any] = json.loads(done.stdout)
    return parsed


def test_processes_share_the_due_index(tmp_path: Path) -> None:
    """One process applies a run, another writes a memory as an agent does (a recall), a third
    plans: it reads that memory and the ones whose time came, not the others, and `--all`
    gives the same changes from every memory."""
    import subprocess
    import sys

    db = tmp_path / "store.db"
    with Store(db, actor="test") as store:
        ids = store.add_many(
            [memory(f"fact {i}", days_old=20 + i, retrieval_count=i % 3) for i in range(40)],
            now=NOW,
        )
    when = "2026-11-18T11:06:00+00:00"  # NOW
    applied = cli("decay", "--db", str(db), "--apply", "--now", when)
    assert applied["read"] == "all" and applied["run_id"] == 1
    recall = f"from memory_console.store import Store; Store({str(db)!r}).record_access([{ids[0]}])"
    subprocess.run([sys.executable, "-c", recall], check=True)
    later = "2026-11-25T11:06:00+00:00"  # a week on: the ten a few days short of 30 days are due
    due = cli("decay", "--db", str(db), "--dry-run", "--now", later)
    every = cli("decay", "--db", str(db), "--dry-run", "--now", later, "--all")
    assert due["read"] == "due" and due["read_why"] is None
    assert every["read"] == "all" and every["read_why"] == "every memory was asked for"
    assert 0 < due["memories_read"] < every["memories_read"]
    assert due["changes"] == every["changes"] and due["decayed"] == every["decayed"] > 0
    with Store(db) as store:
        assert ids[0] in due_ids(store, parse_iso(later))


def test_the_preview_says_its_counts_are_among_the_due(tmp_path: Path) -> None:
    """The console's preview counts what the passes looked at among the memories read: under
    the due read its head and its figures say so, and a full read says nothing more."""
    from memory_console.tui.plan_request import PlanRequest
    from memory_console.tui.preview_text import head_text
    from memory_console.tui.widgets.plan_counts import figures_line

    with Store(tmp_path / "store.db", actor="test") as store:
        store.add_many([memory(f"fact {i}", days_old=25 + i) for i in range(20)], now=NOW)
        full = plan(store, ("decay", "cleanup"), now=NOW)
        apply(store, full)
        due = plan(store, ("decay", "cleanup"), now=NOW + 3 * DAY)
    assert due.read == "due" and due.rows_read == 3 and due.changed == 3
    assert figures_line(due) == "eligible 3 · promotion candidates 0 (among the 3 due)"
    assert figures_line(full) == "eligible 15 · promotion candidates 0"
    request = PlanRequest(("decay", "cleanup"), "relevance", {}, NOW + 3 * DAY, NOW)
    assert head_text(request, due).plain.endswith("· read 3 due")
    assert head_text(request, full).plain.endswith("· read 15")


def test_every_update_of_a_memory_is_one_the_due_index_knows() -> None:
    """The statements that update memory rows, where each lies: every one that changes a
    memory sets WRITE_MARKS (its revision grows, and it is due), or is the due index's own.
    A new one fails here until it is added, with the marks, to this list."""
    root = Path(__file__).resolve().parent.parent / "memory_console"
    found: dict[str, int] = {}
    for path in sorted(root.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        count = len(re.findall(r"UPDATE memory (?:AS m )?SET", text))
        if count:
            found[str(path.relative_to(root))] = count
    assert found == {
        "store/dialect.py": 1,  # update_memories: WRITE_MARKS unless bump=False (due times)
        "store/postgres/bulk.py": 1,  # the same on PostgreSQL
        "store/bulk.py": 1,  # settle_due_outside: the index's own
        "store/store.py": 3,  # edits, recalls, undo of one event group: each with WRITE_MARKS
    }
    store_source = (root / "store" / "store.py").read_text(encoding="utf-8")
    assert store_source.count("{WRITE_MARKS} WHERE id = ?") == 3


def test_the_health_screen_counts_what_falls_due(tmp_path: Path) -> None:
    """The health figures through the index: none while the times are not current (the
    screen says every memory is due), then those due now and within a week, each opening
    exactly the memories a plan then reads."""
    from memory_console.maintenance.health import due_outlook

    with Store(tmp_path / "store.db", actor="test") as store:
        store.add_many([memory(f"fact {i}", days_old=20 + i) for i in range(20)], now=NOW)
        assert not due_outlook(store, NOW).current
        apply(store, plan(store, ("decay", "cleanup"), now=NOW))
        outlook = due_outlook(store, NOW)
        assert outlook.current and outlook.due_now == 0
        assert outlook.due_soon == plan(store, ("decay", "cleanup"), now=NOW + 7 * DAY).rows_read
        week = outlook.target(soon=True)
        assert week.finder is not None and week.total == outlook.due_soon > 0
        assert sorted(week.finder(store)) == due_ids(store, NOW + 7 * DAY)
