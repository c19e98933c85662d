"""The maintenance screens' helpers without the interface: edits, rows, parameters, figures."""

from __future__ import annotations

import numpy as np
import pytest

from memory_console.maintenance import apply, plan, store_forecast
from memory_console.maintenance.edits import PlanEdits, edit_plan, merge_groups
from memory_console.maintenance.health import MAX_IDS, project_tiers
from memory_console.maintenance.merge_review import load_group, merge_members
from memory_console.store import MemoryFilter, Store
from memory_console.store.readers import (
    ReadCancelled,
    active_confidences,
    cancellable,
    run_change_count,
    run_changes,
    run_changes_before,
)
from memory_console.timeutil import DAY
from memory_console.tui.plan_chart import after_plan, distribution
from memory_console.tui.plan_request import evaluation_time, param_fields
from memory_console.tui.plan_rows import ChangeRows
from tests.helpers import NOW, add_duplicate_groups


@pytest.fixture
def demo_store(backend_demo_store: Store) -> Store:
    """These tests run on both backends (the SQLite-only one says so)."""
    return backend_demo_store


def decay_plan(store: Store):  # type: ignore[no-untyped-def]
    return plan(store, ("decay", "cleanup"), now=NOW)


def test_excluded_memories_leave_the_plan_and_its_revisions(demo_store: Store) -> None:
    proposed = decay_plan(demo_store)
    left_out = proposed.change_sets[0].ids[:3].tolist()
    edited = edit_plan(proposed, PlanEdits().toggle_excluded(left_out))
    assert edited.plan.changed == proposed.changed - 3
    assert not set(left_out) & set(edited.plan.touched_ids.tolist())
    assert edited.kept[0][:3].tolist() == [False, False, False]
    apply(demo_store, edited.plan, actor="tui")
    for ident in left_out:
        assert not [e for e in demo_store.history(ident) if e.kind == "decayed"]
    changed = proposed.change_sets[0].ids[3]
    after = proposed.change_sets[0].values["confidence"][1][3]
    assert demo_store.require(int(changed)).confidence == pytest.approx(after)


def test_toggling_twice_takes_a_memory_back(demo_store: Store) -> None:
    edits = PlanEdits().toggle_excluded([5, 6]).toggle_excluded([5, 6])
    assert edits.is_empty


def test_rejected_and_split_merges_reach_the_store(demo_store: Store) -> None:
    proposed = plan(demo_store, ("consolidate",), now=NOW)
    groups = merge_groups(proposed)
    keys = sorted(groups, reverse=True)
    biggest = max(keys, key=lambda k: len(groups[k]))
    rejected = next(k for k in keys if k != biggest)
    part = groups[biggest][:2]
    edits = PlanEdits().reject(groups[rejected]).split(part)
    edited = edit_plan(proposed, edits, lambda ids: merge_members(demo_store, ids))
    assert len(edited.plan.new_memories) == len(proposed.new_memories) - 1 + (
        1 if len(groups[biggest]) >= 4 else 0
    )
    apply(demo_store, edited.plan, actor="tui")
    for ident in groups[rejected]:
        assert demo_store.require(ident).status == "active"
    into = {demo_store.require(i).consolidated_into for i in part}
    assert len(into) == 1
    merged = demo_store.require(into.pop() or 0)
    assert sorted(merged.metadata["consolidated_from"]) == sorted(part)


def test_a_group_left_with_one_member_is_dropped(demo_store: Store) -> None:
    copy = {"owner": "alice", "topic": "general", "content": "Waters the plants on Sundays."}
    demo_store.add_many([copy, copy, copy], now=NOW)
    proposed = plan(demo_store, ("consolidate",), now=NOW)
    groups = merge_groups(proposed)
    key = next(k for k, members in groups.items() if len(members) == 3)
    edited = edit_plan(proposed, PlanEdits().reject(groups[key][:2]))
    assert key not in edited.groups
    assert all(m.key != key for m in edited.plan.new_memories)
    group = load_group(demo_store, proposed, edited, key)
    assert group.summary == "rejected"
    assert group.similarity.shape == (3, 3)
    assert np.allclose(np.diag(group.similarity), 1.0)


