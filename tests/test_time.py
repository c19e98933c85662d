"""Time told honestly: events keep the clock apart from the evaluated (simulated) time, and
confidence is shown as of now beside the stored value."""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

import numpy as np
import pytest

from memory_console.maintenance import (
    PassResult,
    PassSpec,
    apply,
    plan,
    registered_passes,
)
from memory_console.maintenance import registry as registry_module
from memory_console.maintenance.frame import Frame
from memory_console.maintenance.params import MaintenanceParams
from memory_console.store import Store
from memory_console.store.db import SCHEMA_VERSION
from memory_console.timeutil import to_date, to_iso
from memory_console.tui.chart import chart_spec
from memory_console.tui.story_data import load_story
from tests.helpers import DAY, invoke, merge_first_two

CLOCK = time.time()
LATER = CLOCK + 90 * DAY  # a preview "in 90 days"


def old_memory(store: Store, content: str, days_old: float, **fields: object) -> int:
    """A memory created `days_old` days before the clock, never touched since."""
    created = CLOCK - days_old * DAY
    row = {"content": content, "memory_type": "episodic", "created_at": created, **fields}
    return store.add_many([row], now=created)[0]


def test_a_run_in_90_days_then_undone_reads_in_clock_order(db_path: Path) -> None:
    with Store(db_path) as store:
        ident = old_memory(store, "moved from Berlin to Copenhagen", 40, confidence=0.85)
    db = ["--db", str(db_path)]
    applied = invoke(["decay", "--apply", "--now", to_iso(LATER) or "", *db])
    assert applied.code == 0, applied.err
    assert f"evaluated as of {to_date(LATER)}, 90 days after now" in applied.out
    assert invoke(["undo", "1", *db]).code == 0
    shown = json.loads(invoke(["show", str(ident), "--json", *db]).out)
    kinds = [event["kind"] for event in shown["history"]]
    assert kinds == ["created", "decayed", "restored"]
    decayed = shown["history"][1]
    # Written today, evaluated as of the simulated date; the undo comes after it.
    assert decayed["at"][:10] == to_date(CLOCK)
    assert decayed["evaluated_at"][:10] == to_date(LATER)
    assert decayed["at"] <= shown["history"][2]["at"]
    text = invoke(["show", str(ident), *db]).out
    assert f"(evaluated as of {to_date(LATER)})" in text
    assert text.index("decayed") < text.index("restored")


def test_the_chart_draws_no_past_beyond_now(db_path: Path) -> None:
    with Store(db_path) as store:
        ident = old_memory(store, "the iron farm stopped working", 200, confidence=0.85)
        apply(store, plan(store, now=LATER))
        story = load_story(store, ident, time.time())
    spec = chart_spec(story, 60, 12)
    assert spec.past and max(x for x, _ in spec.past) <= 0.0
    assert all(at <= story.now for at, _ in story.trajectory)


def merge_two(frame: Frame, params: MaintenanceParams, now: float) -> PassResult:
    """A consolidate-like pass: the two maintainable rows become one memory whose created_at
    is the earliest member's, as consolidation keeps it."""
    rows = np.flatnonzero(frame.maintainable())[:2]
    earliest = float(frame.column("created_at")[rows].min())
    return merge_first_two(frame, {"created_at": earliest})


