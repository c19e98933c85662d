"""Several processes on one store: the console (a pilot in a child process), CLI commands and
an agent using MemoryAPI interleave reads and writes in a seeded random order. After every
step each process sees every write, no -wal or -shm file is deleted under a live connection,
and the file passes PRAGMA integrity_check at the end.

MEMORY_CONSOLE_PROCESS_TRIALS sets how many seeds run (default 3)."""

from __future__ import annotations

import json
import os
import queue
import random
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from memory_console.demo import build_demo
from tests.helpers import NOW

ROOT = Path(__file__).resolve().parent.parent
TRIALS = int(os.environ.get("MEMORY_CONSOLE_PROCESS_TRIALS", "3"))
STEPS = 14
ANSWER_WAIT = 120.0  # seconds: only a hung child ever waits this long
# (process, operation) and how often each is drawn.
OPERATIONS = {
    ("console", "health"): 2,
    ("console", "preview"): 2,
    ("console", "protect"): 2,
    ("cli", "stats"): 2,
    ("cli", "protect"): 2,
    ("cli", "list"): 1,
    ("cli", "import"): 2,
    ("agent", "remember"): 2,
    ("agent", "recall"): 1,
    ("agent", "open"): 2,
    ("agent", "close"): 2,
}

View = dict[str, list[int]]


def child_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return env


class Child:
    """A long-lived child process that answers one JSON line per command."""

    def __init__(self, role: str, store: Path, log: Path) -> None:
        self.role = role
        self.log = log
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.procs_children", role, str(store)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log.open("w"),
            text=True,
            cwd=ROOT,
            env=child_env(),
        )
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self.pump, daemon=True).start()
        self.pid = int(self.read()["ready"])

    def pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put("")

    def read(self) -> dict[str, Any]:
        try:
            line = self.lines.get(timeout=ANSWER_WAIT)
        except queue.Empty:
            raise AssertionError(f"the {self.role} hung:\n{self.log.read_text()[-3000:]}") from None
        if not line:
            raise AssertionError(f"the {self.role} ended:\n{self.log.read_text()[-3000:]}")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def ask(self, op: str, **fields: Any) -> dict[str, Any]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"op": op, **fields}) + "\n")
        self.proc.stdin.flush()
        return self.read()

    def finish(self) -> None:
        if self.proc.poll() is None:
            assert self.ask("quit") == {"closed": True}
            assert self.proc.wait(timeout=ANSWER_WAIT) == 0, self.log.read_text()[-3000:]

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def cli(store: Path, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "memory_console.cli", *args, "--db", str(store)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=child_env(),
        timeout=ANSWER_WAIT,
    )
    assert done.returncode == 0, f"{args}: {done.stderr}"
    return done.stdout


def cli_view(store: Path) -> View:
    rows = json.loads(cli(store, "list", "--json", "--limit", "1000000"))
    return {
        "ids": sorted(r["id"] for r in rows),
        "protected": sorted(r["id"] for r in rows if r["is_protected"]),
    }


def deleted_store_files(pid: int, store: Path) -> list[str]:
    """The process's open descriptors of the store's files that were deleted under it."""
    links = []
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            links.append(os.readlink(f"/proc/{pid}/fd/{fd}"))
        except OSError:
            continue  # closed meanwhile
    return [link for link in links if link.startswith(str(store)) and "(deleted)" in link]


