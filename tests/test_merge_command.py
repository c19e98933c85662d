"""The operator's merge command bounded as a whole: a time budget per run, a cap on what is
read, and its answer screened as an agent's write; a bad answer costs its group only."""

from __future__ import annotations

import json
import sys
import time
import tracemalloc
from pathlib import Path

import pytest

from memory_console.maintenance import plan
from memory_console.maintenance.command import OUTPUT_LIMIT, Budget, ask
from memory_console.maintenance.merge_command import merge_with_command
from memory_console.maintenance.supersede_review import ask_command
from memory_console.store import MemoryFilter, Store
from memory_console.timeutil import to_iso
from tests.helpers import (
    DUPLICATE_TEXTS,
    NOW,
    add_duplicate_groups,
    invoke,
    one_error_line,
    scan_store_files,
)

SIZES = (2, 2, 2, 2)  # four merge groups, one per DUPLICATE_TEXTS


def script(tmp_path: Path, body: str, name: str = "merge.py") -> str:
    path = tmp_path / name
    path.write_text(body, encoding="utf-8")
    return f"{sys.executable} {path}"


def answering(tmp_path: Path, answers: dict[str, str], default: str) -> str:
    """A merge command answering each group by the first words of its members' text: the
    answer whose key they start with, else `default` (each a Python expression printed as
    the command's output)."""
    cases = "".join(
        f"    if text.startswith({key!r}):\n        out = {value}\n"
        for key, value in answers.items()
    )
    body = (
        "import json, sys\n"
        "group = json.load(sys.stdin)\n"
        "text = group['members'][0]['content']\n"
        f"out = {default}\n"
        "if True:\n"
        f"{cases or '    pass'}\n"
        "if isinstance(out, bytes):\n"
        "    sys.stdout.buffer.write(out)\n"
        "else:\n"
        "    sys.stdout.write(out if isinstance(out, str) else json.dumps(out))\n"
    )
    return script(tmp_path, body)


GOOD = "{'title': 'Worded', 'content': 'Worded by the command: ' + text, 'keywords': ['worded']}"


def apply_with(db: Path) -> tuple[int, str, float]:
    """`maintain --passes consolidate --apply`, the merge command and its settings given as
    the operator's variables (MEMORY_CONSOLE_MERGE_*): (exit code, stderr, seconds taken)."""
    started = time.monotonic()
    result = invoke(
        ["maintain", "--passes", "consolidate", "--db", str(db), "--now", to_iso(NOW), "--apply"]
    )
    return result.code, result.err, time.monotonic() - started


def merged_texts(db: Path) -> dict[str, str]:
    """The merged memories' content by the text of their members."""
    with Store(db) as store:
        found = {}
        for ident in store.ids_matching(MemoryFilter(status="active")).tolist():
            record = store.require(ident)
            if (record.metadata or {}).get("consolidated_from"):
                member = store.require(record.metadata["consolidated_from"][0])
                found[member.content] = record.content
        return found


@pytest.fixture
def groups_db(tmp_path: Path) -> Path:
    db = tmp_path / "memories.db"
    with Store(db) as store:
        add_duplicate_groups(store, SIZES)
    return db