def test_a_merged_memory_says_its_created_field_is_its_earliest_members(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = PassSpec("merge", merge_two, "test merge", order=30)
    known = {**registered_passes(), "merge": spec}
    monkeypatch.setattr(registry_module, "registered_passes", lambda: known)
    with Store(db_path) as store:
        first = old_memory(store, "iron farm", 190)
        old_memory(store, "iron farm", 20)
        run = apply(store, plan(store, ("merge",), now=LATER))
        merged = store._query("SELECT max(id) FROM memory")[0][0]
        history = store.history(merged)
        assert store.require(merged).created_at == store.require(first).created_at
    assert [(e.kind, e.at, e.evaluated_at) for e in history] == [("created", run.started_at, LATER)]
    text = invoke(["show", str(merged), "--db", str(db_path)]).out
    created = next(line for line in text.splitlines() if line.startswith("created"))
    assert to_date(CLOCK - 190 * DAY) in created
    assert f"(earliest member's; merged on {to_date(CLOCK)})" in created
    assert to_date(LATER) not in created


def test_show_prints_the_stored_confidence_and_the_one_as_of_now(db_path: Path) -> None:
    with Store(db_path) as store:
        ident = old_memory(
            store,
            "moved from Berlin to Copenhagen",
            300,
            confidence=0.85,
            base_confidence=0.85,
            decay_policy="aggressive",
            source="session_review",
        )
    db = ["--db", str(db_path)]
    text = invoke(["show", str(ident), *db]).out
    line = next(line for line in text.splitlines() if line.startswith("confidence"))
    assert "0.85 stored" in line and " now " in line
    now_value = float(line.split()[1])
    assert now_value < 0.85
    forecast = next(line for line in text.splitlines() if line.startswith("forecast"))
    assert f"now {now_value:.2f}, " in forecast and to_date(CLOCK + 30 * DAY)[:4] in forecast
    data = json.loads(invoke(["show", str(ident), "--json", *db]).out)
    assert data["confidence"] == 0.85 and round(data["confidence_now"], 2) == now_value
    listed = json.loads(invoke(["list", "--json", *db]).out)
    assert round(listed[0]["confidence_now"], 2) == now_value


def test_a_session_review_memory_is_not_stated_explicitly(db_path: Path) -> None:
    with Store(db_path) as store:
        reviewed = old_memory(store, "prefers tea", 1, confidence=0.95, source="session_review")
        stated = old_memory(store, "allergic to peanuts", 1, confidence=0.95, source="manual")
    db = ["--db", str(db_path)]
    by_id = {row["id"]: row for row in json.loads(invoke(["list", "--json", *db]).out)}
    assert by_id[reviewed]["confidence_label"] == "very high confidence"
    assert by_id[stated]["confidence_label"] == "stated explicitly"
    assert "stated explicitly" not in invoke(["show", str(reviewed), *db]).out


def schema_five_store(path: Path) -> float:
    """A store as schema 5 wrote it: a run at a simulated date whose events carry that date
    in `at` and no evaluated_at column; returns the run's start (the clock)."""
    with Store(path) as store:
        old_memory(store, "decays", 200)
        run = apply(store, plan(store, now=LATER))
    conn = sqlite3.connect(path)
    conn.execute("UPDATE memory_event SET at = evaluated_at WHERE evaluated_at IS NOT NULL")
    conn.execute("ALTER TABLE memory_event DROP COLUMN evaluated_at")
    conn.execute("PRAGMA user_version = 5")
    conn.commit()
    conn.close()
    return run.started_at


def test_migration_from_5_moves_a_runs_stamps_to_evaluated_at(db_path: Path) -> None:
    started = schema_five_store(db_path)
    with Store(db_path) as store:
        assert store.migration_backup is not None
        assert store.migration_backup.name.endswith("schema5.bak")
        rows = store._query("SELECT kind, at, evaluated_at, run_id FROM memory_event ORDER BY id")
    assert SCHEMA_VERSION == 11
    created, decayed = rows
    assert created[0] == "created" and created[2] is None and created[3] is None
    assert decayed == ("decayed", started, LATER, 1)


def test_the_apply_dialog_says_the_run_is_evaluated_as_of_a_simulated_date(
    db_path: Path,
) -> None:
    from memory_console.tui.plan_request import PlanRequest
    from memory_console.tui.preview_text import apply_question

    with Store(db_path) as store:
        old_memory(store, "decays", 200)
        proposal = plan(store, now=LATER)
    later = PlanRequest(("decay",), "relevance", {}, LATER, CLOCK)
    text = apply_question(later, proposal, 0).plain
    assert f"This run is evaluated as of {to_date(LATER)}, 90 days after now" in text
    today = PlanRequest(("decay",), "relevance", {}, CLOCK, CLOCK)
    assert "evaluated as of" not in apply_question(today, proposal, 0).plain