def run_trial(seed: int, tmp_path: Path) -> None:
    store = tmp_path / "shared.db"
    build_demo(store, count=40, seed=seed, now=NOW)
    rng = random.Random(seed)
    expected = cli_view(store)
    ids, protected = set(expected["ids"]), set(expected["protected"])
    console = Child("console", store, tmp_path / "console.log")
    agent = Child("agent", store, tmp_path / "agent.log")
    steps = rng.choices(list(OPERATIONS), weights=list(OPERATIONS.values()), k=STEPS)
    done: list[str] = []
    try:
        for number, (who, op) in enumerate(steps):
            target = rng.choice(sorted(ids))
            protect = target not in protected
            if who == "console":
                if op == "protect":
                    console.ask("protect" if protect else "unprotect", id=target)
                else:
                    console.ask(op)
            elif who == "cli":
                if op == "protect":
                    cli(store, "protect" if protect else "unprotect", str(target))
                elif op == "import":
                    line = tmp_path / f"line-{number}.jsonl"
                    memory = {"content": f"Imported note {number} of trial {seed}", "owner": "bob"}
                    line.write_text(json.dumps(memory) + "\n")
                    ids.add(json.loads(cli(store, "import", str(line), "--json"))["first_id"])
                else:
                    cli(store, op, *(("--json", "--limit", "5") if op == "list" else ()))
            elif op == "remember":
                answer = agent.ask(op, text=f"The agent noted fact {number} of trial {seed}")
                assert answer["action"] == "stored", answer
                ids.add(answer["id"])
            elif op == "recall":
                agent.ask(op, query="fact trial")
            else:
                assert agent.ask(op)["open"] == (op == "open")
            if op == "protect":
                (protected.add if protect else protected.discard)(target)
            done.append(f"{who} {op}")
            want = {"ids": sorted(ids), "protected": sorted(protected)}
            after = f"after {', '.join(done)}"
            assert console.ask("view")["view"] == want, f"the console's view {after}"
            assert agent.ask("view")["view"] == want, f"the agent's view {after}"
            assert cli_view(store) == want, f"the CLI's view {after}"
            for child in (console, agent):
                lost = deleted_store_files(child.pid, store)
                assert not lost, f"the {child.role} holds deleted {lost} {after}"
        console.finish()
        agent.finish()
    finally:
        console.kill()
        agent.kill()
    assert cli_view(store) == {"ids": sorted(ids), "protected": sorted(protected)}
    with sqlite3.connect(store) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    conn.close()


@pytest.mark.parametrize("seed", range(TRIALS))
def test_processes_see_each_others_writes(seed: int, tmp_path: Path) -> None:
    run_trial(seed, tmp_path)


def test_a_held_store_is_known_by_identity(tmp_path: Path) -> None:
    from memory_console.store import Store, held

    path = tmp_path / "held.db"
    other = tmp_path / "other.txt"
    other.write_text("not a store\n")
    with Store(path) as store:
        store.add({"content": "a memory that makes a -wal file", "owner": "bob"})
        (tmp_path / "link.db").symlink_to(path)
        os.link(path, tmp_path / "hard.db")
        os.link(f"{path}-wal", tmp_path / "hard-wal")
        for name in ("held.db", "link.db", "hard.db", "held.db-wal", "link.db-shm", "hard-wal"):
            assert held.holds(tmp_path / name), name
        assert not held.holds(other) and not held.holds(tmp_path / "missing.db")
    assert not held.holds(path), "closing the last connection releases the file"


def test_naming_the_open_store_as_a_file_keeps_its_locks(tmp_path: Path) -> None:
    """export --out and import given the store itself (by a link) are refused without
    opening it, so this process's connection keeps its locks while another process closes."""
    from memory_console.cli import main
    from memory_console.store import Store

    path = tmp_path / "store.db"
    build_demo(path, count=20, seed=1, now=NOW)
    link = tmp_path / "link.jsonl"
    link.symlink_to(path)
    with Store(path, actor="tui") as store:
        store._query("SELECT count(*) FROM memory")
        assert main(["export", "--out", str(link), "--db", str(path)]) == 1
        assert main(["import", str(link), "--db", str(path)]) == 1
        assert main(["import", f"{path}-wal", "--db", str(path)]) == 1
        cli(path, "stats")  # the last process to close checkpoints and deletes the -wal
        assert not deleted_store_files(os.getpid(), path)
        new = store.add({"content": "written after the other process closed", "owner": "bob"})
        assert new in cli_view(path)["ids"]
