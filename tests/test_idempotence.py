"""Fixed points: every pass, and every combination of passes the CLI and console offer, changes
nothing when run a second time at the same `now` (issue: "a second run at the same time
changes nothing"), on the demo store and on stores hypothesis builds."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory_console.demo import build_demo
from memory_console.maintenance import apply, plan, registry
from memory_console.maintenance.changes import Plan
from memory_console.maintenance.passes.supersede import FIELD
from memory_console.store import MemoryFilter, Store
from memory_console.store.validate import INSERT_COLUMNS
from tests.helpers import DAY, DEMO_SEED, ISO_NOW, NOW, invoke

POLICIES = ("relevance", "periodic", "exponential")
PASSES = tuple(registry.registered_passes())
WITHOUT_CONSOLIDATE = tuple(name for name in PASSES if name != "consolidate")
DEMO_SIZE = 2000


def changes_of(proposed: Plan) -> int:
    """Changed memories plus memories the plan would create."""
    return proposed.changed + len(proposed.new_memories)


def second_run(path: Path, names: Sequence[str], policy: str) -> tuple[Plan, Plan]:
    """Plan and apply `names` at NOW, then plan them again at NOW: (first plan, second plan)."""
    with Store(path, actor="test") as store:
        params = registry.build_params(names, policy, None, store.settings())
        first = plan(store, names, params, NOW)
        apply(store, first)
        again = plan(store, names, params, NOW)
    return first, again


def describe(proposed: Plan) -> str:
    """What a second plan would still do, for the failure message."""
    passes = sorted({s.pass_name for s in proposed.change_sets})
    return f"{proposed.counts()} by {passes}, {len(proposed.new_memories)} new memories"


def assert_fixed(first: Plan, again: Plan) -> None:
    assert changes_of(again) == 0, (
        f"the second run at the same now still plans {describe(again)} "
        f"(the first changed {changes_of(first)})"
    )


# -- the demo store ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def idempotence_demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 2,000-memory demo store built once for this module; tests run on copies."""
    path = tmp_path_factory.mktemp("idempotence-demo") / "demo.db"
    build_demo(path, count=DEMO_SIZE, seed=DEMO_SEED, now=NOW)
    return path


@pytest.fixture
def demo_copy(idempotence_demo: Path, tmp_path: Path) -> Path:
    path = tmp_path / "memories.db"
    shutil.copy(idempotence_demo, path)
    return path


