"""The maintenance commands through the real entry point: decay, maintain, runs, undo."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import memory_console.maintenance as maintenance_package
from memory_console.cli import main
from memory_console.maintenance import registered_passes
from memory_console.store import Store
from memory_console.timeutil import parse_iso, to_iso
from tests.helpers import DAY, ISO_NOW, NOW, memory, rows_digest

WORKED = [  # "Relevance decay": (retrieval_count, days since creation) -> confidence
    (0, 60, 0.9025),
    (2, 30, 0.958),
    (2, 90, 0.879),
    (15, 30, 0.99),
    (15, 90, 0.970),
]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def cli(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memory_console.cli", *argv],
        capture_output=True,
        text=True,
        timeout=60,
        env=os.environ.copy(),
    )


@pytest.fixture
def worked(db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    """A store imported from JSONL with the memories of relevance decay's worked figures, on
    each backend."""
    lines = [
        {
            "content": f"retrieved {count} times, {days} days old",
            "memory_type": "episodic",
            "retrieval_count": count,
            "created_at": to_iso(NOW - days * DAY),
            "owner": "alice",
        }
        for count, days, _ in WORKED
    ]
    source = tmp_path / "worked.jsonl"
    source.write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert run(capsys, "import", str(source), "--db", db, "--now", ISO_NOW)[0] == 0
    return db


def afters(document: dict[str, Any]) -> list[float]:
    return [round(c["after"], 4) for c in sorted(document["changes"], key=lambda c: c["id"])]


def test_iso_now_is_the_tests_now() -> None:
    assert parse_iso(ISO_NOW) == NOW


def test_decay_dry_run_json_reproduces_the_worked_figures(
    worked: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(
        capsys, "decay", "--db", str(worked), "--dry-run", "--json", "--now", ISO_NOW
    )
    assert code == 0
    document = json.loads(out)
    assert document["policy"] == "relevance" and document["now"] == ISO_NOW
    assert (
        document["eligible"],
        document["decayed"],
        document["flagged"],
        document["promotion_candidates"],
    ) == (5, 5, 0, 2)
    assert afters(document) == pytest.approx([w for _, _, w in WORKED], abs=5e-4)
    first = min(document["changes"], key=lambda c: c["id"])
    assert first == {
        "id": first["id"],
        "field": "confidence",
        "before": 1.0,
        "after": pytest.approx(0.9025),
        "pass": "decay",
        "kind": "decayed",
        "reason": "2 periods since creation at rate 0.950",
    }
    assert document["dry_run"] is True and "run_id" not in document
    assert document["params"]["relevance"]["floor"] == 0.1
    again = json.loads(
        cli("decay", "--db", str(worked), "--dry-run", "--json", "--now", ISO_NOW).stdout
    )
    assert {**again, "planned_ms": 0} == {**document, "planned_ms": 0}


def test_decay_needs_exactly_one_of_dry_run_and_apply(
    worked: str, capsys: pytest.CaptureFixture[str]
) -> None:
    for extra in ([], ["--dry-run", "--apply"]):
        with pytest.raises(SystemExit) as stop:
            main(["decay", "--db", str(worked), *extra])
        assert stop.value.code == 2
    assert "one of the arguments --dry-run --apply is required" in capsys.readouterr().err
    assert cli("maintain", "--db", str(worked)).returncode == 2


def test_apply_runs_and_undo(worked: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "decay", "--db", str(worked), "--apply", "--json", "--now", ISO_NOW)
    applied = json.loads(out)
    assert code == 0 and applied["dry_run"] is False and applied["decayed"] == 5
    assert afters(applied) == pytest.approx([w for _, _, w in WORKED], abs=5e-4)
    run_id = applied["run_id"]
    again = json.loads(
        run(capsys, "decay", "--db", str(worked), "--apply", "--json", "--now", ISO_NOW)[1]
    )
    assert again["changes"] == [] and again["decayed"] == 0
    runs = json.loads(run(capsys, "runs", "--db", str(worked), "--json")[1])
    assert [(r["id"], r["changed"], r["counts"], r["undone"]) for r in runs] == [
        (again["run_id"], 0, {}, False),
        (run_id, 5, {"decayed": 5}, False),
    ]
    assert runs[1]["duration_ms"] >= 0 and runs[1]["params"]["policy"] == "relevance"
    code, out, _ = run(capsys, "undo", str(run_id), "--db", str(worked))
    assert code == 0 and out.startswith(f"undid run {run_id}: restored 5 memories")
    code, out, _ = run(capsys, "runs", "--db", str(worked))
    assert code == 0 and "decay,cleanup" in out and "decayed 5" in out
    code, _, err = run(capsys, "undo", str(run_id), "--db", str(worked))
    assert code == 1 and err.count("\n") == 1 and "already undone" in err
    assert run(capsys, "undo", "999", "--db", str(worked))[0] == 1


def test_undo_reports_what_it_could_not_restore(
    worked: str, capsys: pytest.CaptureFixture[str]
) -> None:
    run_id = json.loads(
        run(capsys, "decay", "--db", str(worked), "--apply", "--json", "--now", ISO_NOW)[1]
    )["run_id"]
    assert run(capsys, "protect", "2", "--db", str(worked))[0] == 0
    code, out, _ = run(capsys, "undo", str(run_id), "--db", str(worked), "--json")
    report = json.loads(out)
    assert code == 0 and report["restored"] == 4
    assert [n["id"] for n in report["not_restored"]] == [2]
    assert report["not_restored"][0]["reason"].startswith("changed later: protected")


def test_human_output_shows_counts_then_the_largest_drops(
    db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with Store(db, actor="test") as store:
        store.add_many(
            [memory(f"memory number {i}", days_old=45 * i) for i in range(1, 31)], now=NOW
        )
    code, out, _ = run(capsys, "decay", "--db", db, "--dry-run", "--now", ISO_NOW)
    assert code == 0
    lines = out.splitlines()
    assert "dry run, nothing written" in lines[0]
    assert "eligible 30" in lines[1] and "decayed 30" in lines[1] and "flagged 1" in lines[1]
    assert "largest confidence drops (top 20)" in out
    assert out.index("memory number 30") < out.index("memory number 11")
    assert "memory number 10 " not in out
    assert "flagged (first" in out and "decay_policy standard -> pending_deletion" in out


def test_parameters_are_options_with_their_defaults(
    worked: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(
        capsys,
        "decay",
        "--db",
        str(worked),
        "--dry-run",
        "--json",
        "--now",
        ISO_NOW,
        "--base-rate",
        "0.9",
        "--rate-span",
        "0",
    )
    document = json.loads(out)
    assert code == 0 and afters(document)[0] == round(0.81, 4)
    assert document["params"]["relevance"]["base_rate"] == 0.9
    code, out, _ = run(
        capsys,
        "decay",
        "--db",
        str(worked),
        "--dry-run",
        "--json",
        "--now",
        ISO_NOW,
        "--policy",
        "periodic",
        "--period-days",
        "30",
    )
    assert code == 0 and json.loads(out)["params"]["periodic"]["period_days"] == 30.0
    assert afters(json.loads(out))[0] == round(0.95**2, 4)
    code, _, err = run(capsys, "decay", "--db", str(worked), "--dry-run", "--floor", "1.5")
    assert code == 1 and "floor" in err and err.count("\n") == 1
    code, _, err = run(capsys, "decay", "--db", str(worked), "--dry-run", "--decay-lambda", "0.02")
    assert code == 1 and "--decay-lambda is a parameter of exponential" in err
    with pytest.raises(SystemExit):
        main(["decay", "--help"])
    help_text = capsys.readouterr().out
    assert "--floor FLOAT" in help_text and "default 0.1 (relevance)" in help_text
    assert "default 30 (relevance), 7 (periodic)" in help_text


def test_maintain_passes_option(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    with Store(db, actor="test") as store:
        store.add_many(
            [
                memory("password = hunter22", days_old=100),
                memory("expires", days_old=200, importance=0.0),
                memory("decays", days_old=100, importance=1.0),
            ],
            now=NOW,
        )
    code, out, _ = run(capsys, "maintain", "--db", db, "--dry-run", "--json", "--now", ISO_NOW)
    document = json.loads(out)
    expected = ["expire-banks", "expire", "consolidate", "decay", "cleanup", "quota"]
    assert code == 0 and document["passes"] == [p for p in expected if p in registered_passes()]
    assert document["archived"] == 1 and document["decayed"] == 2
    code, out, _ = run(
        capsys,
        "maintain",
        "--db",
        db,
        "--dry-run",
        "--json",
        "--now",
        ISO_NOW,
        "--passes",
        "decay,sensitive",
    )
    document = json.loads(out)
    assert document["passes"] == ["sensitive", "decay"]
    assert [(c["pass"], c["reason"]) for c in document["changes"]][0] == (
        "sensitive",
        "holds a password",
    )
    with pytest.raises(SystemExit) as stop:
        main(["maintain", "--db", db, "--dry-run", "--passes", "decay,nope"])
    assert stop.value.code == 2


def test_a_store_changed_while_planning_is_exit_1(
    worked: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    real_plan = maintenance_package.plan

    def plan_then_agent_writes(*args: Any, **kwargs: Any) -> Any:
        proposal = real_plan(*args, **kwargs)
        with Store(worked, actor="agent") as agent:
            agent.record_access([1], now=NOW)
        return proposal

    monkeypatch.setattr(maintenance_package, "plan", plan_then_agent_writes)
    before = Store(worked)._query("SELECT count(*) FROM memory_event")
    code, out, err = run(capsys, "decay", "--db", str(worked), "--apply", "--now", ISO_NOW)
    assert code == 1 and out == ""
    assert err.startswith(
        "memory-console: error: the store changed while planning; run the command again"
    )
    with Store(worked) as store:
        assert store._query("SELECT count(*) FROM maintenance_run") == [(0,)]
        assert store._query("SELECT count(*) FROM memory_event") == [(before[0][0] + 1,)]


def test_read_only_store_refuses_apply(worked: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "decay", "--db", str(worked), "--read-only", "--apply")
    assert code == 1 and "read-only" in err
    assert run(capsys, "decay", "--db", str(worked), "--read-only", "--dry-run")[0] == 0


def file_digests(path: Path) -> dict[str, str | None]:
    digests: dict[str, str | None] = {}
    for suffix in ("", "-wal", "-shm"):
        part = Path(f"{path}{suffix}")
        digests[suffix] = hashlib.sha256(part.read_bytes()).hexdigest() if part.exists() else None
    return digests


def test_dry_run_writes_nothing(worked: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Not a byte of an SQLite store's files; not a row of a PostgreSQL store."""
    if worked.startswith("postgresql:"):
        state: Any = rows_digest
    else:
        state = lambda db: file_digests(Path(db))  # noqa: E731
    before = state(worked)
    for command in ("decay", "maintain"):
        assert run(capsys, command, "--db", str(worked), "--dry-run", "--now", ISO_NOW)[0] == 0
        assert cli(command, "--db", str(worked), "--dry-run", "--json").returncode == 0
    assert state(worked) == before


def test_decay_imports_neither_sqlmodel_nor_textual(worked: str) -> None:
    probe = (
        "import sys, io, contextlib\n"
        "from memory_console.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    code = main(['decay', '--db', {str(worked)!r}, '--dry-run', '--json'])\n"
        "heavy = [m for m in ('sqlmodel', 'sqlalchemy', 'textual') if m in sys.modules]\n"
        "print(code, heavy)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "0 []", done.stderr


def test_show_still_prints_a_forecast_after_decay(
    worked: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(capsys, "decay", "--db", str(worked), "--apply", "--now", ISO_NOW)[0] == 0
    code, out, _ = run(capsys, "show", "1", "--db", str(worked), "--json", "--now", ISO_NOW)
    forecast = json.loads(out)["forecast"]
    assert code == 0 and forecast["policy"] == "relevance"
    assert forecast["points"][0]["confidence"] == pytest.approx(0.9025, abs=1e-4)
    assert forecast["points"][1]["confidence"] == pytest.approx(0.95**3, abs=1e-4)
    assert forecast["reaches_floor_at"] is not None
