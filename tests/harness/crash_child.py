"""Crash trials: a forked child runs a store operation and is SIGKILLed at a chosen moment.

The child works on a copy of a prepared store; the parent then checks the file is sound and
the operation all or nothing. Operations: apply (consolidate + decay + cleanup, with new
memories), undo of such a run, import of a JSONL file, purge of every 4th of the first 2,000
memories, and the schema 1 -> 2 migration. The child
reports its progress through a pipe, each mark with its time since the operation began:
R (ready: the operation starts now), B (BEGIN IMMEDIATE starts), C (COMMIT starts), D (the
operation returned), X (it raised). A kill before C must leave the store as it was, a kill
after D as the uninterrupted run left it; between C and D either is fine.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import select
import shutil
import signal
import sqlite3
import struct
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memory_console.demo import build_demo
from memory_console.ingest.jsonl import import_jsonl
from memory_console.maintenance import apply, build_params, plan, undo
from memory_console.store import Store, db
from memory_console.timeutil import to_iso

NOW = 1_795_000_000.0
DAY = 86400.0
OPERATIONS = ("apply", "undo", "import", "purge", "migrate")
APPLY_PASSES = ("consolidate", "decay", "cleanup")
MIGRATED_INDEX = "ix_memory_status_owner_topic"
BACKUP_NAME = re.compile(r"\.schema1\.bak\d*")  # after the store's own name
PURGE_EVERY = 4  # purge every 4th memory of the first 2,000
MARK = struct.Struct("=cd")  # a mark and its seconds since R
CHILD_TIMEOUT_S = 120.0
RUN_COLUMNS = "id, now, passes, policy, params, counts, changed, actor, undone_at, undo_report"


# -- the store's state ------------------------------------------------------------------------


@dataclass(frozen=True)
class State:
    """What a crash may not tear apart: digests of the memory, event and run tables (runs
    without their wall-clock start and duration), the schema version and the indexes."""

    memories: int
    memory_digest: str
    events: int
    event_digest: str
    runs: str
    version: int
    indexes: tuple[str, ...]


# Every event column but a run's wall-clock stamp (`at` of a run's events is when apply ran,
# as its started_at; the time it was evaluated at is kept in evaluated_at).
EVENT_STATE = (
    "SELECT id, memory_id, CASE WHEN run_id IS NULL THEN at END, actor, kind, before, after, "
    "run_id, query, scores, evaluated_at FROM memory_event ORDER BY id"
)


def digest(rows: Any) -> str:
    sha = hashlib.sha256()
    for row in rows:
        sha.update(repr(row).encode())
    return sha.hexdigest()[:16]


def integrity(path: Path) -> str:
    """PRAGMA integrity_check and the text index's own check, after a crash; 'ok' if sound."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        found = "; ".join(row[0] for row in conn.execute("PRAGMA integrity_check"))
        if found != "ok":
            return found
        try:
            conn.execute("INSERT INTO memory_fts(memory_fts) VALUES ('integrity-check')")
        except sqlite3.DatabaseError as error:
            return f"memory_fts: {error}"
        return "ok"
    finally:
        conn.close()


def read_state(path: Path) -> State:
    conn = sqlite3.connect(path)
    try:
        return State(
            memories=conn.execute("SELECT count(*) FROM memory").fetchone()[0],
            memory_digest=digest(conn.execute("SELECT * FROM memory ORDER BY id")),
            events=conn.execute("SELECT count(*) FROM memory_event").fetchone()[0],
            event_digest=digest(conn.execute(EVENT_STATE)),
            runs=digest(conn.execute(f"SELECT {RUN_COLUMNS} FROM maintenance_run ORDER BY id")),
            version=conn.execute("PRAGMA user_version").fetchone()[0],
            indexes=tuple(
                row[0]
                for row in conn.execute(
                    "SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL "
                    "ORDER BY name"
                )
            ),
        )
    finally:
        conn.close()


def remove_store(path: Path) -> None:
    """The store file, its WAL and shared memory, and what an operation left beside it."""
    for leftover in path.parent.glob(path.name + "*"):
        leftover.unlink()


# -- the operations ---------------------------------------------------------------------------


Action = Callable[[], Any]


@dataclass
class Operation:
    """One operation under trial: its prepared store, how the child opens it (not timed) and
    runs it (timed), and the state before and after an uninterrupted run."""

    name: str
    template: Path
    work: Path
    prepare: Callable[[], Action]
    before: State | None = None
    after: State | None = None
    begin_s: float = 0.0  # from the uninterrupted run: BEGIN IMMEDIATE, COMMIT, return
    commit_s: float = 0.0
    done_s: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)

    def reset(self) -> None:
        remove_store(self.work)
        shutil.copyfile(self.template, self.work)


