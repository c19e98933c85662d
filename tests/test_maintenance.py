"""apply and undo on real stores: one transaction, exact events, stale plans, inserts, undo."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from memory_console.maintenance import (
    MaintenanceError,
    PassResult,
    PassSpec,
    StalePlanError,
    UndoRefused,
    apply,
    build_params,
    get_run,
    list_runs,
    memory_forecast,
    plan,
    registered_passes,
    store_forecast,
    undo,
)
from memory_console.maintenance import registry as registry_module
from memory_console.maintenance.frame import Frame
from memory_console.maintenance.params import MaintenanceParams
from memory_console.store import NotFoundError, Store
from tests.helpers import DAY, NOW, build_synthetic_store, memory, merge_first_two, snapshot

ALL = ("sensitive", "expire", "decay", "cleanup", "promote", "quota")


@pytest.fixture
def store(backend_store: Store) -> Store:
    """Plans, apply and undo run on SQLite and on PostgreSQL."""
    return backend_store


@pytest.fixture
def mixed(store: Store) -> Store:
    """A store on which every pass of ALL has something to do."""
    store.add_many(
        [
            memory("old at the floor", days_old=3000, owner="a"),
            memory("decays", days_old=95, retrieval_count=2, owner="a"),
            memory("expires", days_old=200, importance=0.0, owner="b"),
            memory("promoted", days_old=10, retrieval_count=12, confidence=0.8, owner="b"),
            memory("router password = hunter22", days_old=5, owner="b"),
            memory("over quota, lowest", days_old=40, importance=0.1, owner="c"),
            memory("within quota", days_old=40, importance=0.9, owner="c"),
            memory("protected", days_old=3000, is_protected=True, owner="c"),
        ],
        now=NOW,
    )
    return store


def all_params(**overrides: object) -> MaintenanceParams:
    return build_params(ALL, "relevance", {"max_memories": 2, **overrides})


def test_apply_tells_its_progress_in_rows_written(mixed: Store) -> None:
    """progress(done, total) counts memories updated and events written, and ends at total."""
    told: list[tuple[int, int]] = []
    proposal = plan(mixed, ALL, all_params(), now=NOW)
    run = apply(mixed, proposal, progress=lambda done, total: told.append((done, total)))
    events = mixed._query("SELECT count(*) FROM memory_event WHERE run_id = ?", (run.id,))[0][0]
    total = run.changed + events
    assert told and told[-1] == (total, total)
    assert all(t == total for _, t in told) and [d for d, _ in told] == sorted(d for d, _ in told)


def test_apply_writes_changes_events_and_the_run_row(mixed: Store) -> None:
    seen: list[tuple[str, list[int]]] = []
    mixed.listeners.append(lambda kind, ids: seen.append((kind, ids)))
    proposal = plan(mixed, ALL, all_params(), now=NOW)
    run = apply(mixed, proposal)
    assert run.counts == {"archived": 3, "decayed": 4, "flagged": 1, "promoted": 1}
    assert run.changed == proposal.changed == 7
    events = mixed._query(
        "SELECT memory_id, actor, kind, before, after, query, evaluated_at FROM memory_event "
        "WHERE run_id = ? ORDER BY id",
        (run.id,),
    )
    assert len(events) == 3 + 4 + 1 + 1
    decayed = [e for e in events if e[2] == "decayed" and e[0] == 2]
    assert decayed == [
        (
            2,
            "decay",
            "decayed",
            '{"confidence":1.0}',
            json.dumps({"confidence": 0.958**3}, separators=(",", ":")),
            "3 periods since creation at rate 0.958",
            NOW,
        )
    ]
    # The events are stamped with the clock (the run's start) and evaluated at the plan's now.
    stamps = mixed._query("SELECT DISTINCT at FROM memory_event WHERE run_id = ?", (run.id,))
    assert stamps == [(run.started_at,)]
    assert mixed.require(2).confidence == 0.958**3
    row = mixed._query(
        "SELECT passes, policy, params, now, actor, duration_ms, changed "
        "FROM maintenance_run WHERE id = ?",
        (run.id,),
    )[0]
    assert json.loads(row[0]) == list(proposal.passes)
    assert row[1] == "relevance" and row[3] == NOW and row[4] == "test" and row[6] == 7
    params = json.loads(row[2])
    assert params["importance"]["max_memories"] == 2
    assert params["relevance"] == {**params["relevance"], "floor": 0.1, "period_days": 30.0}
    assert set(params) == {"policy", *registry_module.parameter_classes()}
    assert {"relevance", "periodic", "exponential", "importance"} <= set(params)
    assert ("decayed", [1, 2, 6, 7]) in seen
    assert {m.revision for m in mixed.get_many(list(range(1, 9))).values()} == {0, 1}


def test_undo_restores_every_field_exactly(mixed: Store, db: str) -> None:
    db_path = db
    before = snapshot(db_path)
    run = apply(mixed, plan(mixed, ALL, all_params(), now=NOW))
    assert snapshot(db_path) != before
    report = undo(mixed, run.id, now=NOW + DAY)
    assert len(report.restored) == 7 and not report.not_restored
    assert snapshot(db_path) == before
    (listed,) = list_runs(mixed)
    assert listed.undone and listed.undone_at == NOW + DAY
    assert listed.undo_report == {
        "run_id": run.id,
        "at": "2026-11-19T11:06:40Z",
        "restored": 7,
        "deleted": [],
        "not_restored": [],
        "kept_edits": [],
        "left_merged": [],
        "cascade": [],
    }
    kinds = mixed._query(
        "SELECT DISTINCT actor, kind FROM memory_event WHERE run_id = ? AND actor = 'undo'",
        (run.id,),
    )
    assert kinds == [("undo", "restored")]
    with pytest.raises(MaintenanceError, match="already undone"):
        undo(mixed, run.id)
    with pytest.raises(NotFoundError):
        undo(mixed, 999)


def test_undo_reports_memories_changed_since(store: Store) -> None:
    ids = store.add_many([memory(f"m{i}", days_old=100) for i in range(4)], now=NOW)
    run = apply(store, plan(store, now=NOW))
    store.record_access([ids[0]], now=NOW + 1)
    store.protect([ids[1]], now=NOW + 2)
    store.connection.execute("UPDATE memory SET confidence = 0.5 WHERE id = ?", (ids[2],))
    report = undo(store, run.id, now=NOW + 3)
    assert report.restored == [ids[3]]
    reasons = {n.id: n.reason for n in report.not_restored}
    assert reasons[ids[0]].startswith("changed later: accessed at 2026-11-18T11:06:41Z")
    assert reasons[ids[1]].startswith("changed later: protected")
    assert reasons[ids[2]] == "confidence changed since the run without an event"
    assert store.require(ids[0]).confidence == pytest.approx(0.95**3 + 0.03)
    assert store.require(ids[3]).confidence == 1.0
    assert store.require(ids[2]).confidence == 0.5


def test_a_stale_plan_is_refused_and_writes_nothing(store: Store, db: str) -> None:
    db_path = db  # another connection, as another process would write
    ids = store.add_many([memory(f"m{i}", days_old=100) for i in range(5)], now=NOW)
    proposal = plan(store, now=NOW)
    with Store(db_path, actor="agent") as agent:
        agent.record_access([ids[3]], now=NOW)
    before = snapshot(db_path)
    events = store._query("SELECT count(*) FROM memory_event")
    with pytest.raises(
        StalePlanError,
        match="the store changed while planning; run the command again \\(1 of 5 memories",
    ):
        apply(store, proposal)
    assert snapshot(db_path) == before
    assert store._query("SELECT count(*) FROM memory_event") == events
    assert list_runs(store) == []
    assert apply(store, plan(store, now=NOW)).changed == 4


def test_a_plan_belongs_to_its_store(store: Store, tmp_path: Path) -> None:
    store.add(memory("m", days_old=100), now=NOW)
    with Store(tmp_path / "other.db") as other, pytest.raises(MaintenanceError, match="made for"):
        apply(other, plan(store, now=NOW))


def test_a_large_share_rebuilds_the_indexes_in_the_same_transaction(tmp_path: Path) -> None:
    path = build_synthetic_store(tmp_path / "big.db", 2000)
    with Store(path, actor="test") as store:
        listing = "SELECT name, sql FROM sqlite_master WHERE type = 'index' ORDER BY name"
        indexes = store._query(listing)
        run = apply(store, plan(store, now=NOW))
        assert run.changed == 2000
        assert store._query(listing) == indexes
        assert store._query("PRAGMA integrity_check") == [("ok",)]
        by_index = store._query(
            "SELECT count(*) FROM memory INDEXED BY ix_memory_confidence WHERE confidence < 0.9"
        )
        by_scan = store._query("SELECT count(*) FROM memory NOT INDEXED WHERE confidence < 0.9")
        assert by_index == by_scan and by_scan[0][0] > 0
        undo(store, run.id, now=NOW)
        assert store._query("SELECT count(*) FROM memory WHERE confidence = 1.0") == [(2000,)]


def merge_pass(frame: Frame, params: MaintenanceParams, now: float) -> PassResult:
    """A consolidate-like pass for the test: the first two maintainable rows become one."""
    return merge_first_two(frame, {"owner": "a", "created_at": now})


@pytest.fixture
def with_merge_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = PassSpec("merge", merge_pass, "test merge", order=30)
    known = {**registered_passes(), "merge": spec}
    monkeypatch.setattr(registry_module, "registered_passes", lambda: known)


def test_new_memories_are_inserted_and_undo_deletes_them(
    store: Store, db: str, with_merge_pass: None
) -> None:
    db_path = db
    ids = store.add_many([memory(f"dup {i}", days_old=3) for i in range(3)], now=NOW)
    before = snapshot(db_path)
    proposal = plan(store, ("merge",), now=NOW)
    assert proposal.counts() == {"consolidated": 2, "created": 1}
    run = apply(store, proposal)
    (new_id,) = [i for i in snapshot(db_path) if i not in before]
    merged = store.require(new_id)
    assert (merged.content, merged.status) == ("merged", "active")
    assert [store.require(i).consolidated_into for i in ids] == [new_id, new_id, None]
    report = undo(store, run.id, now=NOW)
    assert report.deleted == [new_id] and sorted(report.restored) == ids[:2]
    assert snapshot(db_path) == before
    purged = store._query(
        "SELECT kind FROM memory_event WHERE memory_id = ? ORDER BY id", (new_id,)
    )
    assert purged == [("created",), ("purged",)]


def test_undo_of_a_merge_used_since_asks_what_to_do(store: Store, with_merge_pass: None) -> None:
    ids = store.add_many([memory(f"dup {i}", days_old=3) for i in range(2)], now=NOW)
    run = apply(store, plan(store, ("merge",), now=NOW))
    new_id = store._query("SELECT max(id) FROM memory")[0][0]
    store.record_access([new_id], now=NOW + 5)
    with pytest.raises(UndoRefused, match="--keep-edit .* or --leave-merged") as refused:
        undo(store, run.id, now=NOW + 6)
    assert [(c.merged, c.sources) for c in refused.value.conflicts] == [(new_id, ids)]
    assert not get_run(store, run.id).undone
    report = undo(store, run.id, now=NOW + 6, merged_edits="keep-edit")
    assert report.kept_edits == [new_id] and sorted(report.restored) == ids
    assert store.require(new_id).status == "active"


def test_the_store_forecast_projects_tiers_ahead(store: Store) -> None:
    store.add_many(
        [
            memory("fresh", days_old=1),
            memory("semantic", days_old=1, memory_type="semantic"),
            memory("protected", days_old=1, is_protected=True),
            memory("archived", days_old=1, status="archived"),
        ],
        now=NOW,
    )
    figures = store_forecast(store, NOW)
    assert figures["active"] == 3 and figures["decaying"] == 1
    assert figures["current"][">=0.9"] == 3
    assert list(figures["months"]) == ["1", "3", "6", "12"]
    assert figures["months"]["3"][">=0.9"] == 2 and figures["months"]["3"]["0.7-0.9"] == 1
    assert figures["months"]["12"]["0.5-0.7"] == 1


def test_dry_planning_does_not_write(db_path: Path) -> None:
    with Store(db_path, actor="test") as store:
        store.add_many([memory(f"m{i}", days_old=100 + i) for i in range(20)], now=NOW)
    data = db_path.read_bytes()
    with Store(db_path, actor="test") as store:
        assert plan(store, ALL, all_params(), now=NOW).changed > 0
    assert db_path.read_bytes() == data
    with sqlite3.connect(db_path) as conn:
        assert conn.execute("SELECT count(*) FROM maintenance_run").fetchone() == (0,)


def test_one_memory_forecast_follows_the_decay_it_would_get(store: Store) -> None:
    (ident,) = store.add_many([memory("decaying", days_old=60)], now=NOW)
    forecast = memory_forecast(store.require(ident), NOW, periods_ahead=3)
    assert forecast.text() == "0.90 -> 0.86 -> 0.81 -> 0.77"
    assert [v for _, v in forecast.points] == pytest.approx([0.95**k for k in range(2, 6)])
    floor_at = forecast.floor_date
    assert floor_at is not None
    assert next(plan(store, ("decay",), now=floor_at - DAY).changes()).after > 0.1
    assert [c.after for c in plan(store, ("decay",), now=floor_at).changes()] == [0.1]


def test_a_plan_loads_each_row_as_stored_in_id_order(store: Store) -> None:
    """The plan's numpy columns hold each memory's stored values in id order, whatever order
    the database keeps the rows in (an edit moves a PostgreSQL row to the table's end) and
    however the columns travel (as bytes on PostgreSQL, as rows on SQLite)."""
    from memory_console.store import bulk

    kinds = ("episodic", "procedural", "semantic")
    ids = store.add_many(
        [
            memory(
                f"memory {i}",
                days_old=5 + 37 * i,
                retrieval_count=i % 4,
                decay_policy=("standard", "aggressive", "none")[i % 3],
                memory_type=kinds[i % 3],
                is_protected=i % 5 == 0,
                importance=i / 20,
            )
            for i in range(20)
        ],
        now=NOW,
    )
    store.edit(ids[0], {"content": "edited, so stored again"}, now=NOW)
    store.record_access(ids[1:4], now=NOW - DAY)
    names = [name for name, _ in bulk.BASE_COLUMNS] + ["importance"]
    stored = store._query(
        "SELECT id, revision, status, decay_policy, memory_type, is_protected, confidence, "
        "base_confidence, retrieval_count, created_at, last_accessed_at, importance "
        "FROM memory WHERE status = 'active' ORDER BY id"
    )
    with store.snapshot():
        loaded = bulk.load_memory_arrays(store.connection, bulk.Rows("active"), ["importance"])
    assert list(loaded) == names
    assert loaded["id"].tolist() == [row[0] for row in stored] == ids
    for row, position in zip(stored, range(len(stored)), strict=True):
        code = int(loaded["code"][position])
        assert bulk.decode(np.array([code]), "is_protected")[0] == bool(row[5])
        assert (
            bulk.CATEGORIES["decay_policy"][bulk.decode(np.array([code]), "decay_policy")[0]]
            == row[3]
        )
        assert (
            bulk.CATEGORIES["memory_type"][bulk.decode(np.array([code]), "memory_type")[0]]
            == row[4]
        )
        last = loaded["last_accessed_at"][position]
        assert (row[10] is None and np.isnan(last)) or last == row[10]
        assert [
            loaded[name][position].item()
            for name in ("revision", "confidence", "base_confidence", "retrieval_count")
        ] == [row[1], row[6], row[7], row[8]]
        assert loaded["created_at"][position] == row[9]
        assert loaded["importance"][position] == row[11]
