"""The agent side: remember, scan_turn, recall, apply_actions, forget, list and clear on a Store.

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
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from functools import partial
from typing import TYPE_CHECKING, Any

from memory_console.agent import forgetting
from memory_console.agent.forgetting import ClearResult, ForgetResult
from memory_console.agent.rules import describe, facts, requests
from memory_console.agent.rules import remember as rules
from memory_console.agent.rules.classify import classify_type
from memory_console.agent.rules.remember import (
    ActionsError,
    Candidate,
    RoutedAction,
    find_directive,
)
from memory_console.agent.rules.speech import foreign_words
from memory_console.agent.rules.statements import split_statements
from memory_console.sensitive import credential_kinds, with_article
from memory_console.store import MemoryFilter, MemoryRecord, Store
from memory_console.store.settings import DUPLICATE_COSINE, RECALL_MIN_COSINE
from memory_console.store.vocab import SESSION_TIERS, TIERS
from memory_console.timeutil import now_ts

if TYPE_CHECKING:
    from memory_console.embed.embedder import Embedder
    from memory_console.embed.hits import SearchHit
    from memory_console.embed.search import SearchEngine
    from memory_console.embed.semantic import SemanticIndex

__all__ = [
    "ActionOutcome",
    "ActionsResult",
    "ClearResult",
    "ForgetResult",
    "MemoryAPI",
    "RememberResult",
    "Recalled",
    "ScanResult",
    "find_directive",
]

ACTOR = "api"
CANDIDATE_FACTOR = 3  # recall re-ranks this many times k of the best search hits
SESSION_ENDED = "session ended"  # the reason end_session archives with
ORIGINAL_LIMIT = 200  # metadata.original_message keeps this much of the message...
# ...or, when the message is split, this much of it around the statement: the whole message
# when it is this short, so every statement's source shows, and never more, so that what a
# message stores grows with the message, not with its statements times the message.
EXCERPT_LIMIT = 400
# One call stores at most this many statements (remember) or facts (scan_turn); the answer
# says how many more there were. A person's message to an agent holds a handful; a longer
# one is a document, and the console's importers are the way in for documents.
MAX_STATEMENTS = 50


@dataclass(frozen=True, slots=True)
class RememberResult:
    """What remember() did: stored, reinforced (a near-duplicate), refused or skipped; or,
    for a request to the memory itself, forgot (`forgotten` says what), listed (`listed`)
    or confirm (a clear waits for its token: `cleared`). A stored memory that states a new
    value of a fact names the memories it superseded (`superseded`) and the protected ones
    it left for review (`left_for_review`). A message of several statements answers with its
    first statement's result, and `parts` holds every statement's, in order; `left_out`
    counts those past MAX_STATEMENTS, which were not stored. `declined` says what a request
    in someone else's words ("the email said: forget ...") asked, and that it was not done."""

    action: str
    id: int | None
    reason: str
    topic: str | None = None
    content: str | None = None
    similarity: float | None = None
    forgotten: ForgetResult | None = None
    listed: list[MemoryRecord] | None = None
    cleared: ClearResult | None = None
    superseded: tuple[int, ...] = ()
    left_for_review: tuple[int, ...] = ()
    parts: tuple[RememberResult, ...] = ()
    left_out: int = 0  # statements past MAX_STATEMENTS: not stored
    declined: str | None = None  # a request in someone else's words: what was not done, why


@dataclass(frozen=True, slots=True)
class ScanResult:
    """One fact scan_turn found, its score and what became of it."""

    candidate: Candidate
    result: RememberResult


@dataclass(frozen=True, slots=True)
class Recalled:
    """One memory recall() returned (as it is after the reinforcement) and why it ranked."""

    record: MemoryRecord
    scores: dict[str, Any]

    @property
    def id(self) -> int:
        return self.record.id

    @property
    def content(self) -> str:
        return self.record.content


@dataclass(frozen=True, slots=True)
class ActionOutcome:
    """What one action of an apply_actions document did."""

    index: int
    action_type: str
    action: str  # stored, reinforced, updated, deleted, skipped
    id: int | None
    reason: str


@dataclass(frozen=True, slots=True)
class ActionsResult:
    """apply_actions(): all actions applied (ok) or none, with the reason."""

    ok: bool
    reason: str
    outcomes: list[ActionOutcome] = field(default_factory=list)
    analysis: str | None = None
    salience_score: float | None = None


