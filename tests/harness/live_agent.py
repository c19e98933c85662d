"""A live agent beside the console: both write to one store, then both sides are checked.

One process adds and reinforces memories at a steady rate while this one plans and applies
maintenance and bulk actions. The store is an SQLite file or a PostgreSQL database (--db
takes a URL too). The agent runs as
`python tests/harness/live_agent.py --db STORE --log PATH --seconds S` and writes one line per
write it made to a line-buffered log: `add ID`, `access ID ID ...` (the memories whose access
it recorded), `error TEXT` for anything that reached it, `done {json}`.
Only the standard library and memory_console are imported here, so the file runs as a script.
"""

from __future__ import annotations

import argparse
import json
import random
import sqlite3
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, cast

from memory_console.maintenance import (
    StalePlanError,
    apply,
    build_params,
    plan,
    undo,
)
from memory_console.maintenance.errors import STALE_MESSAGE
from memory_console.maintenance.undo import UndoRefused
from memory_console.store import Store, StoreError
from memory_console.timeutil import to_iso

DAY = 86400.0
AGENT_OWNER = "live-agent"
AGENT_ACTOR = "api"  # the actor MemoryAPI's Store writes in the agent's events
AGENT_TOPIC = "projects"
BULK_SIZE = 300
PLAN_ATTEMPTS = 4  # plans made per maintenance step before it gives up (each one raced)
STALE_WAIT_S = 30.0  # how long a forced-stale round waits for the agent to touch its plan
# (it ends as soon as the agent does; on a loaded machine an agent on PostgreSQL took over 5 s)
TRACKED = (
    "confidence",
    "retrieval_count",
    "last_accessed_at",
    "status",
    "is_protected",
    "decay_policy",
)
# The agent's texts: a few projects and tools, so its memories repeat each other's keywords
# and the keyword consolidation finds groups of them.
PROJECTS = ("apollo", "borealis", "cascade", "dynamo")
TOOLS = ("jenkins", "buildkite", "gitlab")


class LiveCheckError(Exception):
    """Something the live run must never do happened (a stale plan applied, say)."""


# -- counting lock waits ---------------------------------------------------------------------


@dataclass
class LockStats:
    """Write transactions begun on one connection, how long the write lock took (SQLite's
    BEGIN IMMEDIATE, PostgreSQL's advisory lock), and how many attempts were refused busy
    (each one a Store retry; PostgreSQL's writers wait in the lock's queue instead)."""

    begins: int = 0
    retries: int = 0
    longest_wait_ms: float = 0.0
    total_wait_ms: float = 0.0


class TimedConnection:
    """A stand-in for the Store's connection that times each statement taking the write lock
    (`locking`: the last statement of the dialect's begin_write)."""

    def __init__(self, conn: Any, stats: LockStats, locking: str) -> None:
        self._conn = conn
        self._stats = stats
        self._locking = locking

    def execute(self, sql: str, *args: Any) -> Any:
        if sql != self._locking:
            return self._conn.execute(sql, *args)
        started = time.perf_counter()
        try:
            cursor = self._conn.execute(sql, *args)
        except sqlite3.OperationalError:
            self._stats.retries += 1
            raise
        finally:
            waited = (time.perf_counter() - started) * 1000
            self._stats.longest_wait_ms = max(self._stats.longest_wait_ms, waited)
            self._stats.total_wait_ms += waited
        self._stats.begins += 1
        return cursor

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


def instrument(store: Store) -> LockStats:
    """Count the store's write transactions and the waits for the write lock."""
    stats = LockStats()
    locking = store.dialect.begin_write[-1]
    store._conn = cast(sqlite3.Connection, TimedConnection(store._conn, stats, locking))
    return stats


def one_line(error: BaseException) -> str:
    return f"{type(error).__name__}: {' '.join(str(error).split())}"


# -- the agent process -----------------------------------------------------------------------


def decaying_ids(store: Store) -> list[int]:
    """Active memories a decay plan can touch: the agent reinforces these."""
    return [
        row[0]
        for row in store._query(
            "SELECT id FROM memory WHERE status = 'active' AND is_protected = 0 "
            "AND decay_policy IN ('standard', 'aggressive') AND memory_type != 'semantic'"
        )
    ]


def agent_text(rng: random.Random, number: int) -> str:
    project, tool = rng.choice(PROJECTS), rng.choice(TOOLS)
    return f"Project {project} deploys through {tool} pipelines, reviewed on release day {number}."


