"""forget and purge by filters from the CLI (preview, question, --yes), purge --dry-run and
erase-report, and the erasure request end to end: no byte of the person's text left."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from memory_console.settings import data_dir
from memory_console.store import MemoryFilter, Store
from memory_console.store.postgres import shown_url
from tests.helpers import ISO_NOW, NOW, Outcome, db_rows, digest, invoke, one_error_line

# -- stores ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def demo_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("erase-demo") / "template.db"
    made = invoke(["demo", "--count", "300", "--seed", "5", "--db", str(path), "--now", ISO_NOW])
    assert made.code == 0, made
    return path


@pytest.fixture
def demo(demo_template: Path, tmp_path: Path) -> Path:
    path = tmp_path / "memories.db"
    shutil.copy(demo_template, path)
    return path


@pytest.fixture(scope="module")
def demo_export(demo_template: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo's memories with their history, as export writes them."""
    out = tmp_path_factory.mktemp("erase-demo-export") / "demo.jsonl"
    made = cli(demo_template, "export", "--all", "--history", "--reveal", "--out", str(out))
    assert made.code == 0, made
    return out


@pytest.fixture
def target(backend: str, request: pytest.FixtureRequest) -> str:
    """The demo on the test's backend: a copy of its file, or imported into a new
    PostgreSQL database (the demo command builds SQLite stores only)."""
    if backend == "sqlite":
        return str(request.getfixturevalue("demo"))
    url = str(request.getfixturevalue("pg_url"))
    source = request.getfixturevalue("demo_export")
    made = invoke(["import", str(source), "--db", url, "--allow-secrets", "--allow-health"])
    assert made.code == 0, made
    return url


def state(db: str) -> Any:
    """What a store holds, to show that a command changed nothing: an SQLite file's bytes, a
    PostgreSQL store's rows."""
    if not db.startswith("postgresql://"):
        return digest(Path(db))
    return [
        db_rows(db, f"SELECT * FROM {table} ORDER BY 1")
        for table in ("memory", "memory_event", "embedding", "erasure")
    ]


def purge_folder(db: str) -> Path:
    """Where a purge without --out writes: beside an SQLite store, in the user's data
    directory for a PostgreSQL one."""
    return data_dir() if db.startswith("postgresql://") else Path(db).parent


def cli(db: Path | str, *argv: str) -> Outcome:
    return invoke([*argv, "--db", str(db), "--now", ISO_NOW])


def listed(db: Path | str, *filters: str) -> list[int]:
    """The ids `list` lists with these filters."""
    result = cli(db, "list", *filters, "--limit", "100000", "--json")
    assert result.code == 0, result
    return [row["id"] for row in json.loads(result.out)]


def statuses(db: Path) -> dict[int, str]:
    with Store(db, read_only=True) as store:
        return {r.id: r.status for r in store.iter_memories()}


def terminal_run(db: Path, argv: list[str], answer: str) -> subprocess.CompletedProcess[str]:
    """The real entry point with its stdin a terminal (a pseudo-terminal) that types `answer`."""
    main, side = os.openpty()
    try:
        os.write(main, answer.encode())
        env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
        return subprocess.run(
            [sys.executable, "-m", "memory_console.cli", *argv, "--db", str(db)],
            stdin=side,
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
            check=False,
        )
    finally:
        os.close(main)
        os.close(side)


# -- forget by filters ----------------------------------------------------------------------


def test_forget_by_filters_is_refused_without_yes_on_a_non_terminal(demo: Path) -> None:
    before = statuses(demo)
    result = cli(demo, "forget", "--owner", "alice", "--topic", "projects")
    line = one_error_line(result)
    assert "give --yes to act without asking" in line and "nothing was changed" in line
    assert "selects" in result.out and "#" not in line  # the preview was shown first
    assert statuses(demo) == before


def test_forget_by_filters_with_yes_archives_exactly_what_list_lists(demo: Path) -> None:
    filters = ("--owner", "alice", "--topic", "projects", "--status", "active")
    protected = listed(demo, *filters, "--protected")
    expected = listed(demo, *filters, "--no-protected")
    assert len(expected) > 3 and protected  # --yes leaves the protected ones out
    result = cli(demo, "forget", *filters, "--yes", "--reason", "asked to", "--json")
    assert result.code == 0, result
    data = json.loads(result.out)
    assert data["changed"] == expected and data["selection"] == "owner, topic, status"
    assert data["left_out_protected"] == protected
    after = statuses(demo)
    assert [i for i in expected if after[i] != "archived"] == []
    assert listed(demo, *filters) == protected
    with Store(demo, read_only=True) as store:
        assert store.require(expected[0]).metadata["forget_reason"] == "asked to"