@pytest.fixture(scope="module")
def idempotence_demo_vectors(
    idempotence_demo: Path, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """The demo store with every memory's vector (reindexed once for this module)."""
    path = tmp_path_factory.mktemp("idempotence-vectors") / "demo.db"
    shutil.copy(idempotence_demo, path)
    assert invoke(["reindex", "--db", str(path), "-q"]).code == 0
    return path


@pytest.mark.parametrize("names", [["supersede"], ["consolidate"], list(registry.MAINTAIN)])
def test_passes_that_read_vectors_reach_a_fixed_point(
    idempotence_demo_vectors: Path, tmp_path: Path, names: list[str]
) -> None:
    """With vectors, supersede pairs each old memory with its newest version that stays (it
    left a memory whose newest version was itself superseded, and the next run took it)."""
    path = tmp_path / "memories.db"
    shutil.copy(idempotence_demo_vectors, path)
    first, again = second_run(path, names, "relevance")
    assert changes_of(first) > 0
    assert_fixed(first, again)


def pass_cases() -> list[Any]:
    """Every registered pass under every decay policy (the policy matters to decay alone,
    but the console offers every pairing)."""
    return [
        pytest.param(name, policy, id=f"{name}-{policy}") for name in PASSES for policy in POLICIES
    ]


@pytest.mark.parametrize(("name", "policy"), pass_cases())
def test_each_pass_reaches_a_fixed_point_on_the_demo_store(
    demo_copy: Path, name: str, policy: str
) -> None:
    first, again = second_run(demo_copy, (name,), policy)
    assert_fixed(first, again)


@pytest.mark.parametrize("policy", POLICIES)
def test_default_maintain_reaches_a_fixed_point_on_the_demo_store(
    demo_copy: Path, policy: str
) -> None:
    first, again = second_run(demo_copy, registry.maintain_passes(), policy)
    assert changes_of(first) > 0  # the demo store has work for maintain
    assert_fixed(first, again)


@pytest.mark.parametrize("policy", POLICIES)
def test_every_pass_at_once_reaches_a_fixed_point_on_the_demo_store(
    demo_copy: Path, policy: str
) -> None:
    first, again = second_run(demo_copy, PASSES, policy)
    assert_fixed(first, again)


def test_cli_maintain_twice_at_the_same_now_plans_nothing(demo_copy: Path) -> None:
    """The real entry point in a process of its own: apply, then a dry run's json counts."""

    def maintain(*flags: str) -> dict[str, Any]:
        done = subprocess.run(
            [sys.executable, "-m", "memory_console.cli", "maintain", "--db", str(demo_copy)]
            + ["--now", ISO_NOW, "--json", *flags],
            capture_output=True,
            text=True,
            env={**os.environ, "NO_COLOR": "1"},
            check=False,
        )
        assert done.returncode == 0, done.stderr
        result: dict[str, Any] = json.loads(done.stdout)
        return result

    before = maintain("--dry-run")
    applied = maintain("--apply")
    after = maintain("--dry-run")
    assert before["changed"] > 0
    assert applied["counts"] == before["counts"]
    assert (after["changed"], after["counts"]) == (0, {}), after["counts"]


# -- stores hypothesis builds -----------------------------------------------------------------

OWNERS = ("alice", "bob")
TOPICS = ("general", "projects")
# Texts that wake every pass: slots that contradict (supersede), credentials and health data
# (sensitive), types the rules read otherwise (classify); keyword sets that overlap enough to
# merge (consolidate without vectors groups by keywords).
TEXTS = (
    "Yesterday we fixed the iron farm on the shared server.",
    "My dog's name is Rex.",
    "My dog's name is Bella.",
    "The iron farm on the shared server stopped working.",
    "To restart the server, run the deploy script then check the logs.",
    "The password for the router is hunter2.",
    "I was diagnosed with asthma last year.",
    "Prefers window seats on long flights.",
    "Prefers aisle seats on long flights.",
    "The project deadline is Friday.",
)
KEYWORD_SETS = (("iron", "farm", "server"), ("iron", "farm"), ("dog",), ("seat", "flight"), ())
AGES = (0.02, 2.0, 20.0, 45.0, 100.0, 400.0)  # days: inside and past every TTL and period


@st.composite
def memory_rows(draw: st.DrawFn) -> dict[str, Any]:
    """One memory with every field a pass reads drawn from a small, colliding range."""
    created = NOW - draw(st.sampled_from(AGES)) * DAY
    accessed = draw(st.sampled_from((None, None, 0.0, 0.5, 0.999)))
    confidence = draw(st.sampled_from((0.85, 0.1, 0.3, 0.6, 0.92, 1.0)))
    return {
        "owner": draw(st.sampled_from(OWNERS)),
        "topic": draw(st.sampled_from(TOPICS)),
        "tier": draw(st.sampled_from(("long_term", "long_term", "working", "short_term"))),
        "memory_type": draw(st.sampled_from(("episodic", "semantic", "procedural"))),
        "title": "",
        "content": draw(st.sampled_from(TEXTS)),
        "keywords": json.dumps(list(draw(st.sampled_from(KEYWORD_SETS)))),
        "source": "manual",
        "importance": draw(st.sampled_from((0.5, 0.0, 0.2, 0.9))),
        "confidence": confidence,
        "base_confidence": max(confidence, draw(st.sampled_from((0.0, 1.0)))),
        "retrieval_count": draw(st.sampled_from((0, 12, 3, 6, 25))),
        "created_at": created,
        "updated_at": created,
        "last_accessed_at": None if accessed is None else created + accessed * (NOW - created),
        "decay_policy": draw(
            st.sampled_from(("standard", "aggressive", "standard", "none", "pending_deletion"))
        ),
        "is_protected": int(draw(st.integers(0, 5)) == 0),
        "status": draw(st.sampled_from(("active", "active", "active", "archived"))),
        "consolidated_into": None,
        "metadata": json.dumps({"user_requested": True} if draw(st.booleans()) else {}),
    }


@pytest.fixture(scope="module")
def empty_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An empty store made once: each example copies it (creating one costs half a second)."""
    path = tmp_path_factory.mktemp("idempotence-empty") / "empty.db"
    Store(path, actor="test").close()
    return path


def build_store(path: Path, rows: list[dict[str, Any]], max_memories: int) -> None:
    """The store at `path` (a copy of the empty one) filled with `rows` and a small quota."""
    with Store(path, actor="test") as store:
        store.set_setting("importance.max_memories", str(max_memories))
        with store.transaction("building") as conn:
            for row in rows:
                values = {**row, "title": row["content"][:40]}
                columns = [c for c in INSERT_COLUMNS if c in values]
                marks = ", ".join("?" * len(columns))
                conn.execute(
                    f"INSERT INTO memory ({', '.join(columns)}, revision) VALUES ({marks}, 0)",
                    [values[c] for c in columns],
                )


def check_subset(
    empty: Path, rows: list[dict[str, Any]], names: Sequence[str], policy: str, quota: int
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "memories.db"
        shutil.copy(empty, path)
        build_store(path, rows, quota)
        first, again = second_run(path, registry.resolve(names), policy)
        assert_fixed(first, again)


STORE_ROWS = st.lists(memory_rows(), min_size=6, max_size=24)
QUICK = settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@QUICK
@given(
    rows=STORE_ROWS,
    names=st.sets(st.sampled_from(WITHOUT_CONSOLIDATE), min_size=1),
    policy=st.sampled_from(POLICIES),
    quota=st.sampled_from((3, 8, 1000)),
)
def test_any_passes_without_consolidate_reach_a_fixed_point(
    empty_store: Path, rows: list[dict[str, Any]], names: set[str], policy: str, quota: int
) -> None:
    """Random subsets of the console's pass list (consolidate aside) on random stores."""
    check_subset(empty_store, rows, sorted(names), policy, quota)


PER_PASS = settings(QUICK, max_examples=max(QUICK.max_examples // 2, 1))


@pytest.mark.parametrize("name", PASSES)
@PER_PASS
@given(rows=STORE_ROWS, policy=st.sampled_from(POLICIES))
def test_each_pass_reaches_a_fixed_point_on_random_stores(
    empty_store: Path, name: str, rows: list[dict[str, Any]], policy: str
) -> None:
    check_subset(empty_store, rows, [name], policy, 8)


@QUICK
@given(
    rows=STORE_ROWS,
    names=st.sets(st.sampled_from(PASSES), min_size=1).map(lambda s: s | {"consolidate"}),
    policy=st.sampled_from(POLICIES),
    quota=st.sampled_from((3, 8, 1000)),
)
def test_any_passes_with_consolidate_reach_a_fixed_point(
    empty_store: Path, rows: list[dict[str, Any]], names: set[str], policy: str, quota: int
) -> None:
    check_subset(empty_store, rows, sorted(names), policy, quota)


@QUICK
@given(rows=STORE_ROWS, policy=st.sampled_from(POLICIES), quota=st.sampled_from((3, 8, 1000)))
def test_default_maintain_reaches_a_fixed_point_on_random_stores(
    empty_store: Path, rows: list[dict[str, Any]], policy: str, quota: int
) -> None:
    check_subset(empty_store, rows, registry.maintain_passes(), policy, quota)


# -- the interplays found, one by one ---------------------------------------------------------


def row(content: str, **fields: Any) -> dict[str, Any]:
    """An active, unprotected long-term memory of alice's, 100 days old and never accessed."""
    created = NOW - 100 * DAY
    base: dict[str, Any] = {
        "owner": "alice",
        "topic": "general",
        "tier": "long_term",
        "memory_type": "episodic",
        "content": content,
        "keywords": "[]",
        "source": "manual",
        "importance": 0.5,
        "confidence": 0.85,
        "base_confidence": 0.85,
        "retrieval_count": 0,
        "created_at": created,
        "updated_at": created,
        "last_accessed_at": None,
        "decay_policy": "standard",
        "is_protected": 0,
        "status": "active",
        "consolidated_into": None,
        "metadata": "{}",
    }
    return {**base, **fields}


def run_twice(
    empty: Path, tmp_path: Path, rows: list[dict[str, Any]], names: Sequence[str], quota: int = 1000
) -> tuple[Path, Plan, Plan]:
    path = tmp_path / "memories.db"
    shutil.copy(empty, path)
    build_store(path, rows, quota)
    first, again = second_run(path, registry.resolve(names), "relevance")
    return path, first, again


def test_classify_leaves_what_promote_made_semantic(empty_store: Path, tmp_path: Path) -> None:
    """An event retrieved often is promoted (semantic, decay_policy none); classify, whose
    rules read it as episodic, used to retype it back at every second run."""
    often = row(
        "Yesterday we fixed the iron farm.",
        retrieval_count=25,
        last_accessed_at=NOW - DAY,
    )
    path, first, again = run_twice(empty_store, tmp_path, [often], ["classify", "promote"])
    assert first.counts() == {"promoted": 1}
    assert_fixed(first, again)
    with Store(path, read_only=True) as store:
        (memory,) = store.get_many([1]).values()
    assert (memory.memory_type, memory.decay_policy) == ("semantic", "none")


def test_protect_facts_protects_what_promote_makes_a_fact(
    empty_store: Path, tmp_path: Path
) -> None:
    """promote (after protect-facts in the order) raises an event to semantic at 0.95:
    protect-facts protects it in the same run, not in the next one."""
    often = row(
        "Yesterday we fixed the iron farm.",
        confidence=0.9,
        base_confidence=0.9,
        retrieval_count=25,
        last_accessed_at=NOW - DAY,
    )
    path, first, again = run_twice(empty_store, tmp_path, [often], ["protect-facts", "promote"])
    assert first.counts() == {"promoted": 1, "protected": 1}
    assert first.figures["protect-facts"]["protected"] == 1
    assert_fixed(first, again)
    with Store(path, read_only=True) as store:
        (memory,) = store.get_many([1]).values()
    assert (memory.is_protected, memory.confidence) == (True, pytest.approx(0.95))


def duplicates() -> list[dict[str, Any]]:
    """Three repeats of one fact (merged without vectors: the same text) and three others."""
    same = '["iron", "farm", "server"]'
    return [
        row("The iron farm on the server broke.", keywords=same),
        row("The iron farm on the server broke.", keywords=same),
        row("the iron farm on the server broke", keywords=same),
        row("Likes green tea.", keywords='["tea"]', importance=0.9, last_accessed_at=NOW - DAY),
        row("Drives a blue car.", keywords='["car"]', importance=0.9, last_accessed_at=NOW - DAY),
        row("Plays the cello.", keywords='["cello"]', importance=0.9, last_accessed_at=NOW - DAY),
    ]


def test_quota_counts_the_memory_consolidate_creates(empty_store: Path, tmp_path: Path) -> None:
    """Three merged into one leaves four active memories for a quota of three: quota archives
    one in the same run (it counted three, and the next run archived one)."""
    path, first, again = run_twice(
        empty_store, tmp_path, duplicates(), ["consolidate", "quota"], quota=3
    )
    assert first.counts()["consolidated"] == 3
    assert (
        first.counts().get("archived", 0)
        + sum(m.fields.get("status") == "archived" for m in first.new_memories)
        == 1
    )
    assert_fixed(first, again)
    with Store(path, read_only=True) as store:
        assert store.count(MemoryFilter(owner="alice", status="active")) == 3


def test_decay_lowers_the_merged_memory_in_the_same_run(empty_store: Path, tmp_path: Path) -> None:
    """The merged memory keeps its members' age: decay lowers it as it lowers them, in the run
    that creates it (the next run decayed it)."""
    path, first, again = run_twice(empty_store, tmp_path, duplicates(), ["consolidate", "decay"])
    (merged,) = first.new_memories
    assert merged.fields["confidence"] < merged.fields["base_confidence"] == 0.85
    assert_fixed(first, again)


def test_consolidate_does_not_merge_its_merged_memory_again(
    empty_store: Path, tmp_path: Path
) -> None:
    """Exact repeats merge; the merged memory says its leader's words, so it never groups
    with the memories the first run left apart (the keyword grouping once did)."""
    rows = [
        row("Iron farm notes.", keywords='["iron", "farm"]'),
        row("Iron farm notes.", keywords='["iron", "farm"]'),
        row("iron farm notes", keywords='["iron", "farm"]'),
        row("Iron farm on the shared server.", keywords='["iron", "farm", "shared", "server"]'),
        row("The shared server is down.", keywords='["shared", "server"]'),
    ]
    _, first, again = run_twice(empty_store, tmp_path, rows, ["consolidate"])
    assert first.counts()["consolidated"] == 3
    assert_fixed(first, again)


def test_supersede_takes_each_memory_to_its_newest_version_that_stays(
    empty_store: Path, tmp_path: Path
) -> None:
    """10 April's versions are 3 April and 10 June (cosine >= 0.8 with the real model, with
    differing dates); 10 June's is 20 July. 10 April went to 10 June, which was itself
    superseded, so it was left, and the next run took it to 3 April."""
    dated = [
        ("Birthday is on 10 April.", "april"),
        ("Birthday is on 3 April.", "april"),
        ("Birthday is on 10 June.", "june"),
        ("Birthday is on 20 July.", "july"),
    ]
    rows = [
        row(
            text,
            title=text,
            topic="user_info",
            memory_type="semantic",
            keywords=json.dumps(["birthday", month, "date"]),
            created_at=NOW - (40 - 10 * number) * DAY,
            updated_at=NOW - (40 - 10 * number) * DAY,
        )
        for number, (text, month) in enumerate(dated)
    ]
    path = tmp_path / "memories.db"
    shutil.copy(empty_store, path)
    build_store(path, rows, 1000)
    assert invoke(["reindex", "--db", str(path), "-q"]).code == 0
    first, again = second_run(path, ["supersede"], "relevance")
    (change,) = first.change_sets
    assert dict(zip(change.ids.tolist(), change.values[FIELD][1].tolist(), strict=True)) == {
        1: 2,
        3: 4,
    }
    assert_fixed(first, again)