def settle(path: Path) -> None:
    """Fold the WAL into the file so a plain copy of it is the whole store."""
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    for suffix in ("-wal", "-shm"):
        path.with_name(path.name + suffix).unlink(missing_ok=True)


def write_import_file(path: Path, count: int) -> int:
    """`count` plain memories (no credentials, no health data) with a short history each."""
    topics = ("projects", "preferences", "decisions", "general")
    with path.open("w", encoding="utf-8") as out:
        for number in range(count):
            created = to_iso(NOW - (number % 365) * DAY)
            line = {
                "content": f"Imported note {number}: the team reviews project {number % 40} "
                f"on {topics[number % 4]} every week.",
                "owner": f"owner{number % 5}",
                "topic": topics[number % 4],
                "memory_type": ("episodic", "semantic", "procedural")[number % 3],
                "importance": round((number % 10) / 10, 1),
                "created_at": created,
                "keywords": ["team", "review", f"project{number % 40}"],
                "history": [
                    {
                        "at": created,
                        "actor": "import",
                        "kind": "created",
                        "after": {"confidence": 1.0, "status": "active"},
                    }
                ],
            }
            out.write(json.dumps(line) + "\n")
    return count


def prepare_operations(folder: Path, count: int) -> dict[str, Operation]:
    """Build the demo store and, from it, each operation's template and inputs."""
    folder.mkdir(parents=True, exist_ok=True)
    base = folder / "base.db"
    remove_store(base)
    build_demo(base, count=count, seed=11, now=NOW)
    settle(base)
    params = build_params(APPLY_PASSES)  # the demo's exact duplicates merge without vectors
    operations: dict[str, Operation] = {}

    apply_op = Operation("apply", base, folder / "apply.db", lambda: lambda: None)
    apply_op.reset()
    with Store(apply_op.work, actor="test") as store:
        proposal = plan(store, APPLY_PASSES, params, now=NOW + 400 * DAY)

    def prepare_apply() -> Action:
        store = Store(apply_op.work, actor="crash")
        return lambda: apply(store, proposal)

    apply_op.prepare = prepare_apply
    apply_op.extra["changed"] = proposal.changed + len(proposal.new_memories)
    operations["apply"] = apply_op

    applied = folder / "applied.db"
    remove_store(applied)
    shutil.copyfile(base, applied)
    with Store(applied, actor="test") as store:
        run = apply(store, plan(store, APPLY_PASSES, params, now=NOW + 400 * DAY))
    settle(applied)
    undo_op = Operation("undo", applied, folder / "undo.db", lambda: lambda: None)

    def prepare_undo() -> Action:
        store = Store(undo_op.work, actor="crash")
        return lambda: undo(store, run.id, now=NOW + 401 * DAY)

    undo_op.prepare = prepare_undo
    operations["undo"] = undo_op

    lines = folder / "import.jsonl"
    imported = write_import_file(lines, count)
    empty = folder / "empty.db"
    remove_store(empty)
    Store(empty).close()
    settle(empty)
    import_op = Operation("import", empty, folder / "import.db", lambda: lambda: None)

    def prepare_import() -> Action:
        store = Store(import_op.work, actor="crash")
        return lambda: import_jsonl(store, lines, now=NOW)

    import_op.prepare = prepare_import
    import_op.extra["lines"] = imported
    operations["import"] = import_op

    purge_op = Operation("purge", base, folder / "purge.db", lambda: lambda: None)
    purged = list(range(1, min(count, 2000) + 1, PURGE_EVERY))
    out_file = folder / "purge.db.purged.jsonl"

    def prepare_purge() -> Action:
        store = Store(purge_op.work, actor="crash")
        return lambda: store.purge(purged, out_file, now=NOW)

    purge_op.prepare = prepare_purge
    purge_op.extra.update(ids=purged, out=out_file)
    operations["purge"] = purge_op

    old = folder / "schema1.db"
    remove_store(old)
    shutil.copyfile(base, old)
    conn = sqlite3.connect(old)
    conn.execute(f"DROP INDEX {MIGRATED_INDEX}")
    conn.execute("PRAGMA user_version = 1")
    conn.commit()
    conn.close()
    settle(old)
    migrate_op = Operation("migrate", old, folder / "migrate.db", lambda: lambda: None)

    def prepare_migrate() -> Action:
        return lambda: Store(migrate_op.work, actor="crash").close()

    migrate_op.prepare = prepare_migrate
    operations["migrate"] = migrate_op
    return operations


