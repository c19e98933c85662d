"""The consolidate pass: groups of near-duplicates become one memory; apply and undo."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from memory_console.embed.search import SearchEngine
from memory_console.maintenance import apply, build_params, plan, undo
from memory_console.store import MemoryFilter, Store
from memory_console.timeutil import to_iso
from tests.helpers import NOW

DAY = 86400.0


def add_keyword_family(store: Store) -> list[int]:
    base = {"owner": "alice", "topic": "preferences", "memory_type": "semantic"}
    return store.add_many(
        [
            {
                **base,
                "content": "Prefers dark mode in the editor.",
                "keywords": ["dark", "editor", "theme"],
                "importance": 0.4,
                "confidence": 0.7,
                "retrieval_count": 2,
                "created_at": NOW - 90 * DAY,
                "last_accessed_at": NOW - 10 * DAY,
            },
            {
                **base,
                "content": "Likes a dark editor theme. Uses Solarized.",
                "keywords": ["dark", "editor", "theme", "solarized"],
                "importance": 0.9,
                "confidence": 0.6,
                "retrieval_count": 3,
                "created_at": NOW - 50 * DAY,
                "last_accessed_at": NOW - 5 * DAY,
            },
            {
                **base,
                "content": "Uses a dark theme in the editor. Prefers dark mode in the editor.",
                "keywords": ["dark", "theme", "editor"],
                "importance": 0.5,
                "confidence": 0.8,
                "retrieval_count": 1,
                "created_at": NOW - 20 * DAY,
            },
            {
                **base,
                "content": "Dark editor theme, always.",
                "keywords": ["dark", "editor", "theme"],
                "is_protected": True,
                "created_at": NOW - 20 * DAY,
            },
            {
                **base,
                "owner": "bob",
                "content": "Dark editor theme.",
                "keywords": ["dark", "editor", "theme"],
                "created_at": NOW - 20 * DAY,
            },
            {
                **base,
                "content": "Lives in Lisbon.",
                "keywords": ["lisbon", "city"],
                "created_at": NOW - 20 * DAY,
            },
        ],
        now=NOW,
    )


def test_keyword_mode_merges_a_family_into_one_memory_and_undo_splits_it(store: Store) -> None:
    ids = add_keyword_family(store)
    proposed = plan(store, ["consolidate"], now=NOW)
    assert proposed.figures["consolidate"]["keyword_mode"] == 1
    (merged,) = proposed.new_memories
    fields = merged.fields
    assert fields["content"] == (
        "Prefers dark mode in the editor. Likes a dark editor theme. Uses Solarized. "
        "Uses a dark theme in the editor."
    )
    assert fields["keywords"] == ["dark", "editor", "theme", "solarized"]
    assert (fields["importance"], fields["confidence"], fields["retrieval_count"]) == (0.9, 0.8, 6)
    assert fields["created_at"] == NOW - 90 * DAY and fields["last_accessed_at"] == NOW - 5 * DAY
    assert fields["metadata"] == {"consolidated_from": ids[:3]}
    run = apply(store, proposed)
    new_id = max(r[0] for r in store._query("SELECT id FROM memory"))
    for ident in ids[:3]:
        member = store.require(ident)
        assert (member.status, member.consolidated_into) == ("consolidated", new_id)
        assert store.history(ident)[-1].run_id == run.id
    assert store.require(ids[3]).status == "active"  # protected: never merged
    assert store.require(ids[4]).status == "active"  # another owner
    assert store.require(new_id).source == "consolidation"
    report = undo(store, run.id)
    assert sorted(report.restored) == ids[:3] and report.deleted == [new_id]
    for ident in ids[:3]:
        member = store.require(ident)
        assert (member.status, member.consolidated_into) == ("active", None)
    assert store.get(new_id) is None


def test_embedding_mode_groups_paraphrases_only(store: Store) -> None:
    base = {"owner": "alice", "topic": "decisions", "memory_type": "episodic"}
    ids = store.add_many(
        [
            {**base, "content": "Weekly sync with Bob every Tuesday at 10:00."},
            {**base, "content": "Weekly sync with Bob every Tuesday at 10:00!"},
            {**base, "content": "Decided to use PostgreSQL for the billing service."},
            {**base, "topic": "general", "content": "Weekly sync with Bob every Tuesday at 10:00."},
        ],
        now=NOW,
    )
    engine = SearchEngine(store)
    engine.prepare_semantic()
    proposed = plan(store, ["consolidate"], now=NOW)
    assert proposed.figures["consolidate"]["keyword_mode"] == 0
    assert [m.fields["metadata"]["consolidated_from"] for m in proposed.new_memories] == [ids[:2]]
    apply(store, proposed)
    hits = [h.record.id for h in engine.search("sync with Bob", mode="semantic", k=5)]
    assert ids[0] not in hits and ids[1] not in hits  # consolidated members leave the index
    assert max(r[0] for r in store._query("SELECT id FROM memory")) in hits  # the merged one joins


def write_script(tmp_path: Path, body: str) -> str:
    script = tmp_path / "merge.py"
    script.write_text(body)
    return f"{sys.executable} {script}"


@pytest.mark.parametrize(
    ("body", "used", "note"),
    [
        (
            "import json, sys\ngroup = json.load(sys.stdin)\n"
            "print(json.dumps({'title': 'Dark editor', 'content': 'Prefers a dark editor theme.',"
            " 'keywords': ['dark', 'editor']}))\n",
            True,
            None,
        ),
        ("import sys\nsys.exit(3)\n", False, "merge command exited with 3"),
        ("print('not json')\n", False, "invalid JSON"),
        ("print('{\"title\": 1}')\n", False, "without title, content and keywords"),
    ],
)
def test_external_merge_command_or_extractive_fallback(
    store: Store,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    body: str,
    used: bool,
    note: str | None,
) -> None:
    from memory_console.maintenance.merge_command import merge_with_command

    add_keyword_family(store)
    command = write_script(tmp_path, body)
    merges = merge_with_command(store, plan(store, ["consolidate"], now=NOW), command)
    proposed = merges.plan
    (merged,) = proposed.new_memories
    if used:
        assert merged.fields["content"] == "Prefers a dark editor theme."
        assert merged.fields["importance"] == 0.9  # the command words it; numbers stay ours
        assert not merges.failures
    else:
        assert merged.fields["content"].startswith("Prefers dark mode in the editor. Likes")
        text = merged.reason_text
        assert note in text and "merged extractively" in text
        assert proposed.figures["consolidate"]["merge_command_failures"] == 1
        assert note in merges.summary


def test_planning_never_runs_the_merge_command(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A plan only reads the store: the configured command runs when the plan is applied."""
    add_keyword_family(store)
    ran = tmp_path / "ran"
    body = f"import pathlib, sys\npathlib.Path({str(ran)!r}).write_text('yes')\nsys.exit(3)\n"
    monkeypatch.setenv("MEMORY_CONSOLE_MERGE_COMMAND", write_script(tmp_path, body))
    proposed = plan(store, ["consolidate"], now=NOW)
    assert len(proposed.new_memories) == 1 and not ran.exists()


