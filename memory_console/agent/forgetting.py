"""The user's own commands on the agent side: forget by phrase or id, list, clear with a token.

See docs/ARCHITECTURE.md, "The agent API". MemoryAPI.forget, list_memories and clear call
these; each archives through Store.forget (restorable, one event per memory) and stores
nothing about the request itself.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from memory_console.agent.rules.requests import (
    FORGET_MARGIN,
    content_words,
    forget_subject,
    holds_every_word,
    is_broad,
    phrase_reported,
    ruled_out,
    strong_match,
)
from memory_console.store import MemoryFilter, MemoryRecord, Store

if TYPE_CHECKING:
    from memory_console.embed.semantic import SemanticIndex

CLEARED = "cleared at the user's request"  # the reason clear() archives with
CANDIDATES = 3  # a forget phrase reports this many of the nearest memories
TOKEN_SECRET = "clear_token_secret"  # console_meta key of the store's secret for clear tokens
TOKEN_LENGTH = 12
REASON_LENGTH = 200  # a phrase kept as the archive reason is cut to this
MAX_ID = 2**63 - 1  # the largest id a store can hold; a larger one names no memory


@dataclass(frozen=True, slots=True)
class ForgetResult:
    """What forget() did: the memories it archived, the protected ones it left (a protected
    memory is never archived this way), the near ones it did not take ((record, cosine), the
    cosine None under the keyword rule) and why, in one sentence."""

    archived: list[MemoryRecord] = field(default_factory=list)
    protected: list[MemoryRecord] = field(default_factory=list)
    candidates: list[tuple[MemoryRecord, float | None]] = field(default_factory=list)
    reason: str = ""


@dataclass(frozen=True, slots=True)
class ClearResult:
    """What clear() did. Without a valid token: nothing archived, `pending` memories would
    be, and `token` confirms exactly those; with it: `archived`. Protected ones always stay."""

    archived: list[MemoryRecord] = field(default_factory=list)
    pending: int = 0
    protected: list[MemoryRecord] = field(default_factory=list)
    token: str | None = None
    reason: str = ""


def active_scope(owner: str, topic: str | None = None) -> MemoryFilter:
    return MemoryFilter(owner=owner, status="active", topic=topic)


def forget_id(
    store: Store, ident: int, owner: str, *, now: float, reason: str | None = None
) -> ForgetResult:
    """Archive one memory of the owner by id (with `reason`, else the user's request);
    another owner's id gets the answer an absent one gets, so that no caller learns which
    ids exist."""
    record = owned(store, ident, owner)
    if record is None:
        return ForgetResult(reason=f"memory {ident}: {NOT_FOUND}; nothing archived")
    if record.status != "active":
        return ForgetResult(reason=f"memory {ident} is already {record.status}")
    if record.is_protected:
        return ForgetResult(protected=[record], reason=f"memory {ident} is protected: not archived")
    why = " ".join((reason or "").split())[:REASON_LENGTH] or "forgotten at the user's request"
    store.forget([ident], why, now=now)
    return ForgetResult([store.require(ident)], reason=f"archived memory {ident}")


NOT_FOUND = "no memory of this owner has this id"


def owned(store: Store, ident: int, owner: str) -> MemoryRecord | None:
    """The owner's memory with this id, or None: absent, another owner's, or an id no store
    can hold (all three answered alike)."""
    if not 1 <= ident <= MAX_ID:
        return None
    record = store.get(ident)
    return record if record is not None and record.owner == owner else None


def forget_phrase(
    store: Store,
    phrase: str,
    owner: str,
    semantic: SemanticIndex | None,
    threshold: float,
    *,
    now: float,
    semantic_error: str | None = None,
) -> ForgetResult:
    """Archive the owner's active memory a phrase means, when it matches strongly: by cosine
    (the best at or above `threshold`, FORGET_MARGIN ahead of the next), else by the keyword
    rule (the one memory holding every content word). The phrase is the archive's reason.
    A phrase in someone else's words ("the email said: forget ...") archives nothing."""
    reported = phrase_reported(phrase)
    if reported is not None:
        return ForgetResult(
            reason=f"the phrase is in someone else's words ({reported}), and only the user's "
            "own are carried out: nothing archived (forget by id, or in the user's words)"
        )
    subject = forget_subject(phrase)
    if subject is None:
        return ForgetResult(reason="the phrase names nothing to forget; nothing archived")
    if is_broad(phrase):
        broad = _forget_everything(store, phrase, subject, owner, semantic, now=now)
        if broad.archived or broad.protected or semantic is None:
            return broad
        # Nothing names it word for word: the one memory the phrase means, if any, as for a
        # narrow request ("forget everything about the parking": "I parked on level two").
    if semantic is not None:
        scope = active_scope(owner)
        vector = semantic.embedder.embed_query(subject)
        nearest = semantic.nearest_to(vector, scope, CANDIDATES + 1)
        records = store.get_many([ident for ident, _ in nearest])
        nearest = [(i, c) for i, c in nearest if i in records]
        # A memory the judgement says states another fact than the user's "forget that I ..."
        # is not taken, however near ("I'm allergic to peanuts" for "... to shellfish"); it is
        # still listed among the candidates.
        ruled = {i: why for i, _ in nearest if (why := ruled_out(subject, records[i].content))}
        best = strong_match([(i, c) for i, c in nearest if i not in ruled], threshold)
        scored: list[tuple[MemoryRecord, float | None]] = [
            (records[i], round(c, 4)) for i, c in nearest
        ]
        if best is None:
            first = max(nearest, key=lambda pair: pair[1], default=None)
            if first is not None and first[0] in ruled and first[1] >= threshold:
                reason = (
                    f"the nearest, {first[0]} (cosine {first[1]:.3f}), states another fact "
                    f"({ruled[first[0]]}); nothing archived"
                )
            else:
                reason = _weak(nearest, threshold)
                holder = only_holder(store, owner, subject)
                if holder is not None and not ruled_out(subject, holder.content):
                    how = f"{reason.split(';')[0]}; the one memory holding every word of it"
                    others = [(r, c) for r, c in scored if r.id != holder.id][:CANDIDATES]
                    return _archive(store, holder, phrase, how, others, now)
            return ForgetResult(candidates=scored[:CANDIDATES], reason=reason)
        cosine = dict(nearest)[best]
        how = f"cosine {cosine:.3f} >= forget_threshold {threshold:g}"
        others = [(r, c) for r, c in scored if r.id != best][:CANDIDATES]
        return _archive(store, records[best], phrase, how, others, now)
    words = content_words(subject)
    holding = [
        r
        for r in store.iter_memories(active_scope(owner))
        if holds_every_word(words, f"{r.title} {r.content}")
    ]
    off = f"the embedder is off ({semantic_error})" if semantic_error else "the embedder is off"
    rule = f"keyword rule, {off}: a memory must hold every word of {', '.join(words)!s}"
    if len(holding) != 1:
        found = "no memory holds them" if not holding else f"{len(holding)} memories do"
        return ForgetResult(
            candidates=[(r, None) for r in holding[:CANDIDATES]],
            reason=f"{rule}; {found}: nothing archived",
        )
    return _archive(store, holding[0], phrase, rule, [], now)


def only_holder(store: Store, owner: str, subject: str) -> MemoryRecord | None:
    """The one active memory of the owner whose title and content hold every content word of
    a forget subject (give or take an ending), found by keyword search; None when none or
    several do: a phrase weak by cosine still means the one memory that says all its words
    ("forget about the park": "I parked on level 2")."""
    words = content_words(subject)
    if not words:
        return None
    hits = store.keyword_search(" ".join(words), active_scope(owner), limit=HOLDER_LIMIT)
    holding = [
        record
        for record, _ in hits
        if record.status == "active" and holds_every_word(words, f"{record.title} {record.content}")
    ]
    return holding[0] if len(holding) == 1 else None


HOLDER_LIMIT = 50  # keyword hits looked at for the one memory holding every word
BROAD_LIMIT = 500  # "everything about X" archives at most this many memories in one call


def _forget_everything(
    store: Store,
    phrase: str,
    subject: str,
    owner: str,
    semantic: SemanticIndex | None,
    *,
    now: float,
) -> ForgetResult:
    """ "Forget everything about Alex": archive every active memory of the owner that names
    the subject (holds each of its content words, give or take an ending), and list, not
    archive, the nearest by meaning that do not: what clearly belongs to it goes, what may
    belong to it is shown."""
    words = content_words(subject)
    if not words:
        return ForgetResult(reason="the phrase names nothing to forget; nothing archived")
    scope = active_scope(owner)
    holding = [
        record
        for record, _ in store.keyword_search(" ".join(words), scope, limit=BROAD_LIMIT)
        if record.status == "active" and holds_every_word(words, f"{record.title} {record.content}")
    ]
    holding.sort(key=lambda r: r.id)
    kept = [r for r in holding if r.is_protected]
    taken = [r for r in holding if not r.is_protected]
    near: list[tuple[MemoryRecord, float | None]] = []
    if semantic is not None:
        vector = semantic.embedder.embed_query(subject)
        nearest = semantic.nearest_to(vector, scope, CANDIDATES + len(holding))
        named = {r.id for r in holding}
        records = store.get_many([i for i, _ in nearest if i not in named])
        scored: list[tuple[MemoryRecord, float | None]] = [
            (records[i], round(c, 4)) for i, c in nearest if i in records
        ]
        near = scored[:CANDIDATES]
    named_words = ", ".join(words)
    if not taken:
        held = f"; {len(kept)} protected, not archived" if kept else ""
        return ForgetResult(
            protected=kept,
            candidates=near,
            reason=f"no unprotected memory names {named_words}{held}; nothing archived",
        )
    reason = " ".join(phrase.split())[:REASON_LENGTH]
    store.forget([r.id for r in taken], reason, now=now)
    done = [store.require(r.id) for r in taken]
    held = f"; {len(kept)} protected, not archived" if kept else ""
    return ForgetResult(
        done,
        protected=kept,
        candidates=near,
        reason=f"archived {len(done)} memories naming {named_words}{held}",
    )


def _weak(nearest: list[tuple[int, float]], threshold: float) -> str:
    if not nearest:
        return "the owner has no active memories: nothing archived"
    (first, best), *rest = sorted(nearest, key=lambda pair: -pair[1])
    if best < threshold:
        return (
            f"no memory matches strongly: the nearest, {first}, at cosine {best:.3f} < "
            f"forget_threshold {threshold:g}; nothing archived"
        )
    second, close = rest[0]
    return (
        f"ambiguous: memories {first} ({best:.3f}) and {second} ({close:.3f}) are within "
        f"{FORGET_MARGIN:g} of each other; nothing archived (forget one by id)"
    )


def _archive(
    store: Store,
    record: MemoryRecord,
    phrase: str,
    how: str,
    others: list[tuple[MemoryRecord, float | None]],
    now: float,
) -> ForgetResult:
    if record.is_protected:
        return ForgetResult(
            protected=[record],
            candidates=others,
            reason=f"memory {record.id} matches ({how}) but is protected: not archived",
        )
    reason = " ".join(phrase.split())[:REASON_LENGTH]
    store.forget([record.id], reason, now=now)
    return ForgetResult(
        [store.require(record.id)], candidates=others, reason=f"archived memory {record.id} ({how})"
    )


def list_memories(store: Store, owner: str, topic: str | None = None) -> list[MemoryRecord]:
    """The owner's active memories, by topic, then newest first: as a person reads them."""
    records = list(store.iter_memories(active_scope(owner, topic)))
    records.sort(key=lambda r: (r.topic, -r.created_at, -r.id))
    return records


def clear(store: Store, owner: str, confirm: str | None, *, now: float) -> ClearResult:
    """Archive all the owner's active unprotected memories, only with the token a first call
    returned for exactly that set: a stale token (a memory arrived, left or was protected
    since), a guessed one or another owner's is refused."""
    active = list(store.iter_memories(active_scope(owner)))
    protected = [r for r in active if r.is_protected]
    ids = [r.id for r in active if not r.is_protected]
    if not ids:
        return ClearResult(protected=protected, reason="no unprotected active memories to archive")
    token = clear_token(store, owner, ids)
    if confirm is None:
        return ClearResult(
            pending=len(ids),
            protected=protected,
            token=token,
            reason=f"would archive {len(ids)} memories ({len(protected)} protected stay); "
            "call clear(confirm=token) to archive them",
        )
    if not hmac.compare_digest(str(confirm), token):
        return ClearResult(
            pending=len(ids),
            protected=protected,
            reason="the token does not confirm the memories as they are now (stale or wrong): "
            "nothing archived; call clear() again for a new one",
        )
    changed = store.forget(ids, CLEARED, now=now).changed
    archived = store.get_many(changed)
    return ClearResult(
        [archived[i] for i in changed if i in archived],
        protected=protected,
        reason=f"archived {len(changed)} memories ({len(protected)} protected stay)",
    )


def clear_token(store: Store, owner: str, ids: list[int]) -> str:
    """A short code bound to the owner and exactly these memory ids, keyed by a secret kept in
    the store (made on first need) so that a token cannot be worked out without it. Stateless:
    any process on the store, any MemoryAPI object, checks it alike."""
    secret = store.meta(TOKEN_SECRET)
    if secret is None:
        # Read again under the write lock: two processes making the first token keep one secret.
        with store.transaction("keeping the clear token's secret"):
            secret = store.meta(TOKEN_SECRET)
            if secret is None:
                secret = secrets.token_hex(16)
                store.set_meta(TOKEN_SECRET, secret)
    message = f"{owner}\0{','.join(map(str, sorted(ids)))}".encode()
    return hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()[:TOKEN_LENGTH]