@dataclass(slots=True)
class _Plan:
    """A decided write, carried out later inside one transaction."""

    kind: str  # store, reinforce, update, delete, skip, refuse
    reason: str
    row: dict[str, Any] | None = None
    id: int | None = None
    similarity: float | None = None
    raise_importance: float | None = None
    fields: dict[str, Any] | None = None
    found: str = ""  # how an UPDATE or DELETE found its memory, told in the outcome only
    supersede: list[int] = field(default_factory=list)  # active memories the new one replaces
    review: list[int] = field(default_factory=list)  # protected ones it would replace
    vector: Any = None  # the content's query vector, when semantic search is ready
    supersede_parts: list[int] = field(default_factory=list)  # earlier statements it replaces


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
        semantic = self._engine.semantic if self._engine is not None else None
        if semantic is not None and semantic.on_change in self.store.listeners:
            self.store.listeners.remove(semantic.on_change)
        if self._owns_store:
            self.store.close()

    # -- search readiness -------------------------------------------------------------------

    @property
    def engine(self) -> SearchEngine:
        """The search engine, with semantic search when the embedder loads (first use only)."""
        if self._engine is None:
            from memory_console.embed.embedder import ModelError
            from memory_console.embed.search import SearchEngine

            engine = SearchEngine(self.store)
            if self._semantic_wanted:
                try:
                    if self._embedder is None:
                        engine.prepare_semantic(manifest=self._manifest)
                    else:
                        from memory_console.embed.semantic import SemanticIndex

                        index = SemanticIndex(self.store, self._embedder)
                        index.sync()
                        self.store.listeners.append(index.on_change)
                        engine.semantic = index
                except (ModelError, OSError) as error:
                    self.semantic_error = str(error)
            self._engine = engine
        return self._engine

    @property
    def semantic_ready(self) -> bool:
        return self.engine.semantic_ready

    def _semantic(self) -> SemanticIndex | None:
        engine = self.engine
        return engine.semantic if engine.semantic_ready else None

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
            return self._route(request, who, moment)
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
        refused = rules.refusal(text, user_requested=asked)  # the whole message, once
        if refused is None:
            hidden = credential_kinds(extra)  # the caller's metadata, once
            if hidden:
                refused = f"its metadata holds {' and '.join(with_article(k) for k in hidden)}"
        if refused is not None:
            return _declining(RememberResult("refused", None, refused), declined)
        if directive is not None:
            extra["directive"] = directive.phrase
        self._check()
        statements = split_statements(said)
        left_out = max(0, len(statements) - MAX_STATEMENTS)
        statements = statements[:MAX_STATEMENTS]
        foreign = foreign_words(text)
        decide = partial(
            self._decide,
            owner=who,
            screened=None,
            foreign=foreign,
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
        if len(statements) < 2:
            extra["original_message"] = text[:ORIGINAL_LIMIT]
            plan = decide(said.strip(), metadata=extra)
            self._check()
            (done,) = self._write([plan], moment, [text])
            return _declining(done, declined)
        message_id = uuid.uuid4().hex[:12]
        plans: list[_Plan] = []
        excerpts = excerpts_of(text, statements, EXCERPT_LIMIT)
        for number, statement in enumerate(statements, 1):
            self._check()
            part = {
                **extra,
                "original_message": excerpts[number - 1],
                "split": split_of(message_id, number, len(statements) + left_out),
            }
            plans.append(decide(statement, metadata=part))
        within_message(plans, supersede=foreign is None)
        self._check()
        results = self._write(plans, moment, excerpts)
        first = results[0]
        if left_out:
            first = replace(
                first,
                reason=f"{first.reason}; {left_out} statements after the first "
                f"{MAX_STATEMENTS} were not stored (one call stores at most {MAX_STATEMENTS})",
            )
        return _declining(replace(first, parts=tuple(results), left_out=left_out), declined)

    def _check(self) -> None:
        """Give the caller's checkpoint a chance to stop the call (nothing is written yet)."""
        if self.checkpoint is not None:
            self.checkpoint()

    def _write(
        self, plans: list[_Plan], moment: float, queries: Sequence[str]
    ) -> list[RememberResult]:
        """Carry out decided plans in one transaction; the store's listeners (the vector
        index, which embeds new memories) hear of the writes after the commit, so the write
        lock is held for the writes alone. `queries`: each plan's text for the access log of
        a reinforcement (one for all, or one each)."""
        results: list[RememberResult] = []
        with after_commit(self.store), self.store.transaction("adding memories"):
            stored: dict[int, int] = {}  # a plan's place -> the id it stored
            for place, plan in enumerate(plans):
                query = queries[place if len(queries) > 1 else 0]
                replaced = [stored[i] for i in plan.supersede_parts if i in stored]
                result = self._carry_out(plan, moment, query=query, replaced=replaced)
                if result.action == "stored" and result.id is not None:
                    stored[place] = result.id
                results.append(result)
        return results

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

    def _decide(
        self,
        content: str,
        owner: str,
        *,
        screened: str | None,
        user_requested: bool,
        topic: str | None,
        memory_type: str | None,
        tier: str,
        importance: float,
        confidence: float,
        source: str,
        metadata: dict[str, Any],
        duplicate_scope: MemoryFilter | None = None,
        foreign: str | None = None,
    ) -> _Plan:
        """Refuse, reinforce a near-duplicate, or store: decided before anything is written.
        `screened` is the text screened for secrets and health data, with the metadata; None
        when the caller has screened both. Duplicates are looked for among the owner's
        active memories, or in `duplicate_scope`. `foreign`: what in the message is someone
        else's words (speech.foreign_words); then no memory is superseded, only left for
        review: text the user did not say archives nothing."""
        if not isinstance(content, str) or not content.strip():
            return _Plan("refuse", "nothing to remember")
        content = content.strip()
        if screened is not None:
            refused = rules.refusal(screened, user_requested=user_requested)
            if refused is not None:
                return _Plan("refuse", refused)
            hidden = credential_kinds(metadata)
            if hidden:
                named = " and ".join(with_article(kind) for kind in hidden)
                return _Plan("refuse", f"its metadata holds {named}")
        title = describe.make_title(content)
        keywords = describe.extract_keywords(content)
        keywords += [word for word in facts.asked_with(content) if word not in keywords]
        scope = duplicate_scope or MemoryFilter(owner=owner, status="active")
        vector = self._query_vector(title, content, keywords)
        unlike: list[str] = []  # how the nearest look-alike differs, when it does
        for ident, similarity in self._near_duplicates(scope, content, vector):
            found = self.store.get(ident)
            if found is None:
                continue  # deleted by another process since this one's index last saw it
            # A changed value is a new fact, however alike the wording ("555-0141" / "-0187").
            changed = facts.differences(found.content, content)
            if changed and not unlike:
                unlike = [f"not a duplicate of memory {ident} ({'; '.join(changed)})"]
            if not changed:
                how = "same text" if similarity is None else f"cosine {similarity:.3f}"
                return _Plan(
                    "reinforce",
                    f"near-duplicate of memory {ident} ({how})",
                    id=ident,
                    similarity=similarity,
                    raise_importance=importance,
                    vector=vector,
                )
        replaced = self._replaced(scope, content, vector)
        if user_requested:
            metadata["user_requested"] = True
        row = {
            "owner": owner,
            "topic": topic or describe.infer_topic(content),
            "tier": tier,
            "memory_type": memory_type or classify_type(content)[0],
            "title": title,
            "content": content,
            "keywords": keywords,
            "source": source,
            "importance": importance,
            "confidence": confidence,
            "metadata": metadata,
        }
        if source == "user_directive":
            reason = f"user directive ({metadata.get('directive', 'explicit')})"
        else:
            reason = f"{source}, importance {importance:.2f}"
        reason = "; ".join([reason, *unlike])
        plan = _Plan("store", reason, row=row, vector=vector)
        for old, why in replaced:
            if old.is_protected or foreign is not None:
                plan.review.append(old.id)
                held = "is protected" if foreign is None else f"is not superseded by {foreign}"
                plan.reason += f"; memory {old.id} {held}: left for review ({why})"
            else:
                plan.supersede.append(old.id)
                plan.reason += f"; supersedes #{old.id} ({why})"
        if plan.review:
            metadata["pending_supersede"] = plan.review  # the review pass's pair
        return plan

    def _replaced(
        self, scope: MemoryFilter, content: str, vector: Any
    ) -> list[tuple[MemoryRecord, str]]:
        """The active memories of `scope` whose fact this text restates with a new value, and
        how ("location Lyon -> Porto"): every one whose slot is this text's slot with another
        value; without a slot, when change words say so ("switched to"), the nearest memory
        at or above update_threshold whose numbers, dates or names differ."""
        stated = facts.slot_of(content)
        if stated is not None:
            seen: dict[int, MemoryRecord] = {}
            query = f"{facts.cue_words(stated.kind)} {stated.value}"
            for record, _ in self.store.keyword_search(query, scope, limit=50):
                seen[record.id] = record
            semantic = self._semantic()
            if semantic is not None and vector is not None:
                near = [ident for ident, _ in semantic.nearest_to(vector, scope, 10)]
                seen.update(self.store.get_many([i for i in near if i not in seen]))
            found = []
            for record in sorted(seen.values(), key=lambda r: r.id):
                old = facts.slot_of(record.content)
                if old is None or old.slot != stated.slot or record.status != "active":
                    continue
                if not facts.same_value(old.value, stated.value):
                    found.append((record, f"{stated.slot} {old.value} -> {stated.value}"))
            return found
        said = facts.change_words(content)
        semantic = self._semantic()
        if said is None or semantic is None or vector is None:
            return []
        nearest = semantic.nearest_to(vector, scope, 1)
        if not nearest or nearest[0][1] < self.update_threshold:
            return []
        record = self.store.require(nearest[0][0])
        changed = facts.differences(record.content, content)
        if not changed or facts.slot_of(record.content) is not None:
            return []
        return [(record, f"{said}: {'; '.join(changed)}")]

    def _query_vector(self, title: str, content: str, keywords: list[str]) -> Any:
        """The text's query vector when semantic search is ready, else None."""
        semantic = self._semantic()
        if semantic is None:
            return None
        from memory_console.embed.embedder import embedding_text

        return semantic.embedder.embed_query(embedding_text(title, content, keywords))

    def _near_duplicates(
        self, scope: MemoryFilter, content: str, vector: Any
    ) -> list[tuple[int, float | None]]:
        """(id, cosine) of the memories in `scope` this text may repeat, nearest first: the
        same normalised text (cosine None), else up to three at cosine >= DUPLICATE_COSINE
        when semantic search is ready (`vector` is the text's query vector)."""
        wanted = rules.normalise(content)
        for record, _ in self.store.keyword_search(content, scope, limit=20):
            if rules.normalise(record.content) == wanted:
                return [(record.id, None)]
        semantic = self._semantic()
        if semantic is None or vector is None:
            return []
        threshold = DUPLICATE_COSINE
        return [
            (ident, round(cosine, 4))
            for ident, cosine in semantic.nearest_to(vector, scope, 3)
            if cosine >= threshold
        ]

    def _carry_out(
        self, plan: _Plan, moment: float, *, query: str, replaced: Sequence[int] = ()
    ) -> RememberResult:
        """Write what a plan decided, inside the caller's transaction (remember's, or
        apply_actions'). The memories a plan names were read before the transaction: one
        that another writer archived or protected since is left as it now is, and said so.
        `replaced`: the ids of earlier statements of the message that this one supersedes."""
        if plan.kind == "refuse" or plan.kind == "skip":
            action = "refused" if plan.kind == "refuse" else "skipped"
            return RememberResult(action, plan.id, plan.reason)
        if plan.kind == "reinforce":
            assert plan.id is not None
            with self.store.transaction("reinforcing a memory"):
                current = self.store.get(plan.id)
                if current is None or current.status != "active":
                    return RememberResult(
                        "skipped",
                        plan.id,
                        f"memory {plan.id}, which it repeats, was archived meanwhile; "
                        "nothing written (say it again to store it)",
                    )
                if plan.raise_importance is not None and plan.raise_importance > current.importance:
                    self.store.edit(plan.id, {"importance": plan.raise_importance}, now=moment)
                scores = {"reason": "remembered again", "cosine": plan.similarity}
                self.store.record_access(
                    [plan.id],
                    now=moment,
                    query=query,
                    scores={plan.id: scores},
                    kind="reinforced",
                )
            record = self.store.require(plan.id)
            return RememberResult(
                "reinforced", plan.id, plan.reason, record.topic, record.content, plan.similarity
            )
        assert plan.row is not None
        superseded: list[int] = []
        reason = plan.reason
        with self.store.transaction("adding memories"):  # the new fact and what it supersedes
            ident = self.store.add(plan.row, now=moment)
            for old in [*plan.supersede, *replaced]:
                now_as = self.store.get(old)
                if now_as is None or now_as.status != "active":
                    continue  # archived meanwhile (or superseded by an earlier statement)
                if now_as.is_protected:
                    reason += f"; memory {old} was protected meanwhile: not superseded"
                    continue
                self.store.supersede(old, ident, now=moment)
                superseded.append(old)
        return RememberResult(
            "stored",
            ident,
            reason,
            plan.row["topic"],
            plan.row["content"],
            superseded=tuple(superseded),
            left_for_review=tuple(plan.review),
        )

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
        # Credentials anywhere in the message refuse every fact (a fact keeps an excerpt of
        # the message); health data only where the fact's own text holds it.
        secret = rules.refusal(message, user_requested=True)
        health: dict[tuple[str, bool], str | None] = {}
        foreign = foreign_words(message)
        who = owner or self.owner
        results: list[ScanResult | Candidate] = []
        plans: list[_Plan] = []
        excerpts: list[str] = []
        for found, screened, split in candidates:
            self._check()
            candidate = rules.score_candidate(found, messages, task)
            if candidate.score < rules.BACKGROUND_THRESHOLD:
                reason = f"score {candidate.score:.2f} < {rules.BACKGROUND_THRESHOLD}"
                results.append(ScanResult(candidate, RememberResult("skipped", None, reason)))
                continue
            asked = user_requested or candidate.explicit
            if (screened, asked) not in health:
                health[screened, asked] = secret or rules.refusal(screened, user_requested=asked)
            refused = health[screened, asked]
            if refused is not None:
                results.append(ScanResult(candidate, RememberResult("refused", None, refused)))
                continue
            excerpt = (
                excerpts_of(message, [candidate.content], EXCERPT_LIMIT)[0]
                if split
                else message[:ORIGINAL_LIMIT]
            )
            plan = self._decide(
                candidate.content,
                who,
                screened=None,
                user_requested=asked,
                topic=candidate.topic,
                memory_type=None,
                tier="long_term",
                importance=candidate.score,
                confidence=rules.STATED_CONFIDENCE,
                source="background_scan",
                foreign=foreign,
                metadata={
                    "original_message": excerpt,
                    "scan": {"fact": candidate.kind, "score": candidate.score},
                    "score_reasons": list(candidate.reasons),
                    **({"split": split} if split else {}),
                },
            )
            results.append(candidate)
            plans.append(plan)
            excerpts.append(excerpt)
        within_message(plans, supersede=foreign is None)
        self._check()
        written = iter(self._write(plans, moment, excerpts) if plans else [])
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
        embedder cannot load), the best 3k re-ranked by the exponential effective score
        (importance x time decay x similarity); where several state one slot ("location"),
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
        return self._with_superseded(recalled) if include_superseded else recalled

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
        memory_filter = recall_filter(owner or self.owner, tier, session_id, topic)
        if memory_filter is None:
            return {}
        engine = self.engine
        mode = "hybrid" if engine.semantic_ready else "keyword"
        hits = above_floor(
            engine.search(
                query,
                mode=mode,
                k=max(k * CANDIDATE_FACTOR, 10),
                memory_filter=memory_filter,
                now=moment,
            ),
            min_cosine,
        )
        ranked = newest_first_per_slot(
            sorted(
                ((effective_of(hit, hits, moment), hit) for hit in hits),
                key=lambda pair: (-pair[0], -pair[1].score),
            )
        )[:k]
        return {
            hit.record.id: {**hit.breakdown(), "mode": mode, "effective": round(effective, 4)}
            for effective, hit in ranked
        }

    def _with_superseded(self, recalled: list[Recalled]) -> list[Recalled]:
        """Each memory followed by the memories it superseded, the latest first, and theirs."""
        out: list[Recalled] = []
        seen = {item.id for item in recalled}
        for item in recalled:
            out.append(item)
            chain = [item.id]
            while chain:
                older = self.store.superseded_by_each(chain)
                ids = [i for n in chain for i in reversed(older.get(n, [])) if i not in seen]
                seen.update(ids)
                records = self.store.get_many(ids)
                for ident in ids:
                    newer = records[ident].superseded_by
                    out.append(Recalled(records[ident], {"superseded_by": newer}))
                chain = ids
        return out

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
        check_session(session_id)
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
            plans = self._plan_actions(document, who, session_id)
        except ActionsError as error:
            return ActionsResult(False, f"rejected: {error}; nothing was applied")
        outcomes: list[ActionOutcome] = []
        # The vector index hears of the writes after the commit (and of none on a rollback).
        with after_commit(self.store), self.store.transaction("applying memory actions"):
            for action, plan in plans:
                outcomes.append(self._apply_one(action, plan, moment))
        return ActionsResult(
            True,
            f"applied {len(outcomes)} actions",
            outcomes,
            document.analysis,
            document.salience_score,
        )

    def _plan_actions(
        self, document: rules.ActionDocument, owner: str, session_id: str | None
    ) -> list[tuple[RoutedAction, _Plan]]:
        plans: list[tuple[RoutedAction, _Plan]] = []
        stored: dict[str, int] = {}
        touched: dict[int, int] = {}
        for action in document.actions:
            if action.tier in SESSION_TIERS and session_id is None:
                if action.action_type == "STORE" or action.memory_id is None:
                    raise ActionsError(
                        f"{action.where}: a {action.bank} memory belongs to a session; "
                        "pass the session_id"
                    )
            if action.action_type == "STORE":
                assert action.content is not None
                key = rules.normalise(action.content)
                if key in stored:
                    plan = _Plan("skip", f"same content as memory_actions[{stored[key]}]")
                else:
                    stored[key] = action.index
                    plan = self._plan_store(action, document, owner, session_id)
                plans.append((action, plan))
                continue
            target = self._target_of(action, owner, session_id)
            if isinstance(target, str):  # no memory matched
                if action.action_type == "DELETE":
                    plan = _Plan("skip", f"{target}: nothing deleted")
                else:
                    plan = self._plan_store(action, document, owner, session_id)
                    plan.reason = f"{target}: stored as a new memory ({plan.reason})"
                plans.append((action, plan))
                continue
            ident, how = target
            plan = self._plan_change(action, ident, how)
            if plan.kind != "skip":
                if ident in touched:
                    raise ActionsError(
                        f"{action.where}: memory {ident} is already changed by "
                        f"memory_actions[{touched[ident]}]"
                    )
                touched[ident] = action.index
            plans.append((action, plan))
        return plans

    def _plan_store(
        self,
        action: RoutedAction,
        document: rules.ActionDocument,
        owner: str,
        session_id: str | None,
    ) -> _Plan:
        assert action.content is not None
        metadata: dict[str, Any] = {"memory_bank": action.bank}
        if action.entry_type is not None:
            metadata["entry_type"] = action.entry_type
        if action.reasoning is not None:
            metadata["reasoning"] = action.reasoning
        if action.tier in SESSION_TIERS:
            metadata["session_id"] = session_id
        plan = self._decide(
            action.content,
            owner,
            screened=action.content,
            user_requested=action.user_requested,
            topic=action.topic,
            memory_type=action.memory_type,
            tier=action.tier,
            importance=document.salience_score
            if document.salience_score is not None
            else rules.INFERRED_IMPORTANCE,
            confidence=action.confidence
            if action.confidence is not None
            else rules.INFERRED_CONFIDENCE,
            source="session_review",
            metadata=metadata,
            duplicate_scope=bank_scope(owner, action.tier, session_id, permanent=True),
        )
        if plan.kind == "refuse":
            raise ActionsError(f"{action.where}: {plan.reason}")
        return plan

    def _target_of(
        self, action: RoutedAction, owner: str, session_id: str | None
    ) -> tuple[int, str | None] | str:
        """(id, how it was found) of the memory an UPDATE or DELETE changes, or why none
        matched. memory_id wins; else the same normalised text, else the most similar memory
        of the target bank at or above update_threshold (the embedder must load)."""
        if action.memory_id is not None:
            # Another owner's id is answered as an absent one: no caller learns which exist.
            record = forgetting.owned(self.store, action.memory_id, owner)
            if record is None:
                raise ActionsError(
                    f"{action.where}: memory {action.memory_id}: {forgetting.NOT_FOUND}"
                )
            if record.status != "active":
                raise ActionsError(f"{action.where}: memory {record.id} is {record.status}")
            return record.id, None
        assert action.content is not None
        scope = bank_scope(owner, action.tier, session_id)
        wanted = rules.normalise(action.content)
        matches = [
            record.id
            for record, _ in self.store.keyword_search(action.content, scope, limit=50)
            if rules.normalise(record.content) == wanted
        ]
        if len(matches) > 1:
            raise ActionsError(
                f"{action.where}: its content matches {len(matches)} memories "
                f"({', '.join(map(str, matches))}); name one with memory_id"
            )
        if matches:
            return matches[0], "same text"
        semantic = self._semantic()
        if semantic is None:
            raise ActionsError(
                f"{action.where}: no memory of the {action.bank} bank has this text, and "
                f"finding one by meaning needs the embedder ({self.semantic_error or 'off'}); "
                "name the memory with memory_id"
            )
        from memory_console.embed.embedder import embedding_text

        text = embedding_text(
            describe.make_title(action.content),
            action.content,
            describe.extract_keywords(action.content),
        )
        nearest = semantic.nearest_to(semantic.embedder.embed_query(text), scope, 1)
        if nearest and nearest[0][1] >= self.update_threshold:
            return nearest[0][0], f"cosine {nearest[0][1]:.3f}"
        closest = f"; the closest, {nearest[0][0]}, at {nearest[0][1]:.3f}" if nearest else ""
        return (
            f"no memory of the {action.bank} bank at cosine >= {self.update_threshold:g}{closest}"
        )

    def _plan_change(self, action: RoutedAction, ident: int, how: str | None) -> _Plan:
        hidden = credential_kinds(action.reasoning)
        if hidden:
            named = " and ".join(with_article(kind) for kind in hidden)
            raise ActionsError(f"{action.where}: its reasoning holds {named}")
        found = f" (memory {ident}, {how})" if how else ""
        if how is not None and self.store.require(ident).is_protected:
            verb = "deleted" if action.action_type == "DELETE" else "updated"
            return _Plan(
                "skip",
                f"memory {ident} ({how}) is protected: not {verb} without its memory_id",
                id=ident,
            )
        if action.action_type == "DELETE":
            reason = action.reasoning or "deleted by the agent"
            return _Plan("delete", reason, id=ident, found=found)
        assert action.content is not None
        refused = rules.refusal(action.content, user_requested=action.user_requested)
        if refused is not None:
            raise ActionsError(f"{action.where}: {refused}")
        fields: dict[str, Any] = {
            "content": action.content,
            "title": describe.make_title(action.content),
            "keywords": describe.extract_keywords(action.content),
            "tier": action.tier,
        }
        if action.typed:
            fields["memory_type"] = action.memory_type
        if action.topic is not None:
            fields["topic"] = action.topic
        if action.confidence is not None:
            fields["confidence"] = action.confidence
        reason = action.reasoning or "updated by the agent"
        return _Plan("update", reason, id=ident, fields=fields, found=found)

    def _apply_one(self, action: RoutedAction, plan: _Plan, moment: float) -> ActionOutcome:
        if plan.kind == "update":
            assert plan.id is not None and plan.fields is not None
            self.store.edit(plan.id, plan.fields, now=moment)
            reason = plan.reason + plan.found
            return ActionOutcome(action.index, action.action_type, "updated", plan.id, reason)
        if plan.kind == "delete":
            assert plan.id is not None
            self.store.forget([plan.id], plan.reason, now=moment)
            reason = plan.reason + plan.found
            return ActionOutcome(action.index, action.action_type, "deleted", plan.id, reason)
        result = self._carry_out(plan, moment, query=action.content or "")
        return ActionOutcome(
            action.index, action.action_type, result.action, result.id, plan.reason
        )