def test_a_failing_merge_command_is_shown_and_the_extractive_merge_applied(
    store: Store,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    db_path: Path,
) -> None:
    from memory_console.cli import main

    add_keyword_family(store)
    store.close()
    monkeypatch.setenv(
        "MEMORY_CONSOLE_MERGE_COMMAND", write_script(tmp_path, "import sys\nsys.exit(3)\n")
    )
    args = ["maintain", "--passes", "consolidate", "--db", str(db_path), "--now", to_iso(NOW)]
    assert main([*args, "--apply"]) == 0
    captured = capsys.readouterr()
    assert "merge command exited with 3" in captured.err
    with Store(db_path) as reopened:
        members = reopened.ids_matching(MemoryFilter(status="consolidated")).tolist()
        (into,) = {reopened.require(i).consolidated_into for i in members}
        merged = reopened.require(into or 0)
        assert merged.content.startswith("Prefers dark mode in the editor. Likes")
        (created,) = [e for e in reopened.history(merged.id) if e.kind == "created"]
        assert "merge command exited with 3, merged extractively" in (created.query or "")


def test_parameters_are_options_and_recorded(
    store: Store, capsys: pytest.CaptureFixture[str], db_path: Path
) -> None:
    from memory_console.cli import main

    add_keyword_family(store)
    params = build_params(["consolidate"], overrides={"min_keyword_group": 4})
    assert plan(store, ["consolidate"], params, now=NOW).new_memories == []
    store.close()
    code = main(
        [
            "maintain",
            "--passes",
            "consolidate",
            "--apply",
            "--min-jaccard",
            "0.5",
            "--db",
            str(db_path),
            "--json",
        ]
    )
    result = json.loads(capsys.readouterr().out)
    assert code == 0 and result["consolidated"] == 3
    with Store(db_path) as reopened:
        (row,) = reopened._query("SELECT params FROM maintenance_run")
        assert json.loads(row[0])["consolidate"]["min_cosine"] == 0.92


def test_large_groups_are_merged_in_parts(store: Store) -> None:
    copies = [
        {
            "owner": "alice",
            "topic": "general",
            "content": "Likes tea.",
            "keywords": ["tea", "drink"],
        }
        for _ in range(7)
    ]
    store.add_many(copies, now=NOW)
    params = build_params(["consolidate"], overrides={"max_group": 3})
    proposed = plan(store, ["consolidate"], params, now=NOW)
    sizes = [len(m.fields["metadata"]["consolidated_from"]) for m in proposed.new_memories]
    assert sizes == [3, 3]  # the seventh copy waits for the next run