# -- the child ----------------------------------------------------------------------------------


class Marks:
    """The child's side of the pipe: marks with their time since the operation began, and a
    trace of the statements on every store connection that notes BEGIN IMMEDIATE and COMMIT
    (and, when holding, stops at COMMIT until the parent kills it)."""

    def __init__(self, fd: int, *, hold: bool) -> None:
        self.fd = fd
        self.hold = hold
        self.started: float | None = None

    def mark(self, kind: bytes) -> None:
        elapsed = 0.0 if self.started is None else time.perf_counter() - self.started
        os.write(self.fd, MARK.pack(kind, elapsed))

    def trace(self, statement: str) -> None:
        if self.started is None:
            return
        if statement == "BEGIN IMMEDIATE":
            self.mark(b"B")
        elif statement == "COMMIT":
            self.mark(b"C")
            if self.hold:
                time.sleep(CHILD_TIMEOUT_S)


def child_main(operation: Operation, fd: int, *, hold: bool) -> None:
    """In the forked child: open, mark R, run the operation, mark D, wait to be killed."""
    marks = Marks(fd, hold=hold)
    plain_connect = db.connect

    def traced_connect(path: Path, *, read_only: bool = False) -> sqlite3.Connection:
        conn = plain_connect(path, read_only=read_only)
        conn.set_trace_callback(marks.trace)
        return conn

    db.connect = traced_connect  # type: ignore[assignment]
    action = operation.prepare()
    marks.started = time.perf_counter()
    marks.mark(b"R")
    try:
        action()
    except BaseException:
        traceback.print_exc()
        marks.mark(b"X")
        raise
    marks.mark(b"D")
    time.sleep(CHILD_TIMEOUT_S)


def fork_child(operation: Operation, *, hold: bool) -> tuple[int, int]:
    """Fork a child running the operation; returns its pid and the read end of its pipe."""
    read_fd, write_fd = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        os.close(read_fd)
        status = 1
        try:
            child_main(operation, write_fd, hold=hold)
            status = 0
        except BaseException:
            status = 1
        finally:
            os._exit(status)
    os.close(write_fd)
    return pid, read_fd


def next_mark(fd: int, timeout: float = CHILD_TIMEOUT_S) -> tuple[str, float] | None:
    """The child's next mark, or None at the end of the pipe (the child is gone)."""
    ready, _, _ = select.select([fd], [], [], timeout)
    if not ready:
        raise TimeoutError("the child sent nothing")
    data = b""
    while len(data) < MARK.size:
        chunk = os.read(fd, MARK.size - len(data))
        if not chunk:
            return None
        data += chunk
    kind, elapsed = MARK.unpack(data)
    return kind.decode(), elapsed


# -- one trial ------------------------------------------------------------------------------


@dataclass
class Trial:
    """One kill: when (seconds after R, or at a mark), the marks the child sent before it died,
    what the store was afterwards, and what was wrong with it."""

    operation: str
    moment: str
    delay_s: float | None
    marks: dict[str, float]
    outcome: str  # "before", "after" or "torn"
    problems: list[str]

    @property
    def phase(self) -> str:
        """Where the kill landed: before the write transaction, inside it, during its
        commit (between COMMIT and the return), or after the operation returned."""
        if "D" in self.marks:
            return "after return"
        if "C" in self.marks:
            return "in commit"
        if "B" in self.marks:
            return "in transaction"
        return "before transaction"


def run_trial(operation: Operation, *, delay: float | None = None, at: str = "D") -> Trial:
    """Copy the template, fork the child, kill it `delay` seconds after R (or when it sends
    the mark `at`: "C" holds it at COMMIT, "D" waits for the return), then check."""
    trial = kill_child(operation, delay=delay, at=at)
    check(operation, trial)
    return trial


def kill_child(operation: Operation, *, delay: float | None, at: str) -> Trial:
    """The trial's fork and kill, and the marks the child sent before it died."""
    operation.reset()
    hold = delay is None and at == "C"
    pid, fd = fork_child(operation, hold=hold)
    marks: dict[str, float] = {}
    try:
        first = next_mark(fd)
        if first is None or first[0] != "R":
            raise RuntimeError(f"{operation.name}: the child did not start ({first})")
        marks["R"] = 0.0
        if delay is not None:
            time.sleep(delay)
        else:
            while at not in marks:
                found = next_mark(fd)
                if found is None or found[0] == "X":
                    raise RuntimeError(f"{operation.name}: the child failed before {at}")
                marks[found[0]] = found[1]
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    while (found := next_mark(fd, timeout=5)) is not None:
        marks[found[0]] = found[1]
    os.close(fd)
    moment = f"{delay * 1000:.1f} ms" if delay is not None else f"at {at}"
    return Trial(operation.name, moment, delay, marks, "torn", [])


