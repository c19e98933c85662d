"""apply(skip_stale=True) on real stores: memories an agent changed after planning are left out
(whole consolidation groups with them), the rest is written, counted, recorded and undoable."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import memory_console.maintenance as maintenance_package
from memory_console.cli import main
from memory_console.maintenance import (
    Plan,
    StalePlanError,
    apply,
    get_run,
    list_runs,
    plan,
    undo,
)
from memory_console.store import Store, bulk
from memory_console.timeutil import to_iso
from tests.helpers import DAY, ISO_NOW, NOW, memory, snapshot

DECAYED = 0.8 * 0.95**3  # base 0.8, never accessed, 100 days old: three periods at rate 0.95
# Recalled 69 days after creation: boosted from its value then (two periods), not from 0.8.
RECALLED = 0.8 * 0.95**2 + 0.03


@pytest.fixture
def store(backend_store: Store) -> Store:
    """Apply's revision checks run on SQLite and on PostgreSQL."""
    return backend_store


def run_events(store: Store, run_id: int) -> dict[int, list[str]]:
    """Memory id -> kinds of the events the run wrote."""
    found: dict[int, list[str]] = {}
    for ident, kind in store._query(
        "SELECT memory_id, kind FROM memory_event WHERE run_id = ? ORDER BY id", (run_id,)
    ):
        found.setdefault(ident, []).append(kind)
    return found


def run_row(store: Store, run_id: int) -> tuple[dict[str, int], int]:
    ((counts, changed),) = store._query(
        "SELECT counts, changed FROM maintenance_run WHERE id = ?", (run_id,)
    )
    return json.loads(counts), changed


def test_changed_memories_are_skipped_and_the_rest_applied(store: Store, db: str) -> None:
    ids = store.add_many([memory(f"m{i}", days_old=100, confidence=0.8) for i in range(6)], now=NOW)
    proposal = plan(store, now=NOW)
    assert proposal.changed == 6
    with Store(db, actor="agent") as agent:
        # An access 31 days before NOW: the next plan has one period to decay it by.
        agent.record_access([ids[0]], now=NOW - 31 * DAY)
        agent.protect([ids[1]], now=NOW)
    agent_values = {i: store.require(i) for i in ids[:2]}
    before_apply = snapshot(db)

    run = apply(store, proposal, skip_stale=True)

    assert (run.changed, run.counts) == (4, {"decayed": 4, "skipped_stale": 2})
    assert run.skipped == {"skipped_stale": [ids[0], ids[1]]}
    assert run_row(store, run.id) == ({"decayed": 4, "skipped_stale": 2}, 4)
    assert run_events(store, run.id) == {ident: ["decayed"] for ident in ids[2:]}
    for ident in ids[2:]:
        assert store.require(ident).confidence == pytest.approx(DECAYED)
    for ident, was in agent_values.items():
        assert store.require(ident) == was
    assert store.require(ids[0]).confidence == pytest.approx(RECALLED)
    assert store.require(ids[1]).is_protected

    recorded = get_run(store, run.id)
    assert recorded.skipped == run.skipped and recorded.undo_report is None
    assert list_runs(store)[0].to_json()["skipped_stale"] == 2

    report = undo(store, run.id, now=NOW + 1)
    assert sorted(report.restored) == ids[2:] and report.not_restored == []
    assert snapshot(db) == before_apply

    # The next run takes the skipped one: one period since its access, from its new base.
    again = plan(store, now=NOW)
    rate = 0.95 + 0.04 * 0.1  # one retrieval
    decayed = {c.id: c.after for c in again.changes() if c.field == "confidence"}
    assert decayed[ids[0]] == pytest.approx(RECALLED * rate)
    assert ids[1] not in decayed


def test_without_skip_stale_a_stale_plan_is_still_refused(store: Store, db: str) -> None:
    ids = store.add_many([memory(f"m{i}", days_old=100) for i in range(4)], now=NOW)
    proposal = plan(store, now=NOW)
    with Store(db, actor="agent") as agent:
        agent.protect([ids[2]], now=NOW)
    before = snapshot(db)
    with pytest.raises(StalePlanError, match="1 of 4 memories"):
        apply(store, proposal)
    assert snapshot(db) == before and list_runs(store) == []
    assert apply(store, proposal, skip_stale=True).counts == {"decayed": 3, "skipped_stale": 1}


def test_a_fresh_plan_with_skip_stale_records_nothing_skipped(store: Store) -> None:
    store.add_many([memory(f"m{i}", days_old=100) for i in range(3)], now=NOW)
    run = apply(store, plan(store, now=NOW), skip_stale=True)
    assert (run.changed, run.counts, run.skipped) == (3, {"decayed": 3}, {})
    assert store._query("SELECT undo_report FROM maintenance_run") == [(None,)]


def test_a_deleted_memory_counts_as_stale(db_path: Path, tmp_path: Path) -> None:
    # SQLite only: purge (erase.py) is not yet on PostgreSQL.
    with Store(db_path, actor="test") as store:
        ids = store.add_many([memory(f"m{i}", days_old=100) for i in range(3)], now=NOW)
        proposal = plan(store, now=NOW)
        with Store(db_path, actor="agent") as agent:
            agent.purge([ids[1]], tmp_path / "purged.jsonl", now=NOW)
        run = apply(store, proposal, skip_stale=True)
        assert run.skipped == {"skipped_stale": [ids[1]]}
        assert sorted(run_events(store, run.id)) == [ids[0], ids[2]]
        assert store.get(ids[1]) is None