def test_a_hanging_command_costs_the_run_its_budget_and_no_more(
    groups_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A command that never answers (and leaves a child holding its output): each call waits
    its own timeout, the run stops asking once its budget is spent, the processes are ended,
    and every group is merged extractively, the run saying how many and why."""
    pids = tmp_path / "pids"
    hang = script(
        tmp_path,
        "import os, subprocess, sys, time\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        f"with open({str(pids)!r}, 'a') as out:\n"
        "    out.write(f'{os.getpid()} {child.pid}\\n')\n"
        "time.sleep(60)\n",
    )
    monkeypatch.setenv("MEMORY_CONSOLE_MERGE_COMMAND", hang)
    monkeypatch.setenv("MEMORY_CONSOLE_MERGE_TIMEOUT", "0.6")
    monkeypatch.setenv("MEMORY_CONSOLE_MERGE_BUDGET", "1")
    code, err, seconds = apply_with(groups_db)
    assert code == 0, err
    assert seconds < 8, seconds  # 4 groups at 0.6 s each would take 2.4 s; the budget is 1 s
    assert "4 of 4 merges kept their extractive words" in err, err
    assert "gave no answer in 0.6 s" in err and "not asked" in err, err
    assert set(merged_texts(groups_db).values()) == set(DUPLICATE_TEXTS[:4])
    started = pids.read_text().split()
    assert 1 <= len(started) // 2 <= 2, started  # the budget let at most two calls start
    time.sleep(0.2)
    assert [pid for pid in started if running(int(pid))] == []


def running(pid: int) -> bool:
    status = Path(f"/proc/{pid}/status")
    try:
        return "\nState:\tZ" not in status.read_text()
    except OSError:
        return False


def test_a_command_that_never_answers_is_given_up_after_three_timeouts(
    groups_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hang = script(tmp_path, "import time\ntime.sleep(60)\n")
    monkeypatch.setenv("MEMORY_CONSOLE_MERGE_COMMAND", hang)
    monkeypatch.setenv("MEMORY_CONSOLE_MERGE_TIMEOUT", "0.3")
    code, err, seconds = apply_with(groups_db)
    assert code == 0 and seconds < 8, (err, seconds)
    assert "3: merge command gave no answer in 0.3 s" in err, err
    assert "1: merge command not asked (it gave no answer 3 times in a row)" in err, err
    with Store(groups_db) as store:
        add_duplicate_groups(store, SIZES)
    result = invoke(
        ["maintain", "--passes", "consolidate", "--db", str(groups_db), "--now", to_iso(NOW)]
        + ["--apply", "--json"]
    )
    figures = json.loads(result.out)["figures"]["consolidate"]
    assert figures["merge_command_failures"] == 4
    assert figures["merge_command_timed_out"] == 3 and figures["merge_command_not_asked"] == 1


def test_fifteen_megabytes_of_output_are_not_read(
    groups_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spew = script(tmp_path, "import sys\nsys.stdout.write('x' * 15_000_000)\n")
    answer, failure = None, None
    tracemalloc.start()
    try:
        answer, failure = ask(spew, {"members": []}, Budget(seconds=30))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert answer is None and failure is not None and failure.code == "too_long"
    assert peak < 4 * OUTPUT_LIMIT, peak
    monkeypatch.setenv("MEMORY_CONSOLE_MERGE_COMMAND", spew)
    code, err, _ = apply_with(groups_db)
    assert code == 0 and "answered more than 65,536 bytes" in err, err
    assert set(merged_texts(groups_db).values()) == set(DUPLICATE_TEXTS[:4])


BAD_ANSWERS = {
    # first words of a group's text -> (answer, what the run says about it)
    "Prefers green": (
        "{'title': 'Tea', 'content': 'The password is hunter2', 'keywords': ['tea']}",
        "holds a password",
    ),
    "Keeps the release": (
        "{'title': 'Wiki', 'content': 'key AKIAIOSFODNN7EXAMPLE for the wiki', 'keywords': []}",
        "holds an api key",
    ),
    "Likes the aisle": (
        "{'title': 'Seat \\x1b[2J\\x1b]0;owned\\x07', 'content': 'Aisle seat.', 'keywords': []}",
        "control character",
    ),
    "Writes commit": (
        "{'title': 'Commits', 'content': 'x' * 1_500_000, 'keywords': ['git']}",
        "answered more than 65,536 bytes",
    ),
}


def test_each_bad_answer_costs_its_own_group_only(
    groups_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Secrets, escape sequences and a 1.5 M-character answer are refused, each for its group:
    the apply goes on, those groups are merged extractively and nothing refused is stored."""
    for refused, (answer, said) in BAD_ANSWERS.items():
        command = answering(tmp_path, {refused: answer}, GOOD)
        monkeypatch.setenv("MEMORY_CONSOLE_MERGE_COMMAND", command)
        db = tmp_path / f"{refused.split()[0]}.db"
        with Store(db) as store:
            add_duplicate_groups(store, SIZES)
        code, err, _ = apply_with(db)
        assert code == 0, err
        assert "1 of 4 merges kept their extractive words" in err and said in err, err
        merged = merged_texts(db)
        (text,) = [text for text in DUPLICATE_TEXTS if text.startswith(refused)]
        assert merged[text] == text  # the extractive merge
        assert all(merged[other].startswith("Worded by") for other in merged if other != text)
        secrets = ["hunter2", "AKIAIOSFODNN7EXAMPLE", "\x1b[2J", "x" * 1000]
        assert scan_store_files(db, secrets) == {}, refused


@pytest.mark.parametrize(
    ("answer", "said"),
    [
        ("{'title': 'T' * 600, 'content': 'Fine.', 'keywords': []}", "title is 600 characters"),
        ("{'title': 'T', 'content': 'Fine.', 'keywords': ['k'] * 1001}", "keywords: 1,001"),
        ("{'title': 'T', 'content': 'Fine.', 'keywords': ['k' * 501]}", "keyword is 501"),
        ("{'title': 'T', 'content': 'a \\x00 here', 'keywords': []}", "character (\\x00)"),
        ("'[' * 30000 + ']' * 30000", "invalid JSON"),
        ("b'\\xff\\xfe not utf-8'", "invalid JSON"),
        ("{'title': 'T', 'content': 7, 'keywords': []}", "without title, content and keywords"),
    ],
)
def test_an_answer_that_is_not_a_memory_falls_back(tmp_path: Path, answer: str, said: str) -> None:
    """What validation refuses in an agent's write is refused in the command's answer."""
    with Store(tmp_path / "memories.db") as store:
        add_duplicate_groups(store, SIZES)
        command = answering(tmp_path, {"Prefers green": answer}, GOOD)
        merges = merge_with_command(store, plan(store, ["consolidate"], now=NOW), command)
    assert len(merges.failures) == 1 and said in merges.summary, merges.summary
    worded = [m.fields["content"] for m in merges.plan.new_memories]
    assert sum(text.startswith("Worded by") for text in worded) == 3


def test_a_review_shares_one_budget_across_its_questions(tmp_path: Path) -> None:
    """The supersession questions of one review or apply draw on one budget: once it is
    spent the command is not asked again, and a decision's reason holding a secret is
    refused."""
    with Store(tmp_path / "memories.db") as store:
        old, new = store.add_many(
            [
                {"owner": "a", "content": "Lives in Lyon.", "created_at": NOW - 9e5},
                {"owner": "a", "content": "Lives in Porto.", "created_at": NOW - 1e5},
            ]
        )
        first, second = store.require(old), store.require(new)
    slow = script(tmp_path, "import time\ntime.sleep(60)\n", "slow.py")
    budget = Budget(seconds=0.5, call_timeout=5)
    started = time.monotonic()
    answers = [ask_command(slow, first, second, None, budget) for _ in range(3)]
    assert time.monotonic() - started < 4
    assert answers[0]["merge_command_failure"] == "timed_out"
    assert [a["merge_command_failure"] for a in answers[1:]] == ["not_asked", "not_asked"]
    leaky = script(
        tmp_path,
        "import json\nprint(json.dumps({'decision': 'keep', 'reason': 'password is hunter2'}))\n",
        "leaky.py",
    )
    values = ask_command(leaky, first, second, None, Budget())
    assert values["merge_command_failure"] == "refused" and "hunter2" not in json.dumps(values)


@pytest.mark.parametrize("value", ["0", "-1", "nan", "soon", "86401"])
def test_a_budget_that_is_no_number_of_seconds_is_refused(
    groups_db: Path, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv("MEMORY_CONSOLE_MERGE_BUDGET", value)
    line = one_error_line(invoke(["stats", "--db", str(groups_db)]))
    assert f"MEMORY_CONSOLE_MERGE_BUDGET='{value}': expected seconds" in line, line