def check(operation: Operation, trial: Trial) -> None:
    """Integrity, all or nothing, and what the operation promises beyond its tables."""
    problems = trial.problems
    sound = integrity(operation.work)
    if sound != "ok":
        problems.append(f"integrity: {sound}")
        return
    if "X" in trial.marks:
        problems.append("the operation raised in the child")
    state = read_state(operation.work)
    if operation.before is None:
        return
    if state == operation.before:
        trial.outcome = "before"
    elif state == operation.after:
        trial.outcome = "after"
    else:
        problems.append(
            f"neither before nor after: {state} (before {operation.before}, "
            f"after {operation.after})"
        )
    if trial.outcome == "after" and "C" not in trial.marks:
        problems.append("changed without reaching COMMIT")
    if trial.outcome == "before" and "D" in trial.marks:
        problems.append("the operation returned but its changes are gone")
    if operation.name == "purge":
        problems += purge_problems(operation, trial.outcome)
    if operation.name == "migrate":
        problems += migrate_problems(operation, state)


def purge_problems(operation: Operation, outcome: str) -> list[str]:
    """Purged rows must be in the JSONL file, every one of them."""
    out: Path = operation.extra["out"]
    if outcome != "after":
        return []
    if not out.exists():
        return ["purged, and no JSONL file"]
    saved = {json.loads(line)["id"] for line in out.read_text(encoding="utf-8").splitlines()}
    missing = set(operation.extra["ids"]) - saved
    return [f"{len(missing)} purged memories are not in the JSONL file"] if missing else []


def migrate_problems(operation: Operation, state: State) -> list[str]:
    """A backup, if complete, is the old store; the store opens (migrating if it must)."""
    problems: list[str] = []
    assert operation.before is not None and operation.after is not None
    for backup in operation.work.parent.glob(operation.work.name + ".schema1.bak*"):
        if not BACKUP_NAME.fullmatch(backup.name[len(operation.work.name) :]):
            continue  # a .partial copy (and its journal) that a kill interrupted is fine
        if integrity(backup) != "ok":
            problems.append(f"{backup.name}: not sound")
        elif read_state(backup) != operation.before:
            problems.append(f"{backup.name}: not the store before the migration")
    try:
        Store(operation.work).close()
    except Exception as error:  # the next open must work: report anything it raises
        return [*problems, f"reopening: {type(error).__name__}: {error}"]
    if read_state(operation.work) != operation.after:
        problems.append("reopened and migrated, but not the migrated store")
    return problems


def calibrate(operation: Operation, runs: int = 3) -> Trial:
    """The state before, then uninterrupted runs (each killed after it returned): the state
    after, which every run must reach, and the times of BEGIN, COMMIT and the return of the
    median run."""
    operation.reset()
    operation.before = read_state(operation.work)
    operation.after = None
    timed: list[Trial] = []
    for _ in range(runs):
        trial = kill_child(operation, delay=None, at="D")
        sound = integrity(operation.work)
        if sound != "ok":
            trial.problems.append(f"integrity after an uninterrupted run: {sound}")
            return trial
        state = read_state(operation.work)
        if operation.after is not None and state != operation.after:
            trial.problems.append("two uninterrupted runs left different stores")
            return trial
        operation.after = state
        timed.append(trial)
    assert operation.after is not None
    median = sorted(timed, key=lambda run: run.marks["D"])[len(timed) // 2]
    operation.begin_s = median.marks.get("B", 0.0)
    operation.commit_s = median.marks.get("C", 0.0)
    operation.done_s = median.marks["D"]
    check(operation, trial)
    if operation.after == operation.before:
        trial.problems.append("the operation changed nothing")
    if operation.name == "import" and operation.after.memories != operation.extra["lines"]:
        trial.problems.append(
            f"imported {operation.after.memories} of {operation.extra['lines']} lines"
        )
    if operation.name == "migrate" and (operation.after.version, operation.before.version) != (
        db.SCHEMA_VERSION,
        1,
    ):
        trial.problems.append("the migration did not change the schema version")
    return trial