def test_forget_by_text_selects_what_list_selects(demo: Path) -> None:
    expected = listed(demo, "--text", "farm")
    assert expected
    result = cli(demo, "forget", "--text", "farm", "--yes", "--json")
    assert result.code == 0, result
    data = json.loads(result.out)
    assert sorted(data["changed"] + data["unchanged"]) == expected  # archived ones: unchanged


def test_ids_and_filters_together_are_a_one_line_usage_error(demo: Path) -> None:
    before = statuses(demo)
    for command in ("forget", "purge"):
        result = cli(demo, command, "1", "2", "--owner", "alice", "--yes")
        assert result.code == 2, result
        lines = result.err.splitlines()
        assert len(lines) == 1 and "not both" in lines[0] and "--owner" in lines[0], result.err
        neither = cli(demo, command)
        assert neither.code == 2 and len(neither.err.splitlines()) == 1, neither
    assert statuses(demo) == before
    assert not list(demo.parent.glob("*.purged-*"))


def test_nothing_matching_is_said_and_is_no_error(target: str) -> None:
    for command, verb in (("forget", "forgotten"), ("purge", "purged")):
        result = cli(target, command, "--owner", "nobody-at-all")
        assert result.code == 0, result
        assert (
            result.out.strip()
            == f"nothing matches --owner nobody-at-all: no memories held; nothing {verb}"
        )
    assert not list(purge_folder(target).glob("*.purged-*"))


def test_forget_and_purge_by_ids_stay_unprompted(demo: Path) -> None:
    assert cli(demo, "forget", "3", "4").out.strip() == "forgot 2 memories"
    out = demo.parent / "two.jsonl"
    purged = cli(demo, "purge", "5", "6", "--out", str(out), "--json")
    assert purged.code == 0, purged
    assert json.loads(purged.out)["purged"] == [5, 6] and out.exists()


def test_forget_asks_at_a_terminal(demo: Path) -> None:
    argv = ["forget", "--owner", "bob", "--topic", "decisions", "--now", ISO_NOW]
    ids = listed(demo, "--owner", "bob", "--topic", "decisions")
    assert ids
    declined = terminal_run(demo, argv, "n\n")
    assert declined.returncode == 0, declined
    assert f"Forget {len(ids)} memories? [y/N]" in declined.stderr
    assert "nothing forgotten" in declined.stdout
    assert all(
        statuses(demo)[i] == "active" for i in ids if i in listed(demo, "--status", "active")
    )
    accepted = terminal_run(demo, argv, "y\n")
    assert accepted.returncode == 0, accepted
    assert "forgot" in accepted.stdout
    assert listed(demo, "--owner", "bob", "--topic", "decisions", "--status", "active") == []


# -- purge by filters -----------------------------------------------------------------------


def test_purge_by_filters_is_refused_without_yes_and_changes_nothing(target: str) -> None:
    before = state(target)
    result = cli(target, "purge", "--owner", "carol")
    line = one_error_line(result)
    assert "give --yes to act without asking" in line
    assert "Purge" not in result.out and "held about them" in result.out
    assert state(target) == before
    assert not list(purge_folder(target).glob("*.purged-*"))


def test_dry_run_and_erase_report_touch_nothing(target: str) -> None:
    demo = target
    ids = listed(demo, "--owner", "carol")
    before = state(demo)
    dry = cli(demo, "purge", "--owner", "carol", "--dry-run", "--json")
    assert dry.code == 0, dry
    data = json.loads(dry.out)
    assert data["dry_run"] is True and data["selection"] == "owner"
    assert data["selected"] == ids and data["held"]["memory"] >= len(ids)
    assert data["held"]["memory_event"] > 0
    text = cli(demo, "purge", "--owner", "carol", "--dry-run")
    assert text.code == 0 and "nothing was changed" in text.out and "history events" in text.out
    report = cli(demo, "erase-report", "--owner", "carol", "--json")
    assert report.code == 0, report
    assert json.loads(report.out)["held"] == data["held"]
    assert json.loads(report.out)["erasures"] == []
    assert state(demo) == before
    assert listed(demo, "--owner", "carol") == ids


