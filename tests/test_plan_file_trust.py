"""A plan file is input: whatever is edited into it (field names, values, types, ids,
owners, merged memories' text), it is refused with nothing written, or applied exactly as
the plan the planner makes; and no SQL text in store/ is made from data."""

from __future__ import annotations

import ast
import copy
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory_console.store import Store
from tests.helpers import invoke

PASSES = "consolidate,sensitive,decay,cleanup,quota,expire"
NOW = "2026-12-01T00:00:00Z"
INJECTION = "content = (SELECT group_concat(content,' | ') FROM memory WHERE owner='carol'), owner"


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A demo store with its vectors (so consolidation merges), made once."""
    folder = tmp_path_factory.mktemp("template")
    db = folder / "template.db"
    assert invoke(["--db", str(db), "demo", "--count", "300"]).code == 0
    assert invoke(["--db", str(db), "reindex"]).code == 0
    for suffix in ("-vectors", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    return db


def rows(db: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of the tables an apply writes (times of the clock left out)."""
    with Store(db, read_only=True) as store:
        return {
            "memory": store._query(
                "SELECT id, owner, topic, content, title, confidence, base_confidence, status, "
                "is_protected, decay_policy, memory_type, consolidated_into, metadata "
                "FROM memory ORDER BY id"
            ),
            # Before and after compared as the JSON objects they are (not their key order).
            "events": [
                (ident, kind, json.loads(before or "null"), json.loads(after or "null"))
                for ident, kind, before, after in store._query(
                    "SELECT memory_id, kind, before, after FROM memory_event ORDER BY id"
                )
            ],
            "runs": store._query("SELECT passes, changed FROM maintenance_run ORDER BY id"),
        }


class Trial:
    """The template copied to one path (a plan names its store by path), planned once."""

    def __init__(self, template: Path, folder: Path) -> None:
        self.template, self.db = template, folder / "store.db"
        self.reset()
        self.plan_path = folder / "plan.json"
        done = invoke(
            [
                "--db",
                str(self.db),
                "maintain",
                "--passes",
                PASSES,
                "--now",
                NOW,
                "--dry-run",
                "--out",
                str(self.plan_path),
            ]
        )
        assert done.code == 0, done.err
        self.plan = json.loads(self.plan_path.read_text())
        self.before = rows(self.db)
        assert invoke(["--db", str(self.db), "maintain", "--apply", str(self.plan_path)]).code == 0
        self.fresh = rows(self.db)
        self.reset()

    def reset(self) -> None:
        for suffix in ("", "-vectors", "-wal", "-shm"):
            Path(f"{self.db}{suffix}").unlink(missing_ok=True)
        shutil.copy(self.template, self.db)

    def apply(self, plan: dict[str, Any]) -> tuple[int, str]:
        self.reset()
        edited = self.plan_path.with_name("edited.json")
        edited.write_text(json.dumps(plan))
        done = invoke(["--db", str(self.db), "maintain", "--apply", str(edited)])
        return done.code, done.err


@pytest.fixture(scope="module")
def trial(template: Path, tmp_path_factory: pytest.TempPathFactory) -> Trial:
    return Trial(template, tmp_path_factory.mktemp("trial"))


def change_set(plan: dict[str, Any], name: str) -> dict[str, Any]:
    return next(c for c in plan["change_sets"] if c["pass"] == name)


def refused(trial: Trial, plan: dict[str, Any], words: str) -> None:
    code, err = trial.apply(plan)
    assert code == 1 and words in err and err.count("\n") == 1, err
    assert rows(trial.db) == trial.before


def test_a_field_name_never_reaches_sql(trial: Trial) -> None:
    plan = copy.deepcopy(trial.plan)
    values = change_set(plan, "decay")["values"]
    values[INJECTION] = values.pop("confidence")
    refused(trial, plan, "is not one the decay pass writes (confidence, status)")


