"""A live agent writes while the console maintains the store: nothing lost, nothing locked.

Every write of both sides is kept, plans the agent touched are refused as stale, and no
"database is locked" reaches anyone: on an SQLite file and on PostgreSQL (whose writers queue
on the advisory lock, so the revision checks hold there too)."""

from __future__ import annotations

import sqlite3
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from memory_console.demo import build_demo
from memory_console.maintenance import StalePlanError, apply, plan
from memory_console.store import Store, StoreError, bulk
from memory_console.store.store import LOCK_RETRIES
from tests.harness.live_agent import Baseline, LiveResult, broken_chains, instrument, run_live
from tests.helpers import NOW, copy_to_postgres, database_url

DAY = 86400.0

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(sys.platform == "win32", reason="POSIX processes and file locks"),
]
SECONDS = 7.0


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def live(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> LiveResult:
    """One live run per backend (the PostgreSQL store holds the same demo's rows)."""
    folder = tmp_path_factory.mktemp("live")
    db = folder / "live.db"
    build_demo(db, count=2000, seed=5, now=time.time())
    log = folder / "agent.log"
    if request.param == "sqlite":
        return run_live(db, log, SECONDS, adds=20, accesses=40, cli_every=3.0)
    import psycopg

    url, template = request.getfixturevalue("pg_server")
    name = f"{template}_live"
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        admin.execute(f"CREATE DATABASE {name} TEMPLATE {template}")
    try:
        target = database_url(url, name)
        copy_to_postgres(db, target)
        return run_live(target, log, SECONDS, adds=20, accesses=40, cli_every=3.0)
    finally:
        with psycopg.connect(url, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def test_no_problem_found(live: LiveResult) -> None:
    print("\n" + "\n".join(f"{k}: {v}" for k, v in live.figures().items()))
    assert live.problems() == []


def test_every_write_of_the_agent_is_there(live: LiveResult) -> None:
    assert len(live.agent.added) >= 5 * SECONDS and live.agent.access_events >= 10 * SECONDS
    assert live.present == live.created_events == len(live.agent.added)
    assert live.accessed_events == live.agent.access_events


def test_plans_the_agent_touched_were_refused(live: LiveResult) -> None:
    console = live.console
    # How many rounds fit in the run depends on the machine's load; one of each is the point.
    assert console.forced_stale >= 1
    # Consolidation and undo race the agent too (an empty or stale plan is a fair outcome);
    # the benchmark reports them. Decay runs, bulk actions and the CLI must get through.
    assert console.decay_runs >= 1 and console.bulk_actions >= 1 and console.cli_runs >= 1


def test_no_lock_error_and_no_retry(live: LiveResult) -> None:
    figures = live.figures()
    assert not any("locked" in text for text in live.agent.errors + live.console.failures)
    assert figures["agent_lock_retries"] == figures["console_lock_retries"] == 0
    assert figures["agent_busy_refusals"] == figures["console_busy_refusals"] == 0


def test_the_chain_check_sees_a_plan_applied_over_an_access(
    db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without the revision check, apply writes its decay over the agent's reinforcement; the
    replay of the events must report that memory (so a clean run above means something)."""
    with Store(db, actor="test") as store:
        ids = store.add_many(
            [
                {
                    "content": f"episode {i}",
                    "memory_type": "episodic",
                    "confidence": 0.5,
                    "created_at": NOW - 200 * DAY,
                }
                for i in range(5)
            ],
            now=NOW - 200 * DAY,
        )
    baseline = Baseline.take(db)
    with Store(db, actor="tui") as console, Store(db, actor="api") as agent:
        proposal = plan(console, now=NOW)
        agent.record_access([ids[2]], now=NOW - DAY)
        with pytest.raises(StalePlanError):
            apply(console, proposal)
        assert broken_chains(db, baseline) == []
        unchecked = bulk.update_memories

        def blind(conn: Any, fields: Any, rows: Any, *, check_revision: bool) -> int:
            return unchecked(conn, fields, [row[:-1] for row in rows], check_revision=False)

        monkeypatch.setattr(bulk, "update_memories", blind)
        apply(console, proposal)
    problems = broken_chains(db, baseline)
    assert problems and all(f"memory {ids[2]}" in text for text in problems)


def test_a_held_write_lock_is_retried_then_refused_in_words(tmp_path: Path) -> None:  # SQLite's
    """The retry count above comes from this instrument: with the lock held elsewhere, the
    Store tries BEGIN IMMEDIATE a bounded number of times, then says busy, never 'locked'."""
    db = tmp_path / "busy.db"
    with Store(db, actor="test") as store:
        ident = store.add({"content": "held"}, now=NOW)
        locks = instrument(store)
        store.connection.execute("PRAGMA busy_timeout = 20")
        holder = sqlite3.connect(db, isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")
        try:
            with pytest.raises(StoreError) as refused:
                store.protect([ident])
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        assert locks.retries == LOCK_RETRIES and locks.begins == 0
        assert "busy" in str(refused.value) and "locked" not in str(refused.value)
        assert store.protect([ident]).changed == [ident] and locks.begins == 1