def _declining(result: RememberResult, declined: str | None) -> RememberResult:
    """The result with what remember declined to do (a request in someone else's words)."""
    if declined is None:
        return result
    return replace(result, reason=f"{result.reason}; {declined}", declined=declined)


@contextmanager
def after_commit(store: Store) -> Iterator[None]:
    """Hold back the store's change notices until the block ends without an error, then give
    them in order: a listener (the vector index embeds each new memory) runs after the commit,
    outside the write lock. On an error the writes are rolled back and their notices dropped."""
    held: list[tuple[str, list[int]]] = []
    listeners = store.listeners
    store.listeners = [lambda kind, ids: held.append((kind, list(ids)))]
    try:
        yield
    finally:
        store.listeners = listeners
    for kind, ids in held:
        store.notify(kind, ids)


def excerpts_of(message: str, statements: Sequence[str], limit: int) -> list[str]:
    """Each statement's part of the message, for its metadata.original_message: the whole
    message when it is at most `limit` characters, else `limit` characters around where the
    statement stands in it (an ellipsis marks each cut). Statements are found in order."""
    if len(message) <= limit:
        return [message] * len(statements)
    width = limit - 2  # room for the ellipses
    out: list[str] = []
    cursor = 0
    for statement in statements:
        # Its first letter may have been capitalised, and a stop added at its end.
        probe = statement.strip()[1:41].rstrip(".!")
        found = message.find(probe, cursor) if probe else -1
        at = max(found - 1, 0) if found >= 0 else cursor
        cursor = at + 1 if found >= 0 else cursor
        begin = max(0, min(at - width // 4, len(message) - width))
        end = min(len(message), begin + width)
        cut_before, cut_after = ("…" if begin else ""), ("…" if end < len(message) else "")
        out.append(cut_before + message[begin:end] + cut_after)
    return out


def within_message(plans: list[_Plan], *, supersede: bool = True) -> None:
    """Decide among one message's statements, each decided against the store alone: one that
    repeats an earlier statement (the same text, or a near-duplicate with no fact differing)
    is skipped, one that states a new value of an earlier one's slot supersedes it (unless
    supersede=False), and an active memory is superseded by the first statement that
    replaces it only."""
    kept: list[int] = []
    taken: set[int] = set()
    for place, plan in enumerate(plans):
        if plan.kind != "store":
            continue
        repeated = next((earlier for earlier in kept if _repeats(plans[earlier], plan)), None)
        if repeated is not None:
            plans[place] = _Plan("skip", f"repeats statement {repeated + 1} of this message")
            continue
        stated = facts.slot_of(_content(plan)) if supersede else None
        for earlier in kept if stated is not None else []:
            old = facts.slot_of(_content(plans[earlier]))
            if old is None or stated is None or old.slot != stated.slot:
                continue
            if not facts.same_value(old.value, stated.value):
                plan.supersede_parts.append(earlier)
                plan.reason += (
                    f"; supersedes statement {earlier + 1} of this message "
                    f"({stated.slot} {old.value} -> {stated.value})"
                )
        plan.supersede = [ident for ident in plan.supersede if ident not in taken]
        taken.update(plan.supersede)
        kept.append(place)


def _content(plan: _Plan) -> str:
    return str(plan.row["content"]) if plan.row is not None else ""


def _repeats(earlier: _Plan, later: _Plan) -> bool:
    """Whether a statement repeats an earlier one of its message."""
    earlier_text, later_text = _content(earlier), _content(later)
    if rules.normalise(earlier_text) == rules.normalise(later_text):
        return True
    if earlier.vector is None or later.vector is None:
        return False
    import numpy as np

    norms = float(np.linalg.norm(earlier.vector) * np.linalg.norm(later.vector))
    cosine = float(np.dot(earlier.vector, later.vector)) / max(norms, 1e-12)
    return cosine >= DUPLICATE_COSINE and not facts.differences(earlier_text, later_text)


def bank_scope(
    owner: str, tier: str, session_id: str | None, *, permanent: bool = False
) -> MemoryFilter:
    """The owner's active memories of a bank (of the session, for working and short-term);
    permanent=True widens long_term and episodic to both (a fact is one fact in either)."""
    if tier in SESSION_TIERS:
        return MemoryFilter(owner=owner, status="active", tiers=(tier,), session_id=session_id)
    tiers = tuple(t for t in TIERS if t not in SESSION_TIERS) if permanent else (tier,)
    return MemoryFilter(owner=owner, status="active", tiers=tiers)


def check_session(session_id: str | None) -> None:
    if session_id is not None and (not isinstance(session_id, str) or not session_id.strip()):
        raise ValueError("session_id must be a non-empty string")


def split_of(message_id: str, part: int, parts: int) -> dict[str, Any]:
    """metadata.split of one statement of a message: the message's id, which part, of how many."""
    return {"message_id": message_id, "part": part, "of": parts}


def statement_candidates(
    found: list[Candidate], message_id: str
) -> list[tuple[Candidate, str, dict[str, Any] | None]]:
    """scan_turn's candidates with an explicit one of several statements cut into one per
    statement: (candidate, the text screened for it, its metadata.split or None). A statement
    is screened with its whole directive, so a secret in one refuses them all."""
    out: list[tuple[Candidate, str, dict[str, Any] | None]] = []
    for candidate in found:
        statements = split_statements(candidate.content) if candidate.explicit else []
        if len(statements) < 2:
            out.append((candidate, candidate.content, None))
            continue
        for number, statement in enumerate(statements, 1):
            part = Candidate(
                candidate.kind, statement, statement, describe.infer_topic(statement), True
            )
            out.append((part, candidate.content, split_of(message_id, number, len(statements))))
    return out


def recall_filter(
    owner: str,
    tier: str | Sequence[str] | None,
    session_id: str | None,
    topic: str | None = None,
) -> MemoryFilter | None:
    """The active memories recall may return: the asked tiers, working and short-term ones
    only with a session (and then only that session's); None when nothing is left."""
    check_session(session_id)
    wanted = TIERS if tier is None else ((tier,) if isinstance(tier, str) else tuple(tier))
    unknown = [name for name in wanted if name not in TIERS]
    if unknown:
        raise ValueError(f"unknown tier {unknown[0]!r}; one of {', '.join(TIERS)}")
    if session_id is None:
        wanted = tuple(name for name in wanted if name not in SESSION_TIERS)
    if not wanted:
        return None
    return MemoryFilter(
        owner=owner,
        status="active",
        topic=topic,
        tiers=None if set(wanted) == set(TIERS) else tuple(dict.fromkeys(wanted)),
        session_id=session_id,
    )


def newest_first_per_slot(
    ranked: list[tuple[float, SearchHit]],
) -> list[tuple[float, SearchHit]]:
    """The ranking with the memories of one slot (docs/ARCHITECTURE.md, "Facts that change")
    reordered among the places they hold, newest first: when an old and a new value of a fact
    are both active, the new one takes the better place, and the rest stays as ranked."""
    places: dict[str, list[int]] = {}
    for position, (_, hit) in enumerate(ranked):
        stated = facts.slot_of(hit.record.content)
        if stated is not None:
            places.setdefault(stated.slot, []).append(position)
    out = list(ranked)
    for positions in places.values():
        if len(positions) > 1:
            newest = sorted(
                (ranked[p] for p in positions),
                key=lambda pair: (-pair[1].record.created_at, -pair[1].record.id),
            )
            for position, pair in zip(positions, newest, strict=True):
                out[position] = pair
    return out


def above_floor(hits: list[SearchHit], min_cosine: float | None) -> list[SearchHit]:
    """The hits recall may return: at or above min_cosine, holding every word of the query,
    or without a cosine (keyword search); all of them when min_cosine is None."""
    if min_cosine is None:
        return hits
    return [hit for hit in hits if hit.cosine is None or hit.cosine >= min_cosine or hit.all_words]


def effective_of(hit: SearchHit, hits: Sequence[SearchHit], now: float) -> float:
    """The exponential policy's effective score of a hit: importance x time decay x similarity.
    Similarity is the cosine in hybrid search, else the hit's bm25 relative to the best one."""
    from memory_console.policies.exponential import effective_score

    if hit.cosine is not None or hit.effective is not None:
        return float(hit.effective or 0.0)
    best = min((h.bm25 for h in hits if h.bm25 is not None), default=None)
    similarity = hit.bm25 / best if hit.bm25 is not None and best else 0.0
    record = hit.record
    return float(effective_score([record.importance], [record.created_at], now)[0] * similarity)