@pytest.mark.parametrize(
    ("field", "value", "words"),
    [
        ("confidence", -5, "confidence must be between 0 and 1"),
        ("confidence", 1e308, "confidence must be between 0 and 1"),
        ("confidence", 0.01, "is not what the pass computes"),
    ],
)
def test_a_value_out_of_range_or_not_computed_is_refused(
    trial: Trial, field: str, value: Any, words: str
) -> None:
    plan = copy.deepcopy(trial.plan)
    change_set(plan, "decay")["values"][field]["after"]["values"][0] = value
    refused(trial, plan, words)


def test_a_nan_confidence_is_refused(trial: Trial) -> None:
    plan = copy.deepcopy(trial.plan)
    change_set(plan, "decay")["values"]["confidence"]["after"]["values"][0] = "NaN"
    refused(trial, plan, "confidence must be a finite number")


@pytest.mark.parametrize("field", ["owner", "content", "is_protected", "id", "status"])
def test_fields_a_pass_does_not_write_are_refused(trial: Trial, field: str) -> None:
    plan = copy.deepcopy(trial.plan)
    values = change_set(plan, "decay")["values"]
    count = len(change_set(plan, "decay")["ids"])
    values[field] = {
        "before": {"dtype": "str", "values": ["x"] * count},
        "after": {"dtype": "str", "values": ["alice"] * count},
    }
    code, err = trial.apply(plan)
    assert code == 1 and rows(trial.db) == trial.before, err


def test_a_merged_memory_with_a_secret_or_another_owner_is_refused(trial: Trial) -> None:
    if not trial.plan["new_memories"]:
        pytest.skip("the demo made no merge")
    plan = copy.deepcopy(trial.plan)
    plan["new_memories"][0]["fields"]["content"] = "password: hunter2 AKIAIOSFODNN7EXAMPLE"
    refused(trial, plan, "which no memory may keep")
    plan = copy.deepcopy(trial.plan)
    plan["new_memories"][0]["fields"]["owner"] = "mallory"
    refused(trial, plan, "owner and topic must be its members' own")


def test_a_protected_memorys_change_is_refused(trial: Trial) -> None:
    plan = copy.deepcopy(trial.plan)
    decay = change_set(plan, "decay")
    with Store(trial.db) as store:
        store.protect([decay["ids"][0]])
    with Store(trial.db) as store:
        revision = store._query("SELECT revision FROM memory WHERE id = ?", (decay["ids"][0],))
    position = plan["touched"]["ids"].index(decay["ids"][0])
    plan["touched"]["revisions"][position] = revision[0][0]
    edited = trial.plan_path.with_name("protected.json")
    edited.write_text(json.dumps(plan))
    done = invoke(["--db", str(trial.db), "maintain", "--apply", str(edited)])
    assert done.code == 1 and "is protected" in done.err, done.err
    trial.reset()


MUTATIONS = st.sampled_from(["rename", "value", "dtype", "id", "drop", "new", "owner"])
ODD_VALUES = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(-(2**70), 2**70),
    st.text(max_size=20),
    st.none(),
    st.booleans(),
    st.sampled_from(["archived", "active", "consolidated", "none", "semantic", 0.5, 1, 0]),
)
NAMES = st.sampled_from(
    [INJECTION, "owner", "content", "id", "revision", "status", "confidence", "metadata", "x"]
)
counts = {"refused": 0, "applied": 0}


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(kind=MUTATIONS, which=st.integers(0, 10_000), value=ODD_VALUES, name=NAMES)
def test_a_mutated_plan_is_refused_whole_or_applied_as_planned(
    trial: Trial, kind: str, which: int, value: Any, name: str
) -> None:
    plan = copy.deepcopy(trial.plan)
    sets = [c for c in plan["change_sets"] if c["ids"]]
    chosen = sets[which % len(sets)]
    field = sorted(chosen["values"])[which % len(chosen["values"])]
    position = which % len(chosen["ids"])
    if kind == "rename":
        chosen["values"][name] = chosen["values"].pop(field)
    elif kind == "value":
        chosen["values"][field]["after"]["values"][position] = value
    elif kind == "dtype":
        chosen["values"][field]["after"]["dtype"] = str(value)
    elif kind == "id":
        chosen["ids"][position] = value if isinstance(value, int) else which
    elif kind == "drop":
        chosen.pop(sorted(chosen)[which % len(chosen)])
    elif kind == "new" and plan["new_memories"]:
        memory = plan["new_memories"][which % len(plan["new_memories"])]
        memory["fields"][name] = value
    elif kind == "owner" and plan["new_memories"]:
        plan["new_memories"][0]["fields"]["owner"] = str(value)
    code, err = trial.apply(plan)
    assert "Traceback" not in err
    if code == 0:
        counts["applied"] += 1
        assert rows(trial.db) == trial.fresh
    else:
        counts["refused"] += 1
        assert code == 1 and err.count("\n") == 1, err
        assert rows(trial.db) == trial.before


