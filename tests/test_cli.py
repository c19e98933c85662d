"""The CLI through its real entry point: every command, exit codes, JSON and one-line errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from memory_console.cli import build_parser, main
from memory_console.store import Store
from tests.helpers import ISO_NOW, server_rows

LINES = [
    {
        "content": "Prefers dark mode in the editor (Solarized Dark).",
        "topic": "preferences",
        "owner": "alice",
        "created_at": "2026-01-01T00:00:00Z",
        "keywords": ["editor", "dark"],
    },
    {
        "content": "Weekly sync with Bob every Tuesday at 10:00.",
        "topic": "decisions",
        "memory_type": "episodic",
        "owner": "alice",
        "retrieval_count": 2,
        "confidence": 0.8,
        "created_at": "2026-06-01T00:00:00Z",
        "last_accessed_at": "2026-09-01T00:00:00Z",
    },
    {
        "content": "Router password = hunter22 for the guest network",
        "memory_type": "procedural",
        "owner": "bob",
        "created_at": "2026-03-01T00:00:00Z",
        "session": "s-1",
    },
]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def jsonl(tmp_path: Path) -> Path:
    path = tmp_path / "in.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in LINES))
    return path


@pytest.fixture
def filled(backend: str, db: str, jsonl: Path, capsys: pytest.CaptureFixture[str]) -> str:
    """The three lines imported into a new store, on each backend in turn (`db`)."""
    argv = ("import", str(jsonl), "--db", db, "--now", ISO_NOW, "--allow-secrets")
    assert run(capsys, *argv)[0] == 0
    if backend == "postgresql":  # in the server's tables, not in a file named like the URL
        assert server_rows(db, "SELECT count(*) FROM memory") == [(3,)]
    return db


def test_every_command_has_help_text() -> None:
    parser = build_parser()
    actions = [a for a in parser._actions if a.dest == "command"]
    (subparsers,) = actions
    assert subparsers.choices
    for name, sub in subparsers.choices.items():
        assert sub.description, f"{name} has no description"
        helps = {c.dest: c.help for c in subparsers._choices_actions}
        assert helps.get(name), f"{name} has no help line"


def test_import_then_list_show_json(filled: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "list", "--db", str(filled), "--json", "--sort", "confidence")
    rows = json.loads(out)
    assert code == 0 and [r["id"] for r in rows] == [2, 1, 3]
    assert rows[0]["confidence_label"] == "high confidence"
    assert rows[2]["content"] == "Router password = •••••• for the guest network"
    assert rows[2]["metadata"] == {"session": "s-1"}  # unknown fields go into metadata
    code, out, _ = run(capsys, "show", "2", "--db", str(filled), "--json", "--now", ISO_NOW)
    shown = json.loads(out)
    assert shown["history"][0]["kind"] == "created"
    # rate 0.958 (2 retrievals), 2 periods since 2026-09-01: 0.8 * 0.958^2
    assert shown["forecast"]["points"][0]["confidence"] == pytest.approx(0.8 * 0.958**2, abs=1e-4)
    code, out, _ = run(capsys, "show", "3", "--db", str(filled), "--json", "--reveal")
    assert "hunter22" in json.loads(out)["content"]


def test_human_output(filled: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "list", "--db", str(filled))
    assert code == 0 and "Weekly sync with Bob" in out and "high confidence" in out
    assert "hunter22" not in out
    code, out, _ = run(capsys, "show", "2", "--db", str(filled), "--now", ISO_NOW)
    assert "reaches the floor on" in out and "created" in out
    code, out, _ = run(capsys, "stats", "--db", str(filled), "--now", ISO_NOW)
    assert "confidence tiers" in out and "by topic" in out


def test_actions_and_exit_codes(filled: str, capsys: pytest.CaptureFixture[str]) -> None:
    db = str(filled)
    assert run(capsys, "protect", "1", "2", "--db", db)[0] == 0
    code, out, _ = run(capsys, "protect", "1", "--db", db, "--json")
    assert json.loads(out) == {"action": "protect", "changed": [], "unchanged": [1], "missing": []}
    code, out, err = run(capsys, "archive", "77", "--db", db)
    assert code == 1 and "no such memories: 77" in err
    assert run(capsys, "forget", "3", "--reason", "holds a password", "--db", db)[0] == 0
    assert run(capsys, "restore", "3", "--db", db)[0] == 0
    assert run(capsys, "unprotect", "2", "--db", db)[0] == 0
    with Store(filled) as store:
        kinds = [e.kind for e in store.history(3)]
        assert kinds == ["created", "archived", "restored"]
        # The reason is the forget's: kept in its event, ended by the restore.
        forgot = store.history(3)[1]
        assert forgot.after["metadata"]["forget_reason"] == "holds a password"
        assert "forget_reason" not in store.require(3).metadata
        assert store.require(1).is_protected and not store.require(2).is_protected
    code, _, err = run(capsys, "protect", "x1", "--db", db)
    assert code == 1 and err.startswith("memory-console: error: not a memory id")


def test_usage_error_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["list", "--sort", "nonsense"])
    assert exit_info.value.code == 2


def test_missing_store_is_a_one_line_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "list", "--db", str(tmp_path / "none.db"))
    assert code == 1 and err.count("\n") == 1 and "no such store" in err
    assert not (tmp_path / "none.db").exists()


def test_foreign_file_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "notes.db"
    path.write_text("just some notes\n")
    code, _, err = run(capsys, "stats", "--db", str(path))
    assert code == 1 and "not an SQLite database" in err and err.count("\n") == 1
    assert path.read_text() == "just some notes\n"


def test_import_bad_line_names_file_and_line_and_imports_nothing(
    tmp_path: Path, jsonl: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "s.db"
    bad = tmp_path / "bad.jsonl"
    lines = jsonl.read_text().splitlines()
    lines.insert(2, '{"content": "ok", "confidence": 2}')
    bad.write_text("\n".join(lines) + "\n")
    code, _, err = run(capsys, "import", str(bad), "--db", str(db))
    assert code == 1
    assert (
        err.strip() == f"memory-console: error: {bad}:3: confidence must be between 0 and 1, not 2"
    )
    assert not db.exists(), "a failed import leaves no store behind"
    for text, reason in (
        (b'{"content": "x"}\n{"content": \n', ":2: invalid JSON"),
        (b'{"content": "x"}\n\xff\xfe\n', ":2: invalid UTF-8"),
        (b"[1, 2]\n", ":1: a line must be a JSON object"),
        (b'{"id": 4, "content": "a"}\n{"id": 4, "content": "b"}\n', ":2: duplicate id 4"),
        (b'{"content": "x", "created_at": "9999-99-99"}\n', ":1: created_at"),
    ):
        bad.write_bytes(text)
        code, _, err = run(capsys, "import", str(bad), "--db", str(db))
        assert code == 1 and reason in err and err.count("\n") == 1, err
        assert sorted(tmp_path.iterdir()) == [bad, jsonl]


def test_export_import_round_trip(
    filled: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(filled)
    run(capsys, "protect", "1", "--db", db)
    run(capsys, "archive", "2", "--db", db)
    out = tmp_path / "export.jsonl"
    argv = ("export", "--all", "--history", "--reveal", "--out", str(out), "--db", db)
    assert run(capsys, *argv)[0] == 0
    copy = tmp_path / "copy.db"
    assert run(capsys, "import", str(out), "--db", str(copy), "--allow-secrets")[0] == 0
    with Store(filled) as a, Store(copy) as b:
        for ident in (1, 2, 3):
            left, right = a.require(ident).as_dict(), b.require(ident).as_dict()
            left.pop("revision"), right.pop("revision")
            for name in ("created_at", "updated_at", "last_accessed_at"):
                if left[name] is not None:
                    assert right.pop(name) == pytest.approx(left.pop(name), abs=1e-5)
            assert left == right
            assert [e.kind for e in a.history(ident)] == [e.kind for e in b.history(ident)]
    code, _, err = run(capsys, "import", str(out), "--db", str(copy), "--allow-secrets")
    assert code == 1 and "already exists" in err and "--new-ids" in err
    argv = ("import", str(out), "--db", str(copy), "--new-ids", "--allow-secrets")
    assert run(capsys, *argv)[0] == 0


def test_purge_exports_first(
    filled: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "gone.jsonl"
    code, stdout, _ = run(capsys, "purge", "3", "--out", str(out), "--db", str(filled), "--json")
    assert code == 0 and json.loads(stdout)["purged"] == [3]
    assert json.loads(out.read_text())["content"].startswith("Router password")


def test_stats_json_figures(filled: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "stats", "--db", str(filled), "--json", "--now", ISO_NOW)
    figures = json.loads(out)
    assert figures["total"] == 3
    assert figures["confidence_tiers"]["0.9-1.0"]["count"] == 2
    assert figures["confidence_tiers"]["0.7-0.9"] == {"count": 1, "mean": 0.8}
    assert figures["stale"]["count"] == 3
    assert figures["counts"]["owner"] == {"alice": 2, "bob": 1}
    assert sum(figures["age_days"]["histogram"].values()) == 3


def test_db_from_environment(
    filled: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMORY_CONSOLE_DB", str(filled))
    code, out, _ = run(capsys, "list", "--json")
    assert code == 0 and len(json.loads(out)) == 3


def test_installed_script_runs(filled: str) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "memory_console.cli", "list", "--db", str(filled), "--json"],
        capture_output=True,
        text=True,
        env={**os.environ},
    )
    assert result.returncode == 0 and len(json.loads(result.stdout)) == 3


def test_export_takes_its_file_as_import_does(
    filled: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`export -` writes to standard output and `export FILE` to the file, as `import -` and
    `import FILE` read; --out still works, and naming the file twice is a usage error."""
    code, to_stdout, _ = run(capsys, "export", "-", "--db", filled)
    assert code == 0 and to_stdout
    assert (code, to_stdout) == (0, run(capsys, "export", "--db", filled)[1])
    named = tmp_path / "named.jsonl"
    assert run(capsys, "export", str(named), "--db", filled)[0] == 0
    assert named.read_text(encoding="utf-8") == to_stdout
    code, _, err = run(capsys, "export", str(named), "--out", "x.jsonl", "--db", filled)
    assert code == 2 and "--out" in err