def run_agent(
    db: Path | str, log_path: Path, seconds: float, adds: float, accesses: float, seed: int
) -> None:
    """Add `adds` memories and record `accesses` accesses (1-3 memories each) per second,
    paced on a fixed schedule, for `seconds`; log every write as it is committed."""
    from memory_console.api import MemoryAPI

    rng = random.Random(seed)
    api = MemoryAPI(db, owner=AGENT_OWNER, semantic=False)
    locks = instrument(api.store)
    pool = decaying_ids(api.store)
    added = accessed = access_events = errors = 0
    rate = adds + accesses
    with log_path.open("a", encoding="utf-8", buffering=1) as log:
        started = time.monotonic()
        log.write(f"start {time.time()!r}\n")
        tick = 0
        while True:
            now = time.monotonic()
            if now >= started + seconds:
                break
            due = started + tick / rate
            if due > now:
                time.sleep(due - now)
            tick += 1
            try:
                if added * rate < tick * adds:
                    result = api.remember(
                        agent_text(rng, tick), topic=AGENT_TOPIC, memory_type="episodic"
                    )
                    if result.action != "stored" or result.id is None:
                        raise LiveCheckError(f"remember {result.action}: {result.reason}")
                    added += 1
                    pool.append(result.id)
                    log.write(f"add {result.id}\n")
                else:
                    wanted = rng.sample(pool, rng.randint(1, 3))
                    changed = api.store.record_access(wanted, query="live agent").changed
                    accessed += 1
                    access_events += len(changed)
                    log.write("access " + " ".join(map(str, changed)) + "\n")
            except Exception as error:  # whatever reached the agent is reported, then it goes on
                errors += 1
                log.write(f"error {one_line(error)}\n")
        elapsed = time.monotonic() - started
        summary = {
            "seconds": elapsed,
            "adds": added,
            "accesses": accessed,
            "access_events": access_events,
            "errors": errors,
            "locks": asdict(locks),
        }
        log.write(f"done {json.dumps(summary)}\n")
    api.close()