def test_no_sql_in_store_is_made_from_anything_but_the_codes_own_names() -> None:
    """An f-string, `%` or `+` that builds the text of a statement in store/ may only put in
    names (a name, an attribute, a constant or a join of such), never a value read from a
    file, a client or a message: each interpolated expression is one of those forms, and the
    fields an update sets pass through bulk.writable (the table's own columns)."""
    store_dir = Path(__file__).resolve().parent.parent / "memory_console" / "store"
    # Joins of names, the dialects' own fragments (store/dialect.py), bulk.writable's check.
    allowed_calls = {"join", "where", "writable", "len", "str", "int", "format"}
    allowed_calls |= {"of", "id_table", "whole", "bucket_case"}
    offenders = []
    for path in sorted(store_dir.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not isinstance(node, ast.JoinedStr):
                continue
            text = "".join(
                part.value for part in node.values if isinstance(part, ast.Constant)
            ).upper()
            if not any(word in text for word in ("SELECT ", "UPDATE ", "INSERT ", "DELETE ")):
                continue
            for part in node.values:
                if not isinstance(part, ast.FormattedValue):
                    continue
                for inner in ast.walk(part.value):
                    if isinstance(inner, ast.Call):
                        callee = inner.func
                        called = (
                            callee.attr
                            if isinstance(callee, ast.Attribute)
                            else getattr(callee, "id", "")
                        )
                        if called not in allowed_calls:
                            offenders.append(f"{path.name}:{node.lineno} calls {called}()")
                    if (
                        isinstance(inner, ast.Subscript)
                        and isinstance(inner.value, ast.Name)
                        and inner.value.id in ("data", "row", "entry", "values")
                    ):
                        offenders.append(f"{path.name}:{node.lineno} reads {inner.value.id}[...]")
    assert offenders == []


def test_the_mutations_were_mostly_refused() -> None:
    """Runs after the property test (file order): the mutations it made were refused or
    applied as planned, and it made some of each kind of outcome it can."""
    print(f"mutated plans: {counts['refused']} refused, {counts['applied']} applied as planned")
    assert counts["refused"] > 0


def test_a_plan_applied_twice_with_skip_stale_records_no_run(trial: Trial) -> None:
    trial.reset()
    path = str(trial.plan_path)
    assert invoke(["--db", str(trial.db), "maintain", "--apply", path]).code == 0
    after_first = rows(trial.db)
    again = invoke(["--db", str(trial.db), "maintain", "--apply", path, "--skip-stale"])
    assert again.code == 1 and "no run was recorded" in again.err
    assert rows(trial.db) == after_first
    trial.reset()


def test_the_hint_after_a_decay_plan_names_a_command_that_applies_it(
    trial: Trial, tmp_path: Path
) -> None:
    trial.reset()
    out = tmp_path / "decay.json"
    made = invoke(["--db", str(trial.db), "decay", "--dry-run", "--now", NOW, "--out", str(out)])
    assert made.code == 0
    hint = made.out.split("apply it with: ", 1)[1].split()
    assert hint[:3] == ["memory-console", "maintain", "--apply"]
    assert invoke(["--db", str(trial.db), *hint[1:]]).code == 0
    trial.reset()