def test_rows_sort_largest_drop_first_and_filter(demo_store: Store) -> None:
    proposed = decay_plan(demo_store)
    rows = ChangeRows(proposed)
    kept = np.ones(len(rows), dtype=bool)
    order = rows.order("drop", rows.matching(None, None, kept))
    drops = rows.drop[order]
    assert len(order) == len(rows) and np.all(np.diff(drops) <= 1e-12)
    ident = int(rows.ids[order[5]])
    assert rows.ids[rows.order("id", rows.matching(None, str(ident), kept))].tolist() == [ident]
    found = rows.matching(None, "last access", kept)
    reasons = [rows.change(int(i)).reason for i in np.flatnonzero(found)]
    assert reasons and all("last access" in r for r in reasons)
    assert found.sum() < len(rows)
    kept[order[:4]] = False
    assert rows.matching(None, None, kept, left_out=True).sum() == 4


def test_evaluation_time_reads_days_and_dates() -> None:
    assert evaluation_time("now", NOW) == NOW
    assert evaluation_time("+90", NOW) == NOW + 90 * DAY
    assert evaluation_time("+2w", NOW) == NOW + 14 * DAY
    assert evaluation_time("2027-01-01", NOW) == pytest.approx(1798761600.0)
    with pytest.raises(ValueError):
        evaluation_time("next tuesday", NOW)


def test_parameters_follow_the_policy() -> None:
    relevance = {f.name: f for f in param_fields(("decay", "cleanup"), "relevance")}
    assert relevance["period_days"].default == 30.0
    assert relevance["period_days"].sets == ("relevance",)
    periodic = {f.name: f for f in param_fields(("decay",), "periodic")}
    assert periodic["period_days"].default == 7.0
    assert "max_memories" in {f.name for f in param_fields(("quota",), "relevance")}


@pytest.mark.parametrize("backend", ["sqlite"])  # SQLite's progress handler
def test_cancelled_reads_stop_and_leave_the_store_usable(demo_store: Store) -> None:
    asked = iter([False, False, True])  # not yet when the read starts, then cancelled

    with pytest.raises(ReadCancelled), cancellable(demo_store, lambda: next(asked, True), 50):
        plan(demo_store, ("decay",), now=NOW)
    assert demo_store.count() > 0
    with cancellable(demo_store, lambda: False):
        assert decay_plan(demo_store).changed > 0


@pytest.mark.parametrize("backend", ["postgresql"])  # the server cancels the statement
def test_a_cancelled_postgresql_read_stops_within_its_poll(demo_store: Store) -> None:
    """Escape during a long read on PostgreSQL: the watcher asks every CANCEL_POLL seconds,
    the server cancels the running statement, the read ends with ReadCancelled and the
    store reads on."""
    import time

    started = time.monotonic()
    with (
        pytest.raises(ReadCancelled),
        cancellable(demo_store, lambda: time.monotonic() - started > 0.3),
        demo_store.snapshot(),
    ):
        demo_store.connection.execute("SELECT pg_sleep(20)")
    assert 0.3 < time.monotonic() - started < 3
    assert demo_store.count() > 0
    with cancellable(demo_store, lambda: False):
        assert decay_plan(demo_store).changed > 0


def test_distribution_after_a_plan(demo_store: Store) -> None:
    proposed = plan(demo_store, ("sensitive", "decay"), now=NOW)
    ids, confidence = active_confidences(demo_store)
    assert len(ids) == demo_store.count(MemoryFilter(status="active"))
    after = after_plan(ids, confidence, proposed)
    archived = sum(len(s) for s in proposed.change_sets if s.kind == "archived")
    assert len(after) == len(ids) - archived
    spread = distribution(ids, confidence, proposed)
    assert sum(spread.before) == len(ids) and sum(spread.after) == len(after)


def test_tier_projection_matches_the_store_forecast(demo_store: Store) -> None:
    projection = project_tiers(demo_store, NOW)
    forecast = store_forecast(demo_store, NOW)
    assert [projection.count(0, t) for t in range(5)] == list(forecast["current"].values())
    assert [projection.count(6, t) for t in range(5)] == list(forecast["months"]["6"].values())
    # The figures now count by the confidence as of now, so each opens its memories by id.
    for tier in range(5):
        target = projection.target(0, tier)
        assert target.finder is not None and target.total == projection.count(0, tier)
        assert len(target.finder(demo_store)) == min(MAX_IDS, target.total)


def test_run_changes_page_through_a_run(demo_store: Store) -> None:
    run = apply(demo_store, decay_plan(demo_store), actor="tui")
    total = run_change_count(demo_store, run.id)
    first = run_changes(demo_store, run.id, 0, 10)
    second = run_changes(demo_store, run.id, first[-1].id, 10)
    assert total == run.changed and len(first) == 10
    assert run_changes_before(demo_store, run.id, second[0].id, 10) == first


