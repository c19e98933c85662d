"""The agent's decision steps: what a write will be, decided before anything is written.

See docs/ARCHITECTURE.md, "The agent API". A text is refused, reinforces a near-duplicate, or
is stored (superseding, or leaving for review, the memories whose fact it states anew); the
statements of one message are then decided among themselves. The result is a Plan, which
agent/act.py carries out inside one transaction: nothing here writes, and no write lock is
held while text is analysed or embedded.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from memory_console.agent.rules import describe, facts, relation
from memory_console.agent.rules import remember as rules
from memory_console.agent.rules.classify import classify_type
from memory_console.sensitive import credential_kinds, with_article
from memory_console.store import MemoryFilter, MemoryRecord, Store
from memory_console.store.settings import DUPLICATE_COSINE
from memory_console.store.vocab import SESSION_TIERS, TIERS

if TYPE_CHECKING:
    from memory_console.embed.semantic import SemanticIndex

NEIGHBOURS = 5  # the nearest memories a statement is judged against for a newer value
# The cosine (query to stored memory) from which a neighbour is judged at all: low, since the
# judgement, not the cosine, decides ("I like apples" to "I like bananas" is 0.51).
NEIGHBOUR_FLOOR = 0.45


@dataclass(slots=True)
class Plan:
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


@dataclass(frozen=True, slots=True)
class StoreView:
    """What a decision reads: the store, its semantic index (loaded on first need; None when
    semantic search is off or could not load, and then `semantic_error` says why) and the
    cosine at which a memory is the one a change of fact or an UPDATE means."""

    store: Store
    semantic: Callable[[], SemanticIndex | None]
    semantic_error: Callable[[], str | None]
    update_threshold: float


def screen(text: str, metadata: dict[str, Any], *, user_requested: bool) -> str | None:
    """Why a text must not be stored (credentials; health data unless the user asked), in
    itself or in the caller's metadata, or None. A message is screened once, for all its
    statements; an apply_actions entry on its own."""
    refused = rules.refusal(text, user_requested=user_requested)
    if refused is None:
        hidden = credential_kinds(metadata)
        if hidden:
            refused = f"its metadata holds {' and '.join(with_article(k) for k in hidden)}"
    return refused


def decide(
    view: StoreView,
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
) -> Plan:
    """Refuse, reinforce a near-duplicate, or store: decided before anything is written.
    `screened` is the text screened for secrets and health data, with the metadata; None
    when the caller has screened both. Duplicates are looked for among the owner's
    active memories, or in `duplicate_scope`. `foreign`: what in the message is someone
    else's words (speech.foreign_words); then no memory is superseded, only left for
    review: text the user did not say archives nothing."""
    if not isinstance(content, str) or not content.strip():
        return Plan("refuse", "nothing to remember")
    content = content.strip()
    if screened is not None:
        refused = screen(screened, metadata, user_requested=user_requested)
        if refused is not None:
            return Plan("refuse", refused)
    title = describe.make_title(content)
    keywords = describe.extract_keywords(content)
    keywords += [word for word in facts.asked_with(content) if word not in keywords]
    scope = duplicate_scope or MemoryFilter(owner=owner, status="active")
    vector = query_vector(view, title, content, keywords)
    repeated, unlike = _repeated(view, scope, content, vector, importance)
    if repeated is not None:
        return repeated
    replaced = replaced_by(view, scope, content, vector)
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
    plan = Plan("store", "; ".join([reason, *unlike]), row=row, vector=vector)
    _supersede(plan, replaced, foreign)
    return plan


def _repeated(
    view: StoreView, scope: MemoryFilter, content: str, vector: Any, importance: float
) -> tuple[Plan | None, list[str]]:
    """(the reinforcement of the memory this text repeats, or None; how the nearest
    look-alike differs, when it does): a look-alike whose numbers, dates, names or slot
    value differ states another fact, however alike the wording ("555-0141" / "-0187")."""
    unlike: list[str] = []
    for ident, similarity in near_duplicates(view, scope, content, vector):
        found = view.store.get(ident)
        if found is None:
            continue  # deleted by another process since this one's index last saw it
        judged = relation.relate(found.content, content)
        repeats = repeats_fact(judged)
        if not repeats and not unlike:
            unlike = [f"not a duplicate of memory {ident} ({judged.why})"]
        if repeats:
            how = "same text" if similarity is None else f"cosine {similarity:.3f}"
            plan = Plan(
                "reinforce",
                f"near-duplicate of memory {ident} ({how})",
                id=ident,
                similarity=similarity,
                raise_importance=importance,
                vector=vector,
            )
            return plan, unlike
    return None, unlike


def repeats_fact(judged: relation.Relation) -> bool:
    """Whether a near-duplicate (by cosine) repeats the fact: the same one, or different only
    by a guess too weak to keep them apart (nothing concrete differs)."""
    return judged.kind == relation.SAME or (
        judged.kind == relation.DIFFERENT and not judged.confident
    )


def _supersede(
    plan: Plan, replaced: list[tuple[MemoryRecord, relation.Relation]], foreign: str | None
) -> None:
    """The memories a stored plan replaces: superseded when the judgement is confident, else
    (or when protected, or when the text is someone else's words) left for review, the review
    pass's pair in its metadata."""
    assert plan.row is not None
    for old, judged in replaced:
        if old.is_protected or foreign is not None or not judged.confident:
            plan.review.append(old.id)
            if old.is_protected:
                held = "is protected"
            elif foreign is not None:
                held = f"is not superseded by {foreign}"
            else:
                held = "may be an older value"
            plan.reason += f"; memory {old.id} {held}: left for review ({judged.why})"
        else:
            plan.supersede.append(old.id)
            plan.reason += f"; supersedes #{old.id} ({judged.why})"
    if plan.review:
        plan.row["metadata"]["pending_supersede"] = plan.review  # the review pass's pair


def replaced_by(
    view: StoreView, scope: MemoryFilter, content: str, vector: Any
) -> list[tuple[MemoryRecord, relation.Relation]]:
    """The active memories of `scope` whose fact this text restates with a new value, and
    the judgement ("location Lyon -> Porto"): every one whose slot is this text's slot with
    another value; without a slot, each of the nearest at or above update_threshold that
    the relation judgement (agent/rules/relation.py) takes for an older value."""
    stated = facts.slot_of(content)
    if stated is not None:
        return _same_slot(view, scope, stated, vector)
    said = relation.without_opening(content)
    if said != content and vector is not None:
        # "Actually, sorry, I meant I like apples": the fact is looked for without the words
        # that open the correction, which only pull it away from the value it corrects.
        vector = query_vector(view, describe.make_title(said), said, [])
    found = []
    for place, record in enumerate(_neighbours(view, scope, content, vector)):
        if facts.slot_of(record.content) is not None:
            continue  # a slot's value changes only by a statement of that slot
        judged = relation.relate(record.content, content)
        if judged.kind != relation.NEWER:
            continue
        if judged.nearest_only and place > 0:
            judged = dataclasses.replace(judged, confident=False)
        found.append((record, judged))
    return found


def _neighbours(
    view: StoreView, scope: MemoryFilter, content: str, vector: Any
) -> list[MemoryRecord]:
    """The active memories of `scope` a text may state anew: the nearest by meaning at or
    above NEIGHBOUR_FLOOR (by keywords when semantic search is off), nearest first."""
    semantic = view.semantic()
    if semantic is None or vector is None:
        hits = view.store.keyword_search(content, scope, limit=NEIGHBOURS)
        return [record for record, _ in hits if record.status == "active"]
    near = [
        ident
        for ident, cosine in semantic.nearest_to(vector, scope, NEIGHBOURS)
        if cosine >= NEIGHBOUR_FLOOR
    ]
    records = view.store.get_many(near)
    return [records[i] for i in near if i in records and records[i].status == "active"]


def _same_slot(
    view: StoreView, scope: MemoryFilter, stated: facts.SlotValue, vector: Any
) -> list[tuple[MemoryRecord, relation.Relation]]:
    """The active memories of `scope` that state the slot with another value: looked for by
    the slot's cue words and value, and among the ten nearest by meaning."""
    seen: dict[int, MemoryRecord] = {}
    query = f"{facts.cue_words(stated.kind)} {stated.value}"
    for record, _ in view.store.keyword_search(query, scope, limit=50):
        seen[record.id] = record
    semantic = view.semantic()
    if semantic is not None and vector is not None:
        near = [ident for ident, _ in semantic.nearest_to(vector, scope, 10)]
        seen.update(view.store.get_many([i for i in near if i not in seen]))
    found = []
    for record in sorted(seen.values(), key=lambda r: r.id):
        old = facts.slot_of(record.content)
        if old is None or old.slot != stated.slot or record.status != "active":
            continue
        if not facts.same_value(old.value, stated.value):
            why = f"{stated.slot} {old.value} -> {stated.value}"
            found.append((record, relation.Relation(relation.NEWER, True, why)))
    return found


def query_vector(view: StoreView, title: str, content: str, keywords: list[str]) -> Any:
    """The text's query vector when semantic search is ready, else None."""
    semantic = view.semantic()
    if semantic is None:
        return None
    from memory_console.embed.embedder import embedding_text

    return semantic.embedder.embed_query(embedding_text(title, content, keywords))


def near_duplicates(
    view: StoreView, scope: MemoryFilter, content: str, vector: Any
) -> list[tuple[int, float | None]]:
    """(id, cosine) of the memories in `scope` this text may repeat, nearest first: the
    same normalised text (cosine None), else up to three at cosine >= DUPLICATE_COSINE
    when semantic search is ready (`vector` is the text's query vector)."""
    wanted = rules.normalise(content)
    for record, _ in view.store.keyword_search(content, scope, limit=20):
        if rules.normalise(record.content) == wanted:
            return [(record.id, None)]
    semantic = view.semantic()
    if semantic is None or vector is None:
        return []
    threshold = DUPLICATE_COSINE
    return [
        (ident, round(cosine, 4))
        for ident, cosine in semantic.nearest_to(vector, scope, 3)
        if cosine >= threshold
    ]


def within_message(plans: list[Plan], *, supersede: bool = True) -> None:
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
            plans[place] = Plan("skip", f"repeats statement {repeated + 1} of this message")
            continue
        if supersede:
            _supersedes_earlier(plans, kept, plan)
        plan.supersede = [ident for ident in plan.supersede if ident not in taken]
        taken.update(plan.supersede)
        kept.append(place)


def _supersedes_earlier(plans: list[Plan], kept: list[int], plan: Plan) -> None:
    """Mark the earlier statements of the message whose slot this one states anew."""
    stated = facts.slot_of(_content(plan))
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


def _content(plan: Plan) -> str:
    return str(plan.row["content"]) if plan.row is not None else ""


def _repeats(earlier: Plan, later: Plan) -> bool:
    """Whether a statement repeats an earlier one of its message."""
    earlier_text, later_text = _content(earlier), _content(later)
    if rules.normalise(earlier_text) == rules.normalise(later_text):
        return True
    if earlier.vector is None or later.vector is None:
        return False
    import numpy as np

    norms = float(np.linalg.norm(earlier.vector) * np.linalg.norm(later.vector))
    cosine = float(np.dot(earlier.vector, later.vector)) / max(norms, 1e-12)
    return cosine >= DUPLICATE_COSINE and repeats_fact(relation.relate(earlier_text, later_text))


def bank_scope(
    owner: str, tier: str, session_id: str | None, *, permanent: bool = False
) -> MemoryFilter:
    """The owner's active memories of a bank (of the session, for working and short-term);
    permanent=True widens long_term and episodic to both (a fact is one fact in either)."""
    if tier in SESSION_TIERS:
        return MemoryFilter(owner=owner, status="active", tiers=(tier,), session_id=session_id)
    tiers = tuple(t for t in TIERS if t not in SESSION_TIERS) if permanent else (tier,)
    return MemoryFilter(owner=owner, status="active", tiers=tiers)
