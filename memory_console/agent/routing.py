"""apply_actions' decision steps: a memory-routing document planned, action by action.

See docs/ARCHITECTURE.md, "The agent API". A STORE is decided as remember decides a text (in
the target bank, among long-term and episodic memories for those); an UPDATE or DELETE finds
the memory it changes (its memory_id, else the same text, else the most similar one at or
above update_threshold). Every action is planned before anything is written; one bad action
raises ActionsError, which rejects the whole document. agent/act.py carries out the plans.
"""

from __future__ import annotations

from typing import Any

from memory_console.agent import forgetting
from memory_console.agent.decide import Plan, StoreView, bank_scope, decide
from memory_console.agent.rules import describe
from memory_console.agent.rules import remember as rules
from memory_console.agent.rules.remember import ActionDocument, ActionsError, RoutedAction
from memory_console.sensitive import credential_kinds, with_article
from memory_console.store import Store
from memory_console.store.vocab import SESSION_TIERS


def plan_actions(
    view: StoreView, document: ActionDocument, owner: str, session_id: str | None
) -> list[tuple[RoutedAction, Plan]]:
    """Each action of a checked document with its plan, in order."""
    plans: list[tuple[RoutedAction, Plan]] = []
    stored: dict[str, int] = {}  # a STORE's normalised content -> its index
    touched: dict[int, int] = {}  # a memory an UPDATE or DELETE changes -> its index
    for action in document.actions:
        if action.tier in SESSION_TIERS and session_id is None:
            if action.action_type == "STORE" or action.memory_id is None:
                raise ActionsError(
                    f"{action.where}: a {action.bank} memory belongs to a session; "
                    "pass the session_id"
                )
        if action.action_type == "STORE":
            plan = _plan_new(view, action, document, owner, session_id, stored)
        else:
            plan = _plan_target(view, action, document, owner, session_id, touched)
        plans.append((action, plan))
    return plans


def _plan_new(
    view: StoreView,
    action: RoutedAction,
    document: ActionDocument,
    owner: str,
    session_id: str | None,
    stored: dict[str, int],
) -> Plan:
    """A STORE's plan; one repeating an earlier STORE of the document is skipped."""
    assert action.content is not None
    key = rules.normalise(action.content)
    if key in stored:
        return Plan("skip", f"same content as memory_actions[{stored[key]}]")
    stored[key] = action.index
    return plan_store(view, action, document, owner, session_id)


def _plan_target(
    view: StoreView,
    action: RoutedAction,
    document: ActionDocument,
    owner: str,
    session_id: str | None,
    touched: dict[int, int],
) -> Plan:
    """An UPDATE's or DELETE's plan: the memory it finds changed, once per document; without
    one, an UPDATE stores a new memory and a DELETE changes nothing."""
    target = target_of(view, action, owner, session_id)
    if isinstance(target, str):  # no memory matched
        if action.action_type == "DELETE":
            return Plan("skip", f"{target}: nothing deleted")
        plan = plan_store(view, action, document, owner, session_id)
        plan.reason = f"{target}: stored as a new memory ({plan.reason})"
        return plan
    ident, how = target
    plan = plan_change(view.store, action, ident, how)
    if plan.kind != "skip":
        if ident in touched:
            raise ActionsError(
                f"{action.where}: memory {ident} is already changed by "
                f"memory_actions[{touched[ident]}]"
            )
        touched[ident] = action.index
    return plan


def plan_store(
    view: StoreView,
    action: RoutedAction,
    document: ActionDocument,
    owner: str,
    session_id: str | None,
) -> Plan:
    """An action's content decided as a new memory of its bank; a refusal rejects the
    document."""
    assert action.content is not None
    metadata: dict[str, Any] = {"memory_bank": action.bank}
    if action.entry_type is not None:
        metadata["entry_type"] = action.entry_type
    if action.reasoning is not None:
        metadata["reasoning"] = action.reasoning
    if action.tier in SESSION_TIERS:
        metadata["session_id"] = session_id
    plan = decide(
        view,
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


def target_of(
    view: StoreView, action: RoutedAction, owner: str, session_id: str | None
) -> tuple[int, str | None] | str:
    """(id, how it was found) of the memory an UPDATE or DELETE changes, or why none
    matched. memory_id wins; else the same normalised text, else the most similar memory
    of the target bank at or above update_threshold (the embedder must load)."""
    if action.memory_id is not None:
        return _named(view.store, action, owner), None
    assert action.content is not None
    scope = bank_scope(owner, action.tier, session_id)
    wanted = rules.normalise(action.content)
    matches = [
        record.id
        for record, _ in view.store.keyword_search(action.content, scope, limit=50)
        if rules.normalise(record.content) == wanted
    ]
    if len(matches) > 1:
        raise ActionsError(
            f"{action.where}: its content matches {len(matches)} memories "
            f"({', '.join(map(str, matches))}); name one with memory_id"
        )
    if matches:
        return matches[0], "same text"
    return _nearest(view, action, scope)


def _named(store: Store, action: RoutedAction, owner: str) -> int:
    """The active memory of the owner an action's memory_id names."""
    assert action.memory_id is not None
    # Another owner's id is answered as an absent one: no caller learns which exist.
    record = forgetting.owned(store, action.memory_id, owner)
    if record is None:
        raise ActionsError(f"{action.where}: memory {action.memory_id}: {forgetting.NOT_FOUND}")
    if record.status != "active":
        raise ActionsError(f"{action.where}: memory {record.id} is {record.status}")
    return record.id


def _nearest(view: StoreView, action: RoutedAction, scope: Any) -> tuple[int, str | None] | str:
    """The memory of `scope` most similar to an action's content at or above
    update_threshold, or why there is none."""
    assert action.content is not None
    semantic = view.semantic()
    if semantic is None:
        raise ActionsError(
            f"{action.where}: no memory of the {action.bank} bank has this text, and "
            f"finding one by meaning needs the embedder ({view.semantic_error() or 'off'}); "
            "name the memory with memory_id"
        )
    from memory_console.embed.embedder import embedding_text

    text = embedding_text(
        describe.make_title(action.content),
        action.content,
        describe.extract_keywords(action.content),
    )
    nearest = semantic.nearest_to(semantic.embedder.embed_query(text), scope, 1)
    threshold = view.update_threshold
    if nearest and nearest[0][1] >= threshold:
        return nearest[0][0], f"cosine {nearest[0][1]:.3f}"
    closest = f"; the closest, {nearest[0][0]}, at {nearest[0][1]:.3f}" if nearest else ""
    return f"no memory of the {action.bank} bank at cosine >= {threshold:g}{closest}"


def plan_change(store: Store, action: RoutedAction, ident: int, how: str | None) -> Plan:
    """The UPDATE or DELETE of the memory found: a protected one found by its text or
    meaning (not by its memory_id) is left, and the outcome says so."""
    hidden = credential_kinds(action.reasoning)
    if hidden:
        named = " and ".join(with_article(kind) for kind in hidden)
        raise ActionsError(f"{action.where}: its reasoning holds {named}")
    found = f" (memory {ident}, {how})" if how else ""
    if how is not None and store.require(ident).is_protected:
        verb = "deleted" if action.action_type == "DELETE" else "updated"
        return Plan(
            "skip",
            f"memory {ident} ({how}) is protected: not {verb} without its memory_id",
            id=ident,
        )
    if action.action_type == "DELETE":
        reason = action.reasoning or "deleted by the agent"
        return Plan("delete", reason, id=ident, found=found)
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
    return Plan("update", reason, id=ident, fields=fields, found=found)