@pytest.mark.parametrize("revision", [0, 1 << 40], ids=["packed", "wide revisions"])
def test_changed_since_finds_changed_and_gone_memories(store: Store, revision: int) -> None:
    ids = store.add_many([memory(f"m{i}", days_old=1) for i in range(5)], now=NOW)
    store.connection.execute("UPDATE memory SET revision = ?", (revision,))
    planned = np.array(ids, dtype=np.int64)
    revisions = np.full(5, revision, dtype=np.int64)
    assert bulk.changed_since(store.connection, planned, revisions).tolist() == []
    store.connection.execute("UPDATE memory SET revision = revision + 1 WHERE id = ?", (ids[3],))
    store.connection.execute("DELETE FROM memory WHERE id = ?", (ids[1],))
    found = bulk.changed_since(store.connection, planned, revisions)
    assert found.tolist() == [ids[1], ids[3]]


def family(topic: str, words: list[str]) -> list[dict[str, Any]]:
    """Three duplicates (one text said again) of one owner and topic."""
    base = {
        "owner": "alice",
        "topic": topic,
        "memory_type": "semantic",
        "created_at": NOW - 20 * DAY,
    }
    return [
        {**base, "content": f"{topic} note: {' '.join(words)}.", "keywords": words}
        for _ in range(3)
    ]


def test_a_group_with_one_changed_member_is_skipped_whole(store: Store, db: str) -> None:
    first = store.add_many(family("preferences", ["dark", "editor", "theme"]), now=NOW)
    second = store.add_many(family("projects", ["train", "window", "seat"]), now=NOW)
    (lonely,) = store.add_many([memory("decays", days_old=100)], now=NOW)
    proposal = plan(store, ["consolidate", "decay"], now=NOW)
    assert len(proposal.new_memories) == 2 and proposal.changed == 7
    with Store(db, actor="agent") as agent:
        agent.record_access([first[1]], now=NOW)
    newest = max(r[0] for r in store._query("SELECT id FROM memory"))

    run = apply(store, proposal, skip_stale=True)

    counts = {
        "consolidated": 3,
        "decayed": 1,
        "created": 1,
        "skipped_stale": 1,
        "skipped_with_group": 2,
    }
    assert (run.counts, run.changed) == (counts, 5)
    assert run_row(store, run.id) == (counts, 5)
    assert run.skipped == {"skipped_stale": [first[1]], "skipped_with_group": [first[0], first[2]]}
    (merged,) = [r[0] for r in store._query("SELECT id FROM memory WHERE id > ?", (newest,))]
    assert store.require(merged).metadata["consolidated_from"] == second
    for ident in first:
        member = store.require(ident)
        assert (member.status, member.consolidated_into) == ("active", None)
    for ident in second:
        assert store.require(ident).consolidated_into == merged
    events = run_events(store, run.id)
    assert set(events) == {*second, lonely, merged} and not set(first) & set(events)
    report = undo(store, run.id, now=NOW + 1)
    assert sorted(report.restored) == sorted([*second, lonely]) and report.deleted == [merged]


@pytest.fixture
def agent_during_plan(db: str, monkeypatch: pytest.MonkeyPatch) -> Callable[[list[int]], None]:
    """Make the CLI's plan be followed by an agent protecting the given memories, before apply."""
    real = maintenance_package.plan

    def touch(ids: list[int]) -> None:
        def planned_then_touched(*args: Any, **kwargs: Any) -> Plan:
            proposal = real(*args, **kwargs)
            with Store(db, actor="agent") as agent:
                agent.protect(ids, now=NOW)
            return proposal

        monkeypatch.setattr(maintenance_package, "plan", planned_then_touched)

    return touch


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_the_cli_refuses_or_skips(
    store: Store,
    db: str,
    capsys: pytest.CaptureFixture[str],
    agent_during_plan: Callable[[list[int]], None],
) -> None:
    ids = store.add_many([memory(f"m{i}", days_old=100) for i in range(5)], now=NOW)
    common = ("--db", str(db), "--now", ISO_NOW)
    agent_during_plan([ids[0]])
    code, out, err = cli(capsys, "decay", "--apply", *common)
    assert (code, out) == (1, "")
    assert err.strip() == (
        "memory-console: error: the store changed while planning; run the command again "
        "(1 of 5 memories changed since the plan was made) or use --skip-stale"
    )
    assert list_runs(store) == []

    agent_during_plan([ids[1]])  # ids[0] is protected now: four planned
    code, out, _ = cli(capsys, "decay", "--apply", "--skip-stale", *common)
    assert code == 0
    assert (
        "applied 3 changes; skipped 1 memories that changed while planning "
        "(the next run takes them)"
    ) in " ".join(out.split())

    agent_during_plan([ids[2]])  # a month later ids[2:] decay one more period
    code, out, _ = cli(
        capsys,
        "maintain",
        "--passes",
        "decay",
        "--apply",
        "--skip-stale",
        "--json",
        "--db",
        str(db),
        "--now",
        to_iso(NOW + 31 * DAY),
    )
    assert code == 0
    document = json.loads(out)
    assert (document["skipped_stale"], document["applied"]) == (1, 2)
    assert document["skipped"] == {"skipped_stale": [ids[2]]}
    assert document["run_id"] == list_runs(store)[0].id

    code, out, _ = cli(capsys, "runs", "--db", str(db), "--json")
    assert [r["skipped_stale"] for r in json.loads(out)] == [1, 1]
    code, out, _ = cli(capsys, "runs", "--db", str(db))
    assert "skipped_stale 1" in out

    code, _, err = cli(capsys, "decay", "--dry-run", "--skip-stale", *common)
    assert code == 1 and "--skip-stale goes with --apply" in err
