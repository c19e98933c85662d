"""A model-based test of a memory's history: random sequences of the operator's and the
agent's writes, the console's undo stack, maintenance runs and their undo, purges and the
import of a purge file, on one store with its search index loaded from the index file,
checked after every step against what must hold whatever the sequence:

- an id is handed out once: no new memory ever takes an id a memory had before;
- every event belongs to its memory's life, and `check` is clean;
- an undo restores the exact earlier fields of each memory it changed;
- a maintenance run applied at a `now` leaves nothing for a second run at the same `now`;
- the search index holds exactly the active memories.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import hypothesis.strategies as st
from hypothesis import HealthCheck, settings
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from memory_console.api import MemoryAPI
from memory_console.embed.semantic import SemanticIndex
from memory_console.ingest.formats import import_file
from memory_console.maintenance import apply, plan, undo
from memory_console.maintenance.undo import UndoRefused
from memory_console.store import Store
from memory_console.store.check import check_store
from memory_console.tui.actions import ACTIONS, DoneAction, run_action, undo_action
from tests.harness.pg_machines import OnPostgreSQL, run_on_postgresql

DAY = 86400.0
TEXTS = (
    "Prefers dark mode in every editor.",
    "Works at Acme Corp as a backend engineer.",
    "The weekly sync is on Tuesdays at 10:00.",
    "Drinks oat milk every morning.",
    "Uses PostgreSQL 16 in production.",
)
TOPICS = ("preferences", "user_info", "projects")
# What an undo puts back: every field but the bookkeeping it moves on.
FIELDS = (
    "owner, topic, tier, memory_type, title, content, keywords, source, importance, "
    "confidence, base_confidence, retrieval_count, created_at, last_accessed_at, "
    "decay_policy, is_protected, status, consolidated_into, superseded_by, metadata"
)
# The default maintenance passes, and the sensitive scan beside them.
PASSES = ("expire-banks", "expire", "consolidate", "decay", "cleanup", "quota", "sensitive")
_embedder: Any = None


def embedder() -> Any:
    global _embedder
    if _embedder is None:
        from memory_console.embed.embedder import Embedder

        _embedder = Embedder.load()
    return _embedder


class History(RuleBasedStateMachine):
    """On a SQLite file; PostgreSQLHistory runs the same rules on a database of its own."""

    def __init__(self) -> None:
        super().__init__()
        self.folder = Path(tempfile.mkdtemp(prefix="history-"))
        self.path: str | Path = self.new_store()
        self.clock = time.time()  # the agent API's writes take the real clock
        self.seen: set[int] = set()  # every memory id handed out
        self.gone: set[int] = set()  # ids whose memory was deleted
        self.stack: list[tuple[DoneAction, dict[int, tuple[Any, ...]]]] = []
        self.runs: list[tuple[int, dict[int, tuple[Any, ...]], int]] = []
        self.writes = 0  # every write, so a run's undo knows whether anything came after
        self.purge_files: list[tuple[Path, int]] = []
        self.purges = 0

    @initialize()
    def open_store(self) -> None:
        with Store(self.path, actor="test") as store:
            self.note_new(store.add_many([self.memory(n) for n in range(6)], now=self.clock))
        self.store = Store(self.path, actor="tui")
        # Loaded as the console loads it: from the index file written beside the store.
        self.semantic = SemanticIndex(self.store, embedder())
        self.semantic.sync()
        self.store.listeners.append(self.semantic.on_change)
        # The agent's API on the same store, so both indexes hear every write.
        self.api = MemoryAPI(self.store, owner="alice", embedder=embedder())

    def new_store(self) -> str | Path:
        return self.folder / "store.db"

    def teardown(self) -> None:
        if hasattr(self, "api"):
            self.api.close()
            self.store.close()
        shutil.rmtree(self.folder, ignore_errors=True)
        self.drop_store()

    def drop_store(self) -> None:
        """The file goes with its folder."""

    # -- helpers ----------------------------------------------------------------------------

    def memory(self, number: int, topic: str = "preferences") -> dict[str, Any]:
        return {
            "content": TEXTS[number % len(TEXTS)],
            "owner": "alice",
            "topic": topic,
            "created_at": self.clock - 200 * DAY,
            "updated_at": self.clock - 200 * DAY,
        }

    def note_new(self, ids: list[int]) -> None:
        for ident in ids:
            assert ident not in self.seen, f"id {ident} handed out again"
            self.seen.add(ident)

    def rows(self, ids: list[int] | None = None) -> dict[int, tuple[Any, ...]]:
        query = f"SELECT id, {FIELDS} FROM memory"
        found = self.store._query(query + " ORDER BY id")
        # Metadata compared as the JSON it is (an undo writes it back in compact form).
        return {
            row[0]: (*row[1:-1], json.loads(row[-1]))
            for row in found
            if ids is None or row[0] in ids
        }

    def live(self) -> list[int]:
        return sorted(self.rows())

    def tick(self, days: float = 1.0) -> float:
        self.clock += days * DAY
        return self.clock

    def wrote(self) -> None:
        self.writes += 1

    # -- rules ------------------------------------------------------------------------------

    @rule(number=st.integers(0, 9), topic=st.sampled_from(TOPICS))
    def add(self, number: int, topic: str) -> None:
        before = set(self.live())
        ids = self.store.add_many([self.memory(number, topic)], now=self.tick())
        assert not set(ids) & before
        self.note_new(ids)
        self.wrote()

    @rule(number=st.integers(0, 9))
    def remember(self, number: int) -> None:
        result = self.api.remember(f"Remember that {TEXTS[number % len(TEXTS)].lower()}")
        if result.action == "stored" and result.id is not None:
            self.note_new([result.id])
        self.wrote()

    @rule(
        action=st.sampled_from(("protect", "unprotect", "archive", "restore", "forget")),
        pick=st.integers(0, 1000),
    )
    def act(self, action: str, pick: int) -> None:
        live = self.live()
        if not live:
            return
        ident = live[pick % len(live)]
        before = self.rows([ident])
        moment = self.tick(0.01)
        result = run_action(self.store, action, [ident], moment)
        if result.changed:
            done = DoneAction(action, moment, ACTIONS[action].kinds, tuple(result.changed))
            self.stack.append((done, before))
            self.wrote()

    @precondition(lambda self: bool(self.stack))
    @rule()
    def undo_last_action(self) -> None:
        done, before = self.stack.pop()
        result = undo_action(self.store, done, self.tick(0.01))
        after = self.rows(list(result.changed))
        for ident in result.changed:
            assert after[ident] == before[ident], f"undo of {done.action} on {ident}"
        self.wrote()

    @rule(days=st.sampled_from((0.0, 30.0, 95.0, 400.0)))
    def maintain(self, days: float) -> None:
        at = self.clock + days * DAY
        made = plan(self.store, PASSES, now=at)
        if made.is_empty:
            return
        before = self.rows()
        run = apply(self.store, made)
        created = [
            row[0]
            for row in self.store._query(
                "SELECT memory_id FROM memory_event WHERE run_id = ? AND kind = 'created'",
                (run.id,),
            )
        ]
        self.note_new(created)
        self.wrote()
        self.runs.append((run.id, before, self.writes))
        again = plan(self.store, PASSES, now=at)
        assert again.is_empty, f"a second run at the same now would change {again.changed}"

    @precondition(lambda self: bool(self.runs))
    @rule()
    def undo_last_run(self) -> None:
        run_id, before, writes = self.runs.pop()
        created_by_run = {
            row[0]
            for row in self.store._query(
                "SELECT memory_id FROM memory_event WHERE run_id = ? AND kind = 'created'",
                (run_id,),
            )
        }
        try:
            undo(self.store, run_id, now=self.tick(0.01))
        except UndoRefused:
            return
        self.gone |= created_by_run
        if writes == self.writes:  # nothing after the run: the store is as before it
            assert self.rows() == before
        self.wrote()

    @rule(pick=st.integers(0, 1000))
    def purge(self, pick: int) -> None:
        live = self.live()
        if not live:
            return
        ident = live[pick % len(live)]
        self.purges += 1
        out = self.folder / f"purged-{self.purges}.jsonl"
        self.store.purge([ident], out, now=self.tick(0.01))
        self.gone.add(ident)
        self.purge_files.append((out, ident))
        self.stack = [(done, rows) for done, rows in self.stack if ident not in rows]
        self.wrote()

    @precondition(lambda self: bool(self.purge_files))
    @rule()
    def import_purge_file(self) -> None:
        out, ident = self.purge_files.pop()
        import_file(self.store, out, now=self.tick(0.01))
        assert ident in self.rows([ident])
        self.gone.discard(ident)
        self.wrote()

    # -- invariants -------------------------------------------------------------------------

    @invariant()
    def ids_live_once(self) -> None:
        if not hasattr(self, "store"):
            return
        live = set(self.live())
        assert live <= self.seen
        assert not live & self.gone

    @invariant()
    def check_is_clean(self) -> None:
        if not hasattr(self, "store"):
            return
        report = check_store(self.store)
        problems = [p for result in report.checks for p in result.problems]
        assert problems == []

    @invariant()
    def index_holds_the_active_memories(self) -> None:
        if not hasattr(self, "store"):
            return
        active = {
            row[0] for row in self.store._query("SELECT id FROM memory WHERE status = 'active'")
        }
        # Everything a search can reach, whichever index the backend keeps: SQLite's holds
        # the active memories only, PostgreSQL's keeps every vector and filters by status.
        found, _ = self.semantic.index.search(self.probe(), k=len(self.seen) + 1)
        assert set(found.tolist()) == active
        if self.store.backend == "sqlite":
            indexed = {ident for ident in self.seen if ident in self.semantic.index}
            assert indexed == active

    def probe(self) -> Any:
        if not hasattr(self, "probe_vector"):
            self.probe_vector = embedder().embed(["what does alice prefer"])[0]
        return self.probe_vector


# The bugs this machine found took 3 to 5 steps; 60 examples of 40 steps keep it within the
# suite's time. MEMORY_CONSOLE_HISTORY_EXAMPLES runs more (a deeper search before a release).
History.TestCase.settings = settings(
    max_examples=int(os.environ.get("MEMORY_CONSOLE_HISTORY_EXAMPLES", "60")),
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
test_history = History.TestCase


# -- the same rules on PostgreSQL ------------------------------------------------------------------


class PostgreSQLHistory(OnPostgreSQL, History):
    """Each example on a new database copied from the server's template (pgvector in it):
    sequences, the server's own text and vector indexes, its check."""

    tag = "history"


def test_history_on_postgresql(pg_server: tuple[str, str]) -> None:
    examples = int(os.environ.get("MEMORY_CONSOLE_PG_HISTORY_EXAMPLES", "10"))
    run_on_postgresql(PostgreSQLHistory, pg_server, examples, steps=30)
