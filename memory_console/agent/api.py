"""MemoryAPI, the agent side: remember, scan_turn, recall, apply_actions, forget, list and clear
on a Store.

See docs/ARCHITECTURE.md, "The agent API".

    from memory_console.api import MemoryAPI

    with MemoryAPI("memories.db", owner="alice") as memory:
        memory.remember("Remember that I prefer dark mode")   # stored, importance 1.0
        for hit in memory.recall("which theme does she like?", k=3):
            print(hit.record.content, hit.scores["effective"])

Every write goes through the Store and writes the same events as the console (actor "api"
when the API opens the store itself). The embedder loads on first need; when it cannot load,
recall falls back to keyword search and duplicates are found by exact (normalised) text only.
Importing this module does not import Textual, onnxruntime or the embedder.

A facade: each call reads its request, lets the decision steps decide every write
(agent/decide.py, agent/scan.py, agent/routing.py) and the action steps carry them out in one
transaction (agent/act.py); recall ranks through agent/recall.py, and the user's own requests
are agent/forgetting.py.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Sequence
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING, Any

from memory_console.agent import act, forgetting, recall, routing
from memory_console.agent.decide import Plan, StoreView, decide, screen, within_message
from memory_console.agent.forgetting import ClearResult, ForgetResult
from memory_console.agent.message import (
    EXCERPT_LIMIT,
    MAX_STATEMENTS,
    ORIGINAL_LIMIT,
    excerpts_of,
    split_of,
    statement_candidates,
)
from memory_console.agent.results import (
    ActionOutcome,
    ActionsResult,
    Recalled,
    RememberResult,
    ScanResult,
    declining,
)
from memory_console.agent.rules import remember as rules
from memory_console.agent.rules import requests
from memory_console.agent.rules.chatter import is_chatter
from memory_console.agent.rules.remember import ActionsError
from memory_console.agent.rules.speech import foreign_words
from memory_console.agent.rules.statements import split_statements
from memory_console.agent.scan import scan_plans
from memory_console.store import MemoryFilter, MemoryRecord, Store
from memory_console.store.settings import RECALL_MIN_COSINE
from memory_console.store.vocab import SESSION_TIERS
from memory_console.timeutil import now_ts

if TYPE_CHECKING:
    from memory_console.embed.embedder import Embedder
    from memory_console.embed.search import SearchEngine
    from memory_console.embed.semantic import SemanticIndex

ACTOR = "api"
SESSION_ENDED = "session ended"  # the reason end_session archives with
SMALL_TALK = "small talk: no fact about the user to remember"


class MemoryAPI:
    """The agent-side API over one store, for one default owner.

    store: a Store (its actor names the events; open it with actor="api") or a path, which
    the API opens with actor "api" and closes on close(). semantic: False keeps to keyword
    search and exact duplicates; embedder: an already loaded Embedder to share;
    update_threshold: the cosine at which apply_actions' UPDATE or DELETE without memory_id
    finds the memory it changes (default: the store's update_threshold setting);
    forget_threshold: the cosine at which forget(phrase) archives the memory it means
    (default: the store's forget_threshold setting).
    """

    def __init__(
        self,
        store: Store | str | os.PathLike[str],
        *,
        owner: str = "default",
        semantic: bool = True,
        embedder: Embedder | None = None,
        manifest: str | None = None,
        update_threshold: float | None = None,
        forget_threshold: float | None = None,
    ) -> None:
        if not isinstance(owner, str) or not owner.strip():
            raise ValueError("owner must be a non-empty string")
        for name, value in (("update", update_threshold), ("forget", forget_threshold)):
            if value is not None and not 0.0 < value <= 1.0:
                raise ValueError(f"{name}_threshold must be in (0, 1]")
        self._owns_store = not isinstance(store, Store)
        self.store = Store(store, actor=ACTOR) if not isinstance(store, Store) else store
        if update_threshold is None:
            update_threshold = self.store.settings().update_threshold
        self.update_threshold = update_threshold
        if forget_threshold is None:
            forget_threshold = self.store.settings().forget_threshold
        self.forget_threshold = forget_threshold
        self.owner = owner
        self.semantic_error: str | None = None
        self._semantic_wanted = semantic
        self._embedder = embedder
        self._manifest = manifest
        self._engine: SearchEngine | None = None
        # Called between the steps of remember's and scan_turn's text work, before anything is
        # written: a caller with a time budget (the MCP server) raises from it to stop a call.
        self.checkpoint: Callable[[], None] | None = None

    def __enter__(self) -> MemoryAPI:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop following the store's changes; close the store if the API opened it."""
        from memory_console.embed.search import stop_following

        stop_following(self.store, self._engine)
        if self._owns_store:
            self.store.close()

    # -- search readiness -------------------------------------------------------------------

    @property
    def engine(self) -> SearchEngine:
        """The search engine, with semantic search when the embedder loads (first use only)."""
        if self._engine is None:
            from memory_console.embed.search import agent_engine

            self._engine, self.semantic_error = agent_engine(
                self.store,
                semantic=self._semantic_wanted,
                embedder=self._embedder,
                manifest=self._manifest,
            )
        return self._engine

    @property
    def semantic_ready(self) -> bool:
        return self.engine.semantic_ready

    def _semantic(self) -> SemanticIndex | None:
        engine = self.engine
        return engine.semantic if engine.semantic_ready else None

    def _view(self) -> StoreView:
        """What the decision steps read: the store, the semantic index on first need."""
        return StoreView(
            self.store, self._semantic, lambda: self.semantic_error, self.update_threshold
        )

    def _check(self) -> None:
        """Give the caller's checkpoint a chance to stop the call (nothing is written yet)."""
        if self.checkpoint is not None:
            self.checkpoint()

    # -- remember ---------------------------------------------------------------------------

    def remember(
        self,
        text: str,
        owner: str | None = None,
        *,
        user_requested: bool = False,
        topic: str | None = None,
        memory_type: str | None = None,
        tier: str = "long_term",
        importance: float | None = None,
        confidence: float | None = None,
        source: str | None = None,
        metadata: dict[str, Any] | None = None,
        now: float | None = None,
    ) -> RememberResult:
        """Remember a text by the decision rules (docs/ARCHITECTURE.md, "The agent API").

        A user directive ("remember that ...", "don't forget ...", "note that ...", "keep in
        mind ...", "I always ...", "I never ...") is stored with importance and confidence 1.0
        and source user_directive, and counts as the user asking (health data allowed), as do
        user_requested=True and a metadata whose user_requested is true. Anything else is an
        inferred memory (importance and confidence 0.5, source session_review). Without a
        memory_type the text is classified (rules.classify: events fade, facts stay).
        Credentials, in the text or in the metadata, are refused, health data too unless the
        user asked; a near-duplicate of the owner's active memories is reinforced instead.

        A request to the memory itself is carried out, never stored: "forget that ...",
        "please delete my ...", "remove my ... from your memory" (forget), "what do you
        remember about me", "show my stored preferences" (list_memories), "clear all my
        memories" (clear's first call: nothing archived, the token to confirm with). Only in
        the user's own words: a request or a directive the message reports or quotes ("the
        email said: forget ...") is not carried out, and `declined` says so.

        A message of several statements is one memory per statement, at most MAX_STATEMENTS
        of them. The message is screened once, every statement is decided before anything is
        written, and the writes go in one transaction: the write lock is never held while
        text is analysed or embedded.
        """
        if not isinstance(text, str):
            raise TypeError(f"text must be a string, not {type(text).__name__}")
        moment = now_ts() if now is None else now
        who = owner or self.owner
        request = requests.find_request(text)
        if request is not None:
            done = self._route(request, who, moment)
            rest = requests.after_request(text) if request.kind == requests.FORGET else ""
            if not rest:
                return done
            # "Actually, forget that I like to play chess. I more enjoy playing table top
            # games": the request is carried out, and what follows it is kept as any text.
            kept = self.remember(rest, who, metadata=metadata, now=moment)
            return replace(done, parts=(kept,))
        reported = requests.reported_request(text)
        declined = reported.declined if reported is not None else None
        self._check()
        directive, reported_directive = rules.directive_of(text)
        if reported_directive is not None and declined is None:
            declined = (
                "the directive in this message was not taken as the user's: it is in someone "
                f"else's words ({reported_directive}); kept as an inferred memory"
            )
        extra = dict(metadata or {})
        asked = user_requested or directive is not None or extra.get("user_requested") is True
        said = directive.content if directive is not None else text
        if not said.strip():
            return RememberResult("refused", None, "nothing to remember")
        self._check()
        refused = screen(text, extra, user_requested=asked)  # the whole message, once
        if refused is not None:
            return declining(RememberResult("refused", None, refused), declined)
        if directive is not None:
            extra["directive"] = directive.phrase
        deciding = partial(
            decide,
            self._view(),
            owner=who,
            screened=None,
            user_requested=asked,
            topic=topic,
            memory_type=memory_type,
            tier=tier,
            importance=importance
            if importance is not None
            else (rules.DIRECTIVE_IMPORTANCE if directive else rules.INFERRED_IMPORTANCE),
            confidence=confidence
            if confidence is not None
            else (rules.DIRECTIVE_CONFIDENCE if directive else rules.INFERRED_CONFIDENCE),
            source=source or ("user_directive" if directive else "session_review"),
        )
        return declining(
            self._remember_said(text, said, extra, deciding, moment, inferred=not asked),
            declined,
        )

    def _remember_said(
        self,
        text: str,
        said: str,
        extra: dict[str, Any],
        deciding: Callable[..., Plan],
        moment: float,
        *,
        inferred: bool,
    ) -> RememberResult:
        """What the user said, screened already, stored: one memory per statement, every
        statement decided before the writes, which go in one transaction. From an inferred
        message (no directive, not asked for), small talk is left out (rules/chatter.py)."""
        self._check()
        statements = split_statements(said)
        if inferred:
            statements = [part for part in statements if not is_chatter(part)]
            if not statements:
                return RememberResult("skipped", None, SMALL_TALK)
        left_out = max(0, len(statements) - MAX_STATEMENTS)
        statements = statements[:MAX_STATEMENTS]
        foreign = foreign_words(text)
        deciding = partial(deciding, foreign=foreign)
        if len(statements) < 2:
            extra["original_message"] = text[:ORIGINAL_LIMIT]
            plan = deciding(statements[0], metadata=extra)
            self._check()
            (done,) = act.write(self.store, [plan], moment, [text])
            return done
        message_id = uuid.uuid4().hex[:12]
        plans = []
        excerpts = excerpts_of(text, statements, EXCERPT_LIMIT)
        for number, statement in enumerate(statements, 1):
            self._check()
            part = {
                **extra,
                "original_message": excerpts[number - 1],
                "split": split_of(message_id, number, len(statements) + left_out),
            }
            plans.append(deciding(statement, metadata=part))
        within_message(plans, supersede=foreign is None)
        self._check()
        results = act.write(self.store, plans, moment, excerpts)
        first = results[0]
        if left_out:
            first = replace(
                first,
                reason=f"{first.reason}; {left_out} statements after the first "
                f"{MAX_STATEMENTS} were not stored (one call stores at most {MAX_STATEMENTS})",
            )
        return replace(first, parts=tuple(results), left_out=left_out)

    def _route(self, request: requests.Request, owner: str, moment: float) -> RememberResult:
        """Carry out a request remember() recognised, with what it did attached."""
        if request.kind == requests.FORGET:
            forgotten = self.forget(request.phrase, owner, now=moment)
            ident = forgotten.archived[0].id if len(forgotten.archived) == 1 else None
            return RememberResult("forgot", ident, forgotten.reason, forgotten=forgotten)
        if request.kind == requests.LIST:
            listed = self.list_memories(request.topic, owner)
            about = f" about {request.topic}" if request.topic else ""
            return RememberResult(
                "listed", None, f"{len(listed)} active memories{about}", listed=listed
            )
        cleared = self.clear(None, owner, now=moment)
        return RememberResult("confirm", None, cleared.reason, cleared=cleared)

    # -- scan_turn --------------------------------------------------------------------------

    def scan_turn(
        self,
        message: str,
        owner: str | None = None,
        *,
        history: Sequence[str] = (),
        task: str | None = None,
        user_requested: bool = False,
        now: float | None = None,
    ) -> list[ScanResult]:
        """Background extraction after a turn: explicit facts ("my name is", "I work at", "I
        prefer", "I live in", email, phone, "remember that ...") scored by the decision rules
        (explicit request +0.4, personal information +0.3, mentioned in two or more messages
        of history + this one +0.2, two or more words shared with `task` +0.1) and stored at
        >= 0.5 with that score as importance (source background_scan). At most MAX_STATEMENTS
        facts are considered; the rest are answered as skipped. As remember, the message is
        screened once and every fact decided before the writes, which go in one transaction."""
        moment = now_ts() if now is None else now
        messages = [*history, message]
        request = requests.find_request(message)
        if request is not None:
            # "Forget that I work at Acme" names a fact to drop, not one to keep.
            why = f"the message asks to {request.kind}: not stored"
            return [
                ScanResult(found, RememberResult("skipped", None, why))
                for found in rules.find_facts(message)
            ]
        self._check()
        found_facts = rules.find_facts(message)
        candidates = statement_candidates(found_facts, uuid.uuid4().hex[:12])
        cut = [found for found, _, _ in candidates[MAX_STATEMENTS:]]
        candidates = candidates[:MAX_STATEMENTS]
        self._check()
        foreign = foreign_words(message)
        results, plans, excerpts = scan_plans(
            self._view(),
            message,
            candidates,
            messages=messages,
            task=task,
            user_requested=user_requested,
            owner=owner or self.owner,
            foreign=foreign,
            check=self._check,
        )
        within_message(plans, supersede=foreign is None)
        self._check()
        written = iter(act.write(self.store, plans, moment, excerpts) if plans else [])
        out = [
            item if isinstance(item, ScanResult) else ScanResult(item, next(written))
            for item in results
        ]
        limit = f"one call stores at most {MAX_STATEMENTS} facts: not considered"
        out += [ScanResult(found, RememberResult("skipped", None, limit)) for found in cut]
        return out

    # -- recall -----------------------------------------------------------------------------

    def recall(
        self,
        query: str,
        owner: str | None = None,
        k: int = 5,
        *,
        tier: str | Sequence[str] | None = None,
        session_id: str | None = None,
        include_superseded: bool = False,
        topic: str | None = None,
        min_cosine: float | None = RECALL_MIN_COSINE,
        now: float | None = None,
    ) -> list[Recalled]:
        """The owner's k active memories for a query: hybrid search (keyword search when the
        embedder cannot load), the best 3k re-ranked by relevance x (0.9 + 0.1 x strength),
        strength being importance x time decay (relevance first: see recall.effective_of);
        where several state one slot ("location"),
        the newest takes the best place among them. Each returned memory is reinforced (its
        type's boost) and its access logged with the query and its score breakdown.

        tier: one tier or several (default all). Working and short-term memories belong to a
        session: they are recalled only with their `session_id`, never without one.
        include_superseded: each memory is followed by those it superseded (archived, older
        values of its fact; scores name `superseded_by`), which are not reinforced.
        topic: only memories of this topic.
        min_cosine: the floor (default RECALL_MIN_COSINE, 0.2): a memory whose cosine to the
        query is below it is left out unless it holds every word of the query, so that fewer
        than k, or none, come back rather than unrelated ones; None keeps the k best whatever
        they are. Keyword search (no embedder) has no cosine: its matches are all kept."""
        moment = now_ts() if now is None else now
        scores = self.rank(
            query,
            owner,
            k,
            tier=tier,
            session_id=session_id,
            topic=topic,
            min_cosine=min_cosine,
            now=moment,
        )
        if not scores:
            return []
        self.store.record_access(list(scores), now=moment, query=query, scores=scores)
        records = self.store.get_many(list(scores))
        recalled = [Recalled(records[i], scores[i]) for i in scores if i in records]
        return recall.with_superseded(self.store, recalled) if include_superseded else recalled

    def rank(
        self,
        query: str,
        owner: str | None = None,
        k: int = 5,
        *,
        tier: str | Sequence[str] | None = None,
        session_id: str | None = None,
        topic: str | None = None,
        min_cosine: float | None = RECALL_MIN_COSINE,
        now: float | None = None,
    ) -> dict[int, dict[str, Any]]:
        """What recall returns, best first: memory id -> its score breakdown, without
        recall's writes (nothing reinforced, no access logged), as a read-only caller needs."""
        if k < 1:
            raise ValueError("k must be at least 1")
        moment = now_ts() if now is None else now
        memory_filter = recall.recall_filter(owner or self.owner, tier, session_id, topic)
        if memory_filter is None:
            return {}
        return recall.ranked(self.engine, query, memory_filter, k, min_cosine, moment)

    # -- the user's own commands -------------------------------------------------------------

    def forget(
        self,
        target: str | int,
        owner: str | None = None,
        *,
        reason: str | None = None,
        now: float | None = None,
    ) -> ForgetResult:
        """Archive what the user asks to forget (restorable; nothing about the request is
        stored). An int, or a string of digits, is a memory id of the owner (another
        owner's is refused). A phrase ("Forget that I work at Acme Corp", "my work at
        Acme") loses its request words and is matched against the owner's active memories:
        the nearest by cosine is archived when at or above forget_threshold and clearly
        ahead of the next (a near tie is ambiguous); without the embedder, the one memory
        holding every content word. Otherwise nothing is archived and the result lists the
        nearest. Protected memories are never archived this way: the result lists them.
        reason: the archive's reason for an id (a phrase is its own reason)."""
        moment = now_ts() if now is None else now
        who = owner or self.owner
        if isinstance(target, bool) or not isinstance(target, int | str):
            raise TypeError(f"target must be a memory id or a phrase, not {type(target).__name__}")
        if isinstance(target, str) and target.strip().isdigit():
            target = int(target.strip())
        if isinstance(target, int):
            return forgetting.forget_id(self.store, target, who, now=moment, reason=reason)
        semantic = self._semantic()
        return forgetting.forget_phrase(
            self.store,
            target,
            who,
            semantic,
            self.forget_threshold,
            now=moment,
            semantic_error=self.semantic_error if self._semantic_wanted else "semantic=False",
        )

    def list_memories(
        self, topic: str | None = None, owner: str | None = None
    ) -> list[MemoryRecord]:
        """The owner's active memories ("what do you remember about me"), by topic, then
        newest first; secrets as stored, since this is the agent's own side. Nothing is
        recorded: listing is no recall."""
        return forgetting.list_memories(self.store, owner or self.owner, topic)

    def clear(
        self, confirm: str | None = None, owner: str | None = None, *, now: float | None = None
    ) -> ClearResult:
        """Archive all the owner's active memories (reason "cleared at the user's request"),
        in two calls so that one stray call cannot: the first archives nothing and returns a
        token bound to the owner and exactly the memories it would archive; a second call
        with that token archives them. A token goes stale when a memory arrives, leaves or
        is protected in between. Protected memories stay; the result lists them."""
        moment = now_ts() if now is None else now
        return forgetting.clear(self.store, owner or self.owner, confirm, now=moment)

    # -- sessions ---------------------------------------------------------------------------

    def end_session(
        self, session_id: str, owner: str | None = None, *, now: float | None = None
    ) -> list[int]:
        """Archive the session's working and short-term memories of the owner (restorable,
        one event each, reason "session ended"); protected ones stay. Returns the archived ids."""
        recall.check_session(session_id)
        scope = MemoryFilter(
            owner=owner or self.owner,
            status="active",
            is_protected=False,
            tiers=SESSION_TIERS,
            session_id=session_id,
        )
        ids = [int(ident) for ident in self.store.ids_matching(scope)]
        if not ids:
            return []
        moment = now_ts() if now is None else now
        return self.store.forget(ids, SESSION_ENDED, now=moment).changed

    # -- apply_actions ----------------------------------------------------------------------

    def apply_actions(
        self,
        json_text: str | bytes | dict[str, Any],
        owner: str | None = None,
        *,
        session_id: str | None = None,
        now: float | None = None,
    ) -> ActionsResult:
        """Apply a memory-routing document ({"analysis", "salience_score", "memory_actions":
        [{"target_memory_bank", "action_type", "content", "entry_type", "confidence_score",
        "reasoning"}]}; docs/ARCHITECTURE.md, "The agent API"): banks WORKING, STM, LTM,
        EPISODIC become tiers working, short_term, long_term, episodic; WORKING and STM
        memories belong to `session_id`, which they need. UPDATE and DELETE change the memory
        their "memory_id" names, else the owner's most similar one in the target bank at or
        above update_threshold (a protected one is left, and the outcome names it); without
        a match UPDATE stores a new memory and DELETE changes nothing. DELETE archives
        (restorable, like forget). Every action is checked first; one bad action rejects the
        whole document, and the rest is written in one transaction."""
        moment = now_ts() if now is None else now
        who = owner or self.owner
        try:
            if session_id is not None and (not isinstance(session_id, str) or not session_id):
                raise ActionsError("session_id must be a non-empty string")
            document = rules.parse_actions(json_text)
            plans = routing.plan_actions(self._view(), document, who, session_id)
        except ActionsError as error:
            return ActionsResult(False, f"rejected: {error}; nothing was applied")
        outcomes: list[ActionOutcome] = []
        # The vector index hears of the writes after the commit (and of none on a rollback).
        with act.after_commit(self.store), self.store.transaction("applying memory actions"):
            for action, plan in plans:
                outcomes.append(act.apply_one(self.store, action, plan, moment))
        return ActionsResult(
            True,
            f"applied {len(outcomes)} actions",
            outcomes,
            document.analysis,
            document.salience_score,
        )