def start_agent(
    db: Path | str, log_path: Path, seconds: float, adds: float, accesses: float, seed: int = 1
) -> subprocess.Popen[str]:
    """Start the agent process; returns once it has opened the store and begun writing."""
    log_path.write_text("")
    agent = subprocess.Popen(
        [
            sys.executable,
            str(Path(__file__).resolve()),
            "--db",
            str(db),
            "--log",
            str(log_path),
            "--seconds",
            str(seconds),
            "--adds",
            str(adds),
            "--accesses",
            str(accesses),
            "--seed",
            str(seed),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while not log_path.read_text().startswith("start"):
        if agent.poll() is not None or time.monotonic() > deadline:
            _, err = agent.communicate(timeout=10)
            raise LiveCheckError(f"the agent did not start: {err.strip()[-2000:]}")
        time.sleep(0.02)
    return agent


@dataclass
class AgentLog:
    """What the agent's log says it wrote, and what reached it."""

    added: list[int] = field(default_factory=list)
    access_events: int = 0
    accesses: int = 0
    errors: list[str] = field(default_factory=list)
    summary: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def read(cls, path: Path) -> AgentLog:
        log = cls()
        for line in path.read_text(encoding="utf-8").splitlines():
            word, _, rest = line.partition(" ")
            if word == "add":
                log.added.append(int(rest))
            elif word == "access":
                log.accesses += 1
                log.access_events += len(rest.split())
            elif word == "error":
                log.errors.append(rest)
            elif word == "done":
                log.summary = json.loads(rest)
        return log


# -- the console side ------------------------------------------------------------------------


@dataclass
class ConsoleReport:
    """What the console side did and what reached its user."""

    seconds: float = 0.0
    transactions: int = 0
    rows_changed: int = 0
    rounds: int = 0
    decay_runs: int = 0
    consolidations: int = 0
    merged: int = 0
    bulk_actions: int = 0
    undos: int = 0
    undos_blocked: int = 0  # refused, nothing changed: a later run (the CLI's) changed them
    not_restored: int = 0
    forced_stale: int = 0
    raced_stale: int = 0
    gave_up: int = 0
    cli_runs: int = 0
    cli_stale: int = 0
    busy: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    locks: LockStats = field(default_factory=LockStats)


def changed_revisions(store: Store, proposal: Any) -> list[int]:
    """Memories the plan touches whose revision moved since it was made."""
    planned = dict(
        zip(proposal.touched_ids.tolist(), proposal.touched_revisions.tolist(), strict=True)
    )
    ids = list(planned)
    moved: list[int] = []
    for start in range(0, len(ids), 900):
        chunk = ids[start : start + 900]
        marks = ",".join("?" * len(chunk))
        for ident, revision in store._query(
            f"SELECT id, revision FROM memory WHERE id IN ({marks})", chunk
        ):
            if revision != planned[ident]:
                moved.append(ident)
    return moved


def run_count(store: Store) -> int:
    """The runs this store's actor applied: a CLI decay started earlier may commit its own
    run meanwhile, in another process, and is no run row left behind by a refused plan."""
    rows = store._query("SELECT count(*) FROM maintenance_run WHERE actor = ?", (store.actor,))
    return int(rows[0][0])


class Console:
    """The console's side of a live run: rounds of decay, consolidation, bulk actions, undo
    and, now and then, the real CLI in a subprocess."""

    def __init__(
        self,
        db: Path | str,
        report: ConsoleReport,
        rng: random.Random,
        agent: subprocess.Popen[str],
    ) -> None:
        self.db = db
        self.agent = agent
        self.store = Store(db, actor="tui")
        self.report = report
        report.locks = instrument(self.store)
        self.rng = rng
        self.pending_bulk: tuple[str, list[int]] | None = None
        self.last_decay_run: int | None = None
        self.cli: list[tuple[subprocess.Popen[str], list[str]]] = []

    def close(self) -> None:
        self.store.close()

    def step(self, what: str, action: Any) -> None:
        """Run one user action; a StoreError is what its user would read."""
        try:
            action()
        except StoreError as error:
            text = one_line(error)
            if "busy" in str(error) and "locked" not in str(error):
                self.report.busy.append(f"{what}: {text}")
            else:
                self.report.failures.append(f"{what}: {text}")

    def round(self, number: int) -> None:
        self.report.rounds += 1
        if self.last_decay_run is not None and number % 4 == 0:
            self.step("undo", self.undo_last)
        self.step("decay", lambda: self.decay(number, force_stale=number % 3 == 1))
        self.step("bulk", self.bulk)
        if number % 2 == 0:
            self.step("consolidate", self.consolidate)

    def decay(self, number: int, *, force_stale: bool) -> None:
        """Plan decay at a simulated `now` months ahead (so every decaying memory changes);
        in a forced round, wait until the agent reinforced a planned memory, then apply:
        the plan must be refused as stale, with nothing written. (Once the agent has ended,
        a forced round is an ordinary one.)"""
        sim_now = time.time() + (400 + 30 * number) * DAY
        for attempt in range(PLAN_ATTEMPTS):
            proposal = plan(self.store, now=sim_now)
            if proposal.is_empty:
                return
            moved = self.wait_for_agent(proposal) if force_stale and attempt == 0 else []
            if moved:
                runs = run_count(self.store)
                try:
                    apply(self.store, proposal)
                except StalePlanError:
                    self.report.forced_stale += 1
                    if run_count(self.store) != runs:
                        raise LiveCheckError("a refused plan left a run row behind") from None
                    continue
                raise LiveCheckError(
                    f"a plan was applied over the agent's writes to {len(moved)} memories"
                )
            try:
                run = apply(self.store, proposal)
            except StalePlanError:
                self.report.raced_stale += 1
                continue
            self.report.decay_runs += 1
            self.count_write(run.changed)
            self.last_decay_run = run.id
            return
        self.report.gave_up += 1

    def wait_for_agent(self, proposal: Any) -> list[int]:
        """The planned memories the agent changed, once it has changed any (none if it has
        ended meanwhile)."""
        deadline = time.monotonic() + STALE_WAIT_S
        while time.monotonic() < deadline:
            moved = changed_revisions(self.store, proposal)
            if moved or self.agent.poll() is not None:
                return moved
            time.sleep(0.01)
        raise LiveCheckError(f"the agent changed no planned memory in {STALE_WAIT_S:g} s")

    def consolidate(self) -> None:
        params = build_params(["consolidate"])
        for _ in range(PLAN_ATTEMPTS):
            proposal = plan(self.store, ["consolidate"], params, now=time.time())
            if proposal.is_empty:
                return
            try:
                run = apply(self.store, proposal)
            except StalePlanError:
                self.report.raced_stale += 1
                continue
            self.report.consolidations += 1
            self.report.merged += len(proposal.new_memories)
            self.count_write(run.changed)
            return
        self.report.gave_up += 1

    def undo_last(self) -> None:
        assert self.last_decay_run is not None
        run_id, self.last_decay_run = self.last_decay_run, None
        try:
            report = undo(self.store, run_id)
        except UndoRefused as refused:
            if not refused.blocked_by:
                raise
            # The CLI's decay run applied after this one changed the same memories: undo
            # refuses to write over it, as it must (the slower the rounds, the likelier).
            self.report.undos_blocked += 1
            return
        self.report.undos += 1
        self.report.not_restored += len(report.not_restored)
        self.count_write(len(report.restored) + len(report.deleted))

    def bulk(self) -> None:
        """Take back the previous bulk action, then protect or archive a fresh sample."""
        if self.pending_bulk is not None:
            kind, ids = self.pending_bulk
            self.pending_bulk = None
            result = self.store.unprotect(ids) if kind == "protect" else self.store.restore(ids)
            self.report.bulk_actions += 1
            self.count_write(len(result.changed))
        active = [
            row[0]
            for row in self.store._query(
                "SELECT id FROM memory WHERE status = 'active' AND is_protected = 0"
            )
        ]
        ids = self.rng.sample(active, min(BULK_SIZE, len(active)))
        kind = self.rng.choice(("protect", "archive"))
        result = self.store.protect(ids) if kind == "protect" else self.store.archive(ids)
        self.pending_bulk = (kind, result.changed)
        self.report.bulk_actions += 1
        self.count_write(len(result.changed))

    def count_write(self, rows: int) -> None:
        self.report.transactions += 1
        self.report.rows_changed += rows

    # -- the real CLI, as a third writer --------------------------------------------------

    def start_cli(self, number: int) -> None:
        if number % 2 == 0:
            when = str(to_iso(time.time() + (400 + 30 * number) * DAY))
            args = ["decay", "--apply", "--json", "--now", when]
        else:
            active = [
                row[0]
                for row in self.store._query(
                    "SELECT id FROM memory WHERE status = 'active' LIMIT 2000"
                )
            ]
            args = ["protect", *map(str, self.rng.sample(active, min(100, len(active))))]
        command = [sys.executable, "-m", "memory_console.cli", *args, "--db", str(self.db)]
        process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        self.cli.append((process, args[:1]))

    def finish_cli(self, *, wait: bool) -> None:
        """Check the CLI runs that ended: done, or refused with a clear one-line message."""
        still: list[tuple[subprocess.Popen[str], list[str]]] = []
        for process, name in self.cli:
            if not wait and process.poll() is None:
                still.append((process, name))
                continue
            out, err = process.communicate(timeout=120)
            self.report.cli_runs += 1
            said = " ".join(err.split())
            if "locked" in out + err or "Traceback" in err:
                self.report.failures.append(f"cli {name[0]}: {said[-500:]}")
            elif process.returncode == 0:
                self.report.transactions += 1
            elif process.returncode == 1 and STALE_MESSAGE in err:
                self.report.cli_stale += 1
            elif process.returncode == 1 and "busy" in err:
                self.report.busy.append(f"cli {name[0]}: {said}")
            else:
                self.report.failures.append(f"cli {name[0]} exit {process.returncode}: {said}")
        self.cli = still


def run_console(
    db: Path | str,
    seconds: float,
    agent: subprocess.Popen[str],
    *,
    cli_every: float | None,
    seed: int = 2,
) -> ConsoleReport:
    """Console rounds while the agent runs, for at most `seconds` (and the CLI every
    `cli_every` seconds, if given)."""
    report = ConsoleReport()
    console = Console(db, report, random.Random(seed), agent)
    started = time.monotonic()
    next_cli = started + (cli_every or 0.0) / 2
    number = 0
    try:
        while time.monotonic() < started + seconds and agent.poll() is None:
            number += 1
            if cli_every is not None and time.monotonic() >= next_cli and not console.cli:
                console.start_cli(number)
                next_cli = time.monotonic() + cli_every
            console.round(number)
            console.finish_cli(wait=False)
        console.finish_cli(wait=True)
    finally:
        console.close()
    report.seconds = time.monotonic() - started
    return report


# -- checking the store afterwards -------------------------------------------------------------


@dataclass(frozen=True)
class Baseline:
    """The store before the live run: the last event id and each memory's tracked fields."""

    last_event: int
    fields: dict[int, dict[str, Any]]

    @classmethod
    def take(cls, db: Path | str) -> Baseline:
        ((last,),) = rows_of(db, "SELECT coalesce(max(id), 0) FROM memory_event")
        rows = rows_of(db, f"SELECT id, {', '.join(TRACKED)} FROM memory")
        return cls(
            int(last),
            {row[0]: normalised(dict(zip(TRACKED, row[1:], strict=True))) for row in rows},
        )


def rows_of(db: Path | str, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
    """Rows of one statement, read on a connection of their own: sqlite3's on a file (past
    the Store), a read-only Store's on a PostgreSQL database."""
    if isinstance(db, str) and db.startswith(("postgresql://", "postgres://")):
        with Store(db, read_only=True, create=False, actor="check") as store:
            return store._query(sql, params)
    with sqlite3.connect(db) as conn:
        rows = conn.execute(sql, params).fetchall()
    conn.close()
    return rows


def normalised(values: dict[str, Any]) -> dict[str, Any]:
    out = {name: value for name, value in values.items() if name in TRACKED}
    if "is_protected" in out:
        out["is_protected"] = bool(out["is_protected"])
    return out


def broken_chains(db: Path | str, baseline: Baseline, limit: int = 5) -> list[str]:
    """Replay every event written since the baseline: each event's `before` must equal what
    the events before it left (a write applied over a newer one breaks that chain), and what
    the events leave must be what the memory table holds."""
    current = {ident: dict(values) for ident, values in baseline.fields.items()}
    problems: list[str] = []
    events = rows_of(
        db,
        "SELECT id, memory_id, actor, kind, before, after FROM memory_event WHERE id > ? "
        "ORDER BY id",
        (baseline.last_event,),
    )
    rows = rows_of(db, f"SELECT id, {', '.join(TRACKED)} FROM memory")
    for event_id, memory_id, actor, kind, before_json, after_json in events:
        before = normalised(json.loads(before_json or "{}"))
        after = normalised(json.loads(after_json or "{}"))
        known = current.setdefault(memory_id, {})
        for name, value in before.items():
            if name in known and known[name] != value:
                problems.append(
                    f"event {event_id} ({kind} by {actor}) of memory {memory_id}: "
                    f"{name} before {value!r}, but the last write left "
                    f"{known[name]!r}"
                )
        if kind == "purged":
            current.pop(memory_id, None)
        else:
            known.update(after)
    stored = {row[0]: normalised(dict(zip(TRACKED, row[1:], strict=True))) for row in rows}
    for ident, values in current.items():
        row = stored.get(ident)
        if row is None:
            problems.append(f"memory {ident} is gone without a purged event")
            continue
        for name, value in values.items():
            if row[name] != value:
                problems.append(
                    f"memory {ident}: {name} is {row[name]!r}, its last event left {value!r}"
                )
    return problems[:limit]


@dataclass
class LiveResult:
    """A live run: both sides' figures, what the store holds of the agent's writes, and every
    problem found (an empty list is a pass)."""

    console: ConsoleReport
    agent: AgentLog
    agent_exit: int
    agent_stderr: str
    present: int
    created_events: int
    accessed_events: int
    integrity: str
    chain_problems: list[str]

    def problems(self) -> list[str]:
        found: list[str] = []
        agent = self.agent
        if self.agent_exit != 0 or "Traceback" in self.agent_stderr:
            found.append(f"agent exit {self.agent_exit}: {self.agent_stderr.strip()[-1500:]}")
        if not agent.summary:
            found.append("the agent did not finish its log")
        if self.present != len(agent.added):
            found.append(
                f"{len(agent.added) - self.present} of the agent's "
                f"{len(agent.added)} memories are missing"
            )
        if self.created_events != len(agent.added):
            found.append(f"{self.created_events} created events for {len(agent.added)} adds")
        if self.accessed_events != agent.access_events:
            found.append(
                f"{self.accessed_events} accessed events, the agent logged {agent.access_events}"
            )
        found += [
            f"agent: {text}" for text in agent.errors if "busy" not in text or "locked" in text
        ]
        found += [f"console: {text}" for text in self.console.failures]
        if self.integrity != "ok":
            found.append(f"integrity_check: {self.integrity}")
        found += self.chain_problems
        return found

    def figures(self) -> dict[str, Any]:
        agent, console = self.agent, self.console
        seconds = agent.summary.get("seconds") or 1.0
        agent_locks = agent.summary.get("locks", {})
        return {
            "agent_seconds": round(seconds, 1),
            "agent_adds_per_s": round(len(agent.added) / seconds, 1),
            "agent_access_txn_per_s": round(agent.accesses / seconds, 1),
            "agent_writes_per_s": round((len(agent.added) + agent.accesses) / seconds, 1),
            "agent_access_events": agent.access_events,
            "agent_lock_retries": agent_locks.get("retries", 0),
            "agent_longest_lock_wait_ms": round(agent_locks.get("longest_wait_ms", 0.0), 1),
            "agent_busy_refusals": sum("busy" in text for text in agent.errors),
            "console_seconds": round(console.seconds, 1),
            "console_writes_per_s": round(console.transactions / console.seconds, 1),
            "console_rows_per_s": round(console.rows_changed / console.seconds),
            "console_rounds": console.rounds,
            "console_decay_runs": console.decay_runs,
            "console_consolidations": console.consolidations,
            "console_merged_memories": console.merged,
            "console_bulk_actions": console.bulk_actions,
            "console_undos": console.undos,
            "console_undos_blocked": console.undos_blocked,
            "console_undo_not_restored": console.not_restored,
            "console_applies_tried": console.decay_runs
            + console.consolidations
            + console.raced_stale,
            "stale_refused_forced": console.forced_stale,
            "stale_refused_raced": console.raced_stale,
            "plans_given_up": console.gave_up,
            "cli_runs": console.cli_runs,
            "cli_stale_refusals": console.cli_stale,
            "console_lock_retries": console.locks.retries,
            "console_longest_lock_wait_ms": round(console.locks.longest_wait_ms, 1),
            "console_busy_refusals": len(console.busy),
        }


def count_ids(db: Path | str, ids: Sequence[int]) -> int:
    found = 0
    for start in range(0, len(ids), 900):
        chunk = list(ids[start : start + 900])
        marks = ",".join("?" * len(chunk))
        found += rows_of(db, f"SELECT count(*) FROM memory WHERE id IN ({marks})", chunk)[0][0]
    return found


def run_live(
    db: Path | str,
    log_path: Path,
    seconds: float,
    *,
    adds: float,
    accesses: float,
    cli_every: float | None,
) -> LiveResult:
    """The agent and the console side by side on `db` for `seconds`, then every check."""
    baseline = Baseline.take(db)
    agent = start_agent(db, log_path, seconds, adds, accesses)
    try:
        console = run_console(db, seconds, agent, cli_every=cli_every)
        _, err = agent.communicate(timeout=seconds + 120)
    finally:
        if agent.poll() is None:
            agent.kill()
            agent.wait()
    log = AgentLog.read(log_path)
    present = count_ids(db, log.added)
    counted = "SELECT count(*) FROM memory_event WHERE id > ? AND actor = ? AND kind = ?"
    created = rows_of(db, counted, (baseline.last_event, AGENT_ACTOR, "created"))[0][0]
    accessed = rows_of(db, counted, (baseline.last_event, AGENT_ACTOR, "accessed"))[0][0]
    # SQLite checks its file; a PostgreSQL server keeps its own pages (and has no such check).
    on_file = not (isinstance(db, str) and db.startswith(("postgresql://", "postgres://")))
    checked = rows_of(db, "PRAGMA integrity_check") if on_file else [("ok",)]
    integrity = "; ".join(row[0] for row in checked)
    return LiveResult(
        console,
        log,
        agent.returncode,
        err,
        present,
        created,
        accessed,
        integrity,
        broken_chains(db, baseline),
    )


def main(argv: Sequence[str] | None = None) -> int:
    """The agent process's entry point."""
    parser = argparse.ArgumentParser(description="the agent side of a live run")
    parser.add_argument("--db", required=True, help="an SQLite file or a PostgreSQL URL")
    parser.add_argument("--log", type=Path, required=True)
    parser.add_argument("--seconds", type=float, required=True)
    parser.add_argument("--adds", type=float, default=20.0, help="memories added per second")
    parser.add_argument("--accesses", type=float, default=40.0, help="accesses per second")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    run_agent(args.db, args.log, args.seconds, args.adds, args.accesses, args.seed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