def test_purge_by_owner_reports_before_and_after_and_records_no_text(target: str) -> None:
    demo = target
    ids = listed(demo, "--owner", "carol")
    # An erasure request takes in the protected memories too: said explicitly.
    result = cli(demo, "purge", "--owner", "carol", "--yes", "--include-protected", "--json")
    assert result.code == 0, result
    data = json.loads(result.out)
    assert set(ids) <= set(data["purged"])
    assert data["selection"] == "owner"
    assert data["before"]["memory"] == len(data["purged"])
    assert set(data["after"].values()) == {0}
    assert data["restore"].startswith("memory-console import ")
    assert "--allow-secrets --allow-health" in data["restore"]
    out = Path(data["out"])
    assert out.exists() and out.parent == purge_folder(demo)
    assert out.stat().st_mode & 0o777 == 0o600  # the only copy of someone's memories
    restore = shlex.split(data["restore"])
    assert restore[restore.index("--db") + 1] == shown_url(demo)
    if demo.startswith("postgresql://"):  # the tables were rewritten; the WAL keeps the text
        assert data["tables"] is None and "write-ahead log still holds" in data["wal"]
    assert listed(demo, "--owner", "carol") == []
    report = json.loads(cli(demo, "erase-report", "--owner", "carol", "--json").out)
    assert set(report["held"].values()) == {0} and report["selected"] == []
    (erasure,) = report["erasures"]
    assert erasure["memories"] == len(data["purged"]) and erasure["selection"] == "owner"
    assert "carol" not in json.dumps(erasure)
    text = cli(demo, "erase-report")
    # The purge file's column folds a long path onto the lines below: read it whole.
    unfolded = re.sub(r"[\s│]", "", text.out)
    assert text.code == 0 and "erasures recorded" in text.out and out.name in unfolded


def test_purge_text_output_names_file_counts_and_restore(target: str) -> None:
    result = cli(target, "purge", "--owner", "dmitri", "--topic", "contacts", "--yes")
    assert result.code == 0, result
    out = result.out
    assert "selects" in out and "Purge" not in out  # --yes asks nothing
    assert re.search(r"purged \d+ memories; they were written to \S+\.jsonl first", out), out
    assert "before" in out and "after" in out
    assert "to restore: memory-console import" in out


def test_purge_names_migration_backups_and_deletes_them_only_when_told(demo: Path) -> None:
    backup = demo.with_name(f"{demo.name}.schema2.bak")
    shutil.copy(demo, backup)
    dry = json.loads(cli(demo, "purge", "--owner", "bob", "--dry-run", "--json").out)
    assert dry["backups"] == [str(backup)]
    kept = cli(demo, "purge", "--owner", "bob", "--topic", "decisions", "--yes", "--json")
    assert kept.code == 0, kept
    assert json.loads(kept.out)["backups_kept"] == [str(backup)] and backup.exists()
    deleted = cli(demo, "purge", "--owner", "bob", "--yes", "--delete-backups", "--json")
    assert deleted.code == 0, deleted
    assert json.loads(deleted.out)["backups_deleted"] == [str(backup)]
    assert not backup.exists()


def test_every_new_option_has_help_text() -> None:
    from memory_console.cli import build_parser

    parser = build_parser()
    (commands,) = [a for a in parser._actions if a.dest == "command"]
    for name in ("forget", "purge", "erase-report", "list"):
        sub = commands.choices[name]
        assert (sub.epilog or "").startswith("examples:"), name  # the help ends with examples
        for action in sub._actions:
            if action.option_strings and action.dest not in ("help",):
                assert action.help, f"{name} {action.option_strings[0]} has no help"


# -- the erasure request end to end ---------------------------------------------------------

PERSON = "quentin"
TOKENS = ["zanzibarstraat", "qx7781234", "marmaladefox", "thunderquill", "gloxiniabloom"]


def person_memories() -> list[dict[str, Any]]:
    return [
        {
            "owner": PERSON,
            "topic": "user_info",
            "title": f"Passport QX7781234 note {n}",
            "content": f"The user passport is QX7781234 kept at Zanzibarstraat {n}; "
            f"their cat Marmaladefox likes the Thunderquill pen and Gloxiniabloom tea.",
            "keywords": ["zanzibarstraat", "marmaladefox"],
            "created_at": "2026-06-01T10:00:00Z",
        }
        for n in range(40)
    ]


def exported(db: Path) -> dict[int, dict[str, Any]]:
    """Every memory with its history, as `export --all --history --reveal` writes them."""
    result = cli(db, "export", "--all", "--history", "--reveal")
    assert result.code == 0, result
    return {r["id"]: r for r in map(json.loads, result.out.splitlines())}