def test_every_maintenance_key_has_an_id_and_a_tooltip() -> None:
    from textual.binding import Binding

    from memory_console.tui.screens.confirm import ChoiceScreen, ConfirmScreen
    from memory_console.tui.screens.health import HealthScreen
    from memory_console.tui.screens.maintenance import MaintenanceScreen
    from memory_console.tui.screens.preview import PreviewScreen
    from memory_console.tui.screens.review import ReviewScreen
    from memory_console.tui.screens.runs import RunsScreen
    from memory_console.tui.widgets.change_table import ChangeTable
    from memory_console.tui.widgets.figure_table import FigureTable
    from memory_console.tui.widgets.run_changes import RunChangesTable

    owners = (
        MaintenanceScreen,
        PreviewScreen,
        ReviewScreen,
        RunsScreen,
        HealthScreen,
        ConfirmScreen,
        ChoiceScreen,
        ChangeTable,
        FigureTable,
        RunChangesTable,
    )
    for owner in owners:
        for binding in owner.BINDINGS:
            assert isinstance(binding, Binding) and binding.id and binding.tooltip, owner


def test_a_plan_under_no_edits_is_the_plan_edited_by_none(demo_store: Store) -> None:
    """unedited() stands in for edit_plan() while a review grows with nothing decided."""
    from memory_console.maintenance.edits import unedited

    add_duplicate_groups(demo_store, (3, 4))
    proposed = plan(demo_store, ("consolidate",), now=NOW)
    made, expected = unedited(proposed, merge_groups(proposed)), edit_plan(proposed, PlanEdits())
    assert made.groups == expected.groups and made.kept_new == expected.kept_new
    assert [k.tolist() for k in made.kept] == [k.tolist() for k in expected.kept]
    assert [(m.key, m.fields) for m in made.plan.new_memories] == [
        (m.key, m.fields) for m in expected.plan.new_memories
    ]
    assert [s.ids.tolist() for s in made.plan.change_sets] == [
        s.ids.tolist() for s in expected.plan.change_sets
    ]
    assert made.plan.touched_ids.tolist() == expected.plan.touched_ids.tolist()


def test_merge_groups_of_some_changes_add_up_to_the_plans(demo_store: Store) -> None:
    from memory_console.maintenance.edits import merge_groups_of

    add_duplicate_groups(demo_store, (3, 4))
    proposed = plan(demo_store, ("consolidate",), now=NOW)
    memories = proposed.new_memories
    ones, others = memories[:1], memories[1:]
    found = merge_groups_of(ones, proposed.change_sets)
    found.update(merge_groups_of(others, proposed.change_sets))
    assert found == merge_groups(proposed)


def test_scopes_are_planned_smallest_first(demo_store: Store) -> None:
    """A review open while planning goes on gets groups from small owners and topics first."""
    from memory_console.store.consolidation import candidate_scopes

    copy = {"owner": "zed", "topic": "general", "content": "Likes green tea."}
    demo_store.add_many([copy, copy], now=NOW)
    scopes = demo_store.read(candidate_scopes, "active")
    sizes = [demo_store.count(MemoryFilter(owner=o, topic=t, status="active")) for o, t in scopes]
    assert sizes == sorted(sizes) and len(set(sizes)) > 1
    assert all(size <= 2 for size in sizes[: scopes.index(("zed", "general"))])


def test_the_first_merges_are_told_before_the_plan_reads_every_row(
    demo_store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A consolidate plan tells its first scope's merges before it reads the whole frame (the
    review's first group waits on one owner and topic, not on every row), and the plan made
    so is the plan made with the frame read first."""
    from memory_console.maintenance import frame as frame_module
    from memory_console.store import bulk

    add_duplicate_groups(demo_store)
    eager = plan(demo_store, ("consolidate", "decay"), now=NOW)
    order: list[str] = []
    loader = bulk.load_memory_arrays

    def load(*args: object) -> object:
        order.append("frame")
        return loader(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(frame_module.bulk, "load_memory_arrays", load)
    lazy = plan(
        demo_store,
        ("consolidate", "decay"),
        now=NOW,
        partial=lambda scope: order.append("groups" if scope.groups else "scope"),
    )
    assert "frame" in order and "groups" in order
    assert order.index("groups") < order.index("frame")
    assert lazy.counts() == eager.counts() and lazy.new_memories == eager.new_memories
    assert [c.ids.tolist() for c in lazy.change_sets] == [c.ids.tolist() for c in eager.change_sets]
