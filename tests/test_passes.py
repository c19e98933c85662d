"""Each maintenance pass on small real stores: the policies' math and who is spared."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from memory_console.maintenance import apply, build_params, plan, registered_passes
from memory_console.maintenance import registry as registry_module
from memory_console.store import Store, bulk
from tests.helpers import DAY, NOW, memory


def changed(proposal: object, field: str | None = None) -> dict[int, tuple[object, object]]:
    """id -> (before, after) of the proposed changes (of one field if given)."""
    return {
        c.id: (c.before, c.after)
        for c in proposal.changes()  # type: ignore[attr-defined]
        if field is None or c.field == field
    }


def test_relevance_reproduces_the_worked_figures(store: Store) -> None:
    ids = store.add_many(
        [
            memory("never retrieved, 60 days", days_old=60),
            memory("2 retrievals, 30 days", days_old=30, retrieval_count=2),
            memory("2 retrievals, 90 days", days_old=90, retrieval_count=2),
            memory("15 retrievals, 30 days", days_old=30, retrieval_count=15),
            memory("15 retrievals, 90 days", days_old=90, retrieval_count=15),
            memory("29 days: no full period yet", days_old=29),
        ],
        now=NOW,
    )
    after = {i: a for i, (_, a) in changed(plan(store, now=NOW), "confidence").items()}
    assert after[ids[0]] == pytest.approx(0.9025)
    assert after[ids[1]] == pytest.approx(0.958)
    assert round(after[ids[2]], 3) == 0.879
    assert after[ids[3]] == pytest.approx(0.99)
    assert round(after[ids[4]], 3) == 0.970
    assert ids[5] not in after


def test_reasons_name_periods_anchor_and_rate(store: Store) -> None:
    first, second = store.add_many(
        [
            memory("accessed", days_old=200, retrieval_count=2, last_accessed_at=NOW - 95 * DAY),
            memory("never accessed", days_old=61),
        ],
        now=NOW,
    )
    reasons = {c.id: c.reason for c in plan(store, now=NOW).changes()}
    assert reasons[first] == "3 periods since last access at rate 0.958"
    assert reasons[second] == "2 periods since creation at rate 0.950"


def test_aggressive_policy_decays_faster(store: Store) -> None:
    standard, aggressive = store.add_many(
        [
            memory("standard", days_old=60),
            memory("aggressive", days_old=60, decay_policy="aggressive"),
        ],
        now=NOW,
    )
    after = {i: a for i, (_, a) in changed(plan(store, now=NOW)).items()}
    assert after[standard] == pytest.approx(0.95**2)
    assert after[aggressive] == pytest.approx(0.90**2)


def test_decay_twice_at_the_same_now_changes_nothing(store: Store) -> None:
    store.add_many(
        [memory(f"m{i}", days_old=30 * i + 5, retrieval_count=i) for i in range(1, 9)], now=NOW
    )
    first = plan(store, now=NOW)
    assert first.summary()["decayed"] == 8
    apply(store, first)
    second = plan(store, now=NOW)
    assert second.is_empty and second.summary()["decayed"] == 0
    assert apply(store, second).changed == 0


def test_a_daily_schedule_reaches_what_one_late_run_reaches(tmp_path: Path) -> None:
    memories = [
        memory(
            f"m{i}",
            days_old=10 * i,
            retrieval_count=i % 12,
            decay_policy="aggressive" if i % 3 == 0 else "standard",
        )
        for i in range(1, 15)
    ]
    daily, monthly = (Store(tmp_path / f"{name}.db", actor="test") for name in ("d", "m"))
    for store in (daily, monthly):
        store.add_many(memories, now=NOW)
    for day in range(0, 121):
        apply(daily, plan(daily, now=NOW + day * DAY))
    for month in range(0, 5):
        apply(monthly, plan(monthly, now=NOW + month * 30 * DAY))
    final = NOW + 120 * DAY
    apply(monthly, plan(monthly, now=final))
    confidences = [
        [r[0] for r in store._query("SELECT confidence FROM memory ORDER BY id")]
        for store in (daily, monthly)
    ]
    assert confidences[0] == confidences[1]
    assert len(set(confidences[0])) > 5
    daily.close()
    monthly.close()


def test_confidence_stops_at_the_floor_and_is_never_raised(store: Store) -> None:
    old, low = store.add_many(
        [
            memory("ancient", days_old=3000),
            memory("below the floor already", days_old=3000, confidence=0.05),
        ],
        now=NOW,
    )
    after = changed(plan(store, ("decay",), now=NOW), "confidence")
    assert after[old][1] == 0.10
    assert low not in after
    floored = build_params(("decay",), overrides={"floor": 0.2})
    assert changed(plan(store, ("decay",), floored, now=NOW))[old][1] == 0.2


def test_cleanup_flags_only_old_memories_at_the_floor(store: Store) -> None:
    ids = store.add_many(
        [
            memory("old at the floor", days_old=3000),
            memory("young at the floor", days_old=60, confidence=0.105),
            memory("old but believed", days_old=100, retrieval_count=15),
            memory("old, floor, protected", days_old=3000, is_protected=True),
            memory("old, floor, semantic", days_old=3000, memory_type="semantic", confidence=0.1),
        ],
        now=NOW,
    )
    proposal = plan(store, now=NOW)
    flags = changed(proposal, "decay_policy")
    assert flags == {ids[0]: ("standard", "pending_deletion")}
    assert proposal.summary()["flagged"] == 1
    assert changed(proposal, "confidence")[ids[1]][1] == 0.10
    apply(store, proposal)
    assert store.require(ids[0]).decay_policy == "pending_deletion"
    assert plan(store, now=NOW + 400 * DAY).summary()["flagged"] == 1  # young one, later


def test_promotion_candidates_and_promotion(store: Store) -> None:
    ids = store.add_many(
        [
            memory("retrieved 12 times", days_old=10, retrieval_count=12, confidence=0.8),
            memory("retrieved 7 times", days_old=10, retrieval_count=7, confidence=0.9),
            memory("retrieved 12 times, doubted", days_old=10, retrieval_count=12, confidence=0.5),
            memory(
                "retrieved 12 times, protected", days_old=10, retrieval_count=12, is_protected=True
            ),
            memory("procedural", days_old=10, retrieval_count=12, memory_type="procedural"),
            memory("near the cap", days_old=10, retrieval_count=20, confidence=0.9),
        ],
        now=NOW,
    )
    decay_only = plan(store, now=NOW)
    assert decay_only.summary()["promotion_candidates"] == 3
    proposal = plan(store, ("promote",), now=NOW)
    assert proposal.figures["promote"] == {"promotion_candidates": 3, "promoted": 2}
    apply(store, proposal)
    promoted = store.require(ids[0])
    assert (promoted.memory_type, promoted.decay_policy) == ("semantic", "none")
    assert promoted.confidence == pytest.approx(0.9) == promoted.base_confidence
    assert store.require(ids[5]).confidence == 0.95
    assert store.require(ids[1]).memory_type == "episodic"
    later = plan(store, ("decay", "promote"), now=NOW + 400 * DAY)
    assert ids[0] not in changed(later) and ids[5] not in changed(later)


def test_an_access_reinforces_up_to_the_cap_and_never_lowers(store: Store) -> None:
    ids = store.add_many(
        [
            memory("episodic near its cap", days_old=5, confidence=0.94),
            memory("episodic above its cap", days_old=5, confidence=0.97),
            memory("semantic", days_old=5, memory_type="semantic", confidence=0.5),
            memory("procedural", days_old=5, memory_type="procedural", confidence=0.95),
        ],
        now=NOW,
    )
    store.record_access(ids, now=NOW)
    got = [store.require(i) for i in ids]
    assert [r.confidence for r in got] == pytest.approx([0.95, 0.97, 0.55, 0.97])
    assert all(r.base_confidence == r.confidence for r in got)
    assert all(r.retrieval_count == 1 and r.last_accessed_at == NOW for r in got)


def test_decay_restarts_from_the_reinforced_value(store: Store) -> None:
    (ident,) = store.add_many([memory("used again", days_old=65)], now=NOW)
    apply(store, plan(store, now=NOW))
    store.record_access([ident], now=NOW)
    assert store.require(ident).confidence == pytest.approx(0.9025 + 0.03)
    after = changed(plan(store, now=NOW + 31 * DAY))[ident][1]
    assert after == pytest.approx((0.9025 + 0.03) * (0.95 + 0.004))


def test_periodic_decays_weekly_and_archives_below_the_threshold(store: Store) -> None:
    ids = store.add_many(
        [
            memory("ten weeks", days_old=70),
            memory("45 weeks", days_old=315),
            memory("semantic, 45 weeks", days_old=315, memory_type="semantic"),
        ],
        now=NOW,
    )
    params = build_params(("decay",), "periodic")
    proposal = plan(store, ("decay",), params, now=NOW)
    confidence, status = changed(proposal, "confidence"), changed(proposal, "status")
    assert confidence[ids[0]][1] == pytest.approx(0.95**10)
    assert confidence[ids[1]][1] == pytest.approx(0.95**45) and 0.95**45 < 0.10
    assert status == {ids[1]: ("active", "archived")}
    assert ids[2] not in changed(proposal)
    apply(store, proposal)
    assert store.require(ids[1]).status == "archived"
    assert plan(store, ("decay",), params, now=NOW).is_empty


def test_exponential_prunes_by_age_score_and_top_n_per_owner(store: Store) -> None:
    ids = store.add_many(
        [memory(f"alice {i}", days_old=1, owner="alice", importance=0.5 + i / 20) for i in range(5)]
        + [
            memory("alice old", days_old=31, owner="alice", importance=1.0),
            memory("alice weak", days_old=10, owner="alice", importance=0.3),
            memory("bob", days_old=1, owner="bob", importance=0.4),
        ],
        now=NOW,
    )
    params = build_params(("prune",), "exponential", {"prune_to_top_n": 3})
    reasons = {c.id: c.reason for c in plan(store, ("prune",), params, now=NOW).changes()}
    assert set(reasons) == {ids[0], ids[1], ids[5], ids[6]}
    assert reasons[ids[5]] == "31 days old, over 30"
    assert reasons[ids[6]].startswith("effective 0.27 below 0.3")
    assert reasons[ids[0]].startswith("owner alice beyond top 3")
    as_decay = plan(
        store, ("decay",), build_params(("decay",), "exponential", {"prune_to_top_n": 3}), now=NOW
    )
    assert set(changed(as_decay)) == set(reasons)


def test_expire_and_quota_archive_the_lowest_scores(store: Store) -> None:
    ids = store.add_many(
        [
            memory("old and forgotten", days_old=200, importance=0.1, owner="a"),
            memory("old but important", days_old=200, importance=0.9, owner="a"),
        ]
        + [memory(f"a{i}", days_old=5, importance=i / 10, owner="a") for i in range(1, 5)]
        + [memory("a protected, lowest", days_old=5, importance=0.0, owner="a", is_protected=True)],
        now=NOW,
    )
    params = build_params(("expire", "quota"), overrides={"max_memories": 4})
    proposal = plan(store, ("expire", "quota"), params, now=NOW)
    by_pass = {c.id: c.pass_name for c in proposal.changes()}
    assert by_pass == {ids[0]: "expire", ids[2]: "quota", ids[3]: "quota"}
    reasons = {c.id: c.reason for c in proposal.changes()}
    assert reasons[ids[0]].startswith("score 0.04 below 0.1 and 200 days old")
    assert reasons[ids[2]].startswith("owner a over quota 4")


def test_maintain_passes_see_each_other(store: Store) -> None:
    expired, kept = store.add_many(
        [
            memory("expires and would decay", days_old=200, importance=0.0),
            memory("decays", days_old=200, importance=1.0, retrieval_count=3),
        ],
        now=NOW,
    )
    proposal = plan(store, ("decay", "expire"), now=NOW)
    assert proposal.passes == ("expire", "decay")
    assert [(c.id, c.pass_name, c.field) for c in proposal.changes()] == [
        (expired, "expire", "status"),
        (kept, "decay", "confidence"),
    ]


def test_sensitive_pass_forgets_secrets_and_unrequested_health_data(store: Store) -> None:
    ids = store.add_many(
        [
            memory("The router password = hunter22", days_old=3),
            memory("Was diagnosed with asthma", days_old=3),
            memory("Was diagnosed with asthma", days_old=3, metadata={"user_requested": True}),
            memory("api key: sk-abcdefghijklmnop1234", days_old=3, is_protected=True),
            memory("Likes green tea", days_old=3),
        ],
        now=NOW,
    )
    proposal = plan(store, ("sensitive",), now=NOW)
    reasons = {c.id: c.reason for c in proposal.changes()}
    assert reasons == {ids[0]: "holds a password", ids[1]: "holds health data"}
    assert {c.after for c in proposal.changes()} == {"archived"}


def test_semantic_memories_never_decay(store: Store) -> None:
    store.add_many([memory("a fact", days_old=900, memory_type="semantic")], now=NOW)
    for policy in ("relevance", "periodic"):
        assert plan(store, ("decay",), build_params(("decay",), policy), now=NOW).is_empty


def test_protected_and_none_are_never_touched_by_any_pass(store: Store) -> None:
    bait = dict(
        days_old=3000,
        retrieval_count=12,
        confidence=0.1,
        importance=0.0,
        owner="o",
        content="password = hunter22 and asthma",
    )
    spared = store.add_many(
        [
            memory(**bait, is_protected=True),
            memory(**bait, decay_policy="none"),
            memory(**{**bait, "confidence": 0.9}, is_protected=True),
            memory(**{**bait, "confidence": 0.9}, decay_policy="none"),
        ],
        now=NOW,
    )
    store.add_many([memory(f"filler {i}", days_old=3000, owner="o") for i in range(5)], now=NOW)
    names = tuple(registered_passes())
    for policy in ("relevance", "periodic", "exponential"):
        for passes in [(name,) for name in names] + [names]:
            params = build_params(passes, policy, tight_limits(passes, policy))
            proposal = plan(store, passes, params, now=NOW)
            assert not set(spared) & set(changed(proposal)), (policy, passes)
    params = build_params(names, "relevance", tight_limits(names, "relevance"))
    everything = plan(store, names, params, now=NOW)
    assert everything.changed >= 5
    apply(store, everything)
    assert all(store.require(i).revision == 0 for i in spared)


def tight_limits(passes: tuple[str, ...], policy: str) -> dict[str, int]:
    """Quota and top-N limits of 1 for the passes that read them, so they bite."""
    limits = {}
    if "quota" in passes:
        limits["max_memories"] = 1
    if "prune" in passes or (policy == "exponential" and "decay" in passes):
        limits["prune_to_top_n"] = 1
    return limits


def unnarrowed(
    names: tuple[str, ...], params: object, now: float, *, due: bool = False
) -> bulk.Rows:
    """Every row of the passes' widest scope, as if no pass narrowed its rows (and the due
    index served no plan)."""
    scopes = (registry_module.get(name).scope_for(params) for name in names)  # type: ignore[arg-type]
    return bulk.Rows(max(scopes, key=registry_module.SCOPE_ORDER.index))


def test_narrowed_rows_give_the_same_plan(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(5)
    store.add_many(
        [
            memory(
                f"m{i}",
                days_old=rng.choice([1, 29.99, 30, 30.00001, 45, 400, 3000]),
                memory_type=rng.choice(["episodic", "procedural", "semantic"]),
                retrieval_count=rng.randrange(14),
                confidence=rng.choice([0.1, 0.5, 0.7, 1.0]),
                decay_policy=rng.choice(["standard", "aggressive", "pending_deletion"]),
            )
            for i in range(300)
        ]
        + [
            memory(
                "exactly one period",
                days_old=0,
                last_accessed_at=NOW - 30 * DAY,
                created_at=NOW - 31 * DAY,
            )
        ],
        now=NOW,
    )
    for policy, passes in (
        ("relevance", ("decay", "cleanup")),
        ("periodic", ("decay",)),
        ("relevance", ("cleanup",)),
    ):
        params = build_params(passes, policy)
        assert registry_module.rows_of(passes, params, NOW).narrow
        narrowed = plan(store, passes, params, now=NOW)
        with monkeypatch.context() as patch:
            patch.setattr(registry_module, "rows_of", unnarrowed)
            full = plan(store, passes, params, now=NOW)
        assert narrowed.figures == full.figures and narrowed.summary() == full.summary()
        assert list(narrowed.changes()) == list(full.changes())
        assert narrowed.changed > 0