def found_by_search(db: Path, owners: list[str]) -> dict[tuple[str, str], list[int]]:
    """What keyword search finds for a few words, within each owner's memories."""
    from memory_console.store import MemoryFilter

    with Store(db, read_only=True) as store:
        return {
            (owner, word): sorted(
                i
                for i, _ in store.keyword_ranking(
                    word, MemoryFilter(owner=owner, status="active"), limit=10_000
                )
            )
            for owner in owners
            for word in ("tea", "farm", "deploy", "meeting", "prefers")
        }


def test_purge_by_owner_leaves_no_byte_of_the_person(tmp_path: Path) -> None:
    """The issue's "Done when" on a 20,000-memory demo store (it builds in about a second)."""
    from tests.helpers import scan_store_files

    db = tmp_path / "memories.db"
    assert cli(db, "demo", "--count", "20000", "--seed", "3").code == 0
    people = tmp_path / "person.jsonl"
    people.write_text("".join(json.dumps(m) + "\n" for m in person_memories()))
    assert cli(db, "import", str(people), "--allow-secrets").code == 0
    ids = listed(db, "--owner", PERSON)
    assert len(ids) == 40
    query = "where is the Zanzibarstraat passport"
    with Store(db, actor="agent") as store:
        for token in TOKENS:  # distinctive: no other memory holds them
            assert {i for i, _ in store.keyword_ranking(token, limit=1000)} <= set(ids), token
        # Recalled (access records logging the query), and the same query logged on
        # another owner's memories too, where the erasure must redact it.
        store.record_access(ids[:5], now=NOW, query=query)
        others = [r.id for r in store.page(MemoryFilter(owner="alice"), limit=3).rows]
        store.record_access(others, now=NOW, query=query)
        store.record_access(others, now=NOW + 1, query="alice's tea preferences")
        owners = sorted({o for (o, _) in store.counts_by("owner")} - {PERSON})
    assert cli(db, "show", str(ids[0]), "--accesses").code == 0
    assert cli(db, "search", "Marmaladefox", "--mode", "keyword").code == 0
    before = exported(db)
    searched = found_by_search(db, owners)
    assert scan_store_files(db, TOKENS)  # the scan sees them before

    done = subprocess.run(
        [sys.executable, "-m", "memory_console.cli", "purge", "--owner", PERSON, "--yes"]
        + ["--json", "--db", str(db), "--now", ISO_NOW],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])},
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert sorted(data["purged"]) == ids and data["selection"] == "owner"
    assert scan_store_files(db, TOKENS) == {}

    after = exported(db)
    assert sorted(after) == sorted(set(before) - set(ids))
    changed = [i for i in after if after[i] != before[i]]
    assert changed == others  # only the memories that logged the person's query
    for ident in others:
        queries = [e.get("query") for e in after[ident]["history"]]
        assert query not in queries and "alice's tea preferences" in queries
        assert len(after[ident]["history"]) == len(before[ident]["history"])
    assert found_by_search(db, owners) == searched

    restore = data["restore"].split()
    assert restore[:2] == ["memory-console", "import"] and "--allow-secrets" in restore
    again = invoke([*restore[1:], "--now", ISO_NOW])
    assert again.code == 0, again
    back = exported(db)
    assert [back[i] for i in ids] == [before[i] for i in ids]


def test_purge_asks_at_a_terminal_then_offers_the_backups(demo: Path) -> None:
    backup = demo.with_name(f"{demo.name}.schema2.bak")
    shutil.copy(demo, backup)
    argv = ["purge", "--owner", "bob", "--topic", "decisions", "--now", ISO_NOW]
    ids = listed(demo, "--owner", "bob", "--topic", "decisions")
    declined = terminal_run(demo, argv, "n\n")
    assert declined.returncode == 0, declined
    assert f"Purge {len(ids)} memories for good? [y/N]" in declined.stderr
    assert "nothing purged" in declined.stdout
    assert listed(demo, "--owner", "bob", "--topic", "decisions") == ids
    accepted = terminal_run(demo, argv, "y\ny\n")
    assert accepted.returncode == 0, accepted
    assert "Delete 1 migration backup? [y/N]" in accepted.stderr
    assert f"deleted migration backup {backup}" in accepted.stdout
    assert "to restore: memory-console import" in accepted.stdout
    assert listed(demo, "--owner", "bob", "--topic", "decisions") == [] and not backup.exists()
