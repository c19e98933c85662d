"""The agent's action steps: decided plans written through the Store, in one transaction.

See docs/ARCHITECTURE.md, "The agent API". Every plan was decided before the transaction
(agent/decide.py, agent/routing.py); here each is carried out as the store now is: a memory
another writer archived or protected since it was read is left as it is, and the result says
so. The store's listeners (the vector index, which embeds new memories) hear of the writes
after the commit, so the write lock is held for the writes alone.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from memory_console.agent.decide import Plan
from memory_console.agent.results import ActionOutcome, RememberResult
from memory_console.agent.rules.remember import RoutedAction
from memory_console.store import Store


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


def write(
    store: Store, plans: list[Plan], moment: float, queries: Sequence[str]
) -> list[RememberResult]:
    """Carry out decided plans in one transaction; the store's listeners (the vector
    index, which embeds new memories) hear of the writes after the commit, so the write
    lock is held for the writes alone. `queries`: each plan's text for the access log of
    a reinforcement (one for all, or one each)."""
    results: list[RememberResult] = []
    with after_commit(store), store.transaction("adding memories"):
        stored: dict[int, int] = {}  # a plan's place -> the id it stored
        for place, plan in enumerate(plans):
            query = queries[place if len(queries) > 1 else 0]
            replaced = [stored[i] for i in plan.supersede_parts if i in stored]
            result = carry_out(store, plan, moment, query=query, replaced=replaced)
            if result.action == "stored" and result.id is not None:
                stored[place] = result.id
            results.append(result)
    return results


def carry_out(
    store: Store, plan: Plan, moment: float, *, query: str, replaced: Sequence[int] = ()
) -> RememberResult:
    """Write what a plan decided, inside the caller's transaction (remember's, or
    apply_actions'). The memories a plan names were read before the transaction: one
    that another writer archived or protected since is left as it now is, and said so.
    `replaced`: the ids of earlier statements of the message that this one supersedes."""
    if plan.kind == "refuse" or plan.kind == "skip":
        action = "refused" if plan.kind == "refuse" else "skipped"
        return RememberResult(action, plan.id, plan.reason)
    if plan.kind == "reinforce":
        return _reinforce(store, plan, moment, query=query)
    return _store(store, plan, moment, replaced)


def _reinforce(store: Store, plan: Plan, moment: float, *, query: str) -> RememberResult:
    """Reinforce the memory a text repeats (its importance raised to the text's, when lower),
    unless it was archived since the plan was decided."""
    assert plan.id is not None
    with store.transaction("reinforcing a memory"):
        current = store.get(plan.id)
        if current is None or current.status != "active":
            return RememberResult(
                "skipped",
                plan.id,
                f"memory {plan.id}, which it repeats, was archived meanwhile; "
                "nothing written (say it again to store it)",
            )
        if plan.raise_importance is not None and plan.raise_importance > current.importance:
            store.edit(plan.id, {"importance": plan.raise_importance}, now=moment)
        scores = {"reason": "remembered again", "cosine": plan.similarity}
        store.record_access(
            [plan.id],
            now=moment,
            query=query,
            scores={plan.id: scores},
            kind="reinforced",
        )
    record = store.require(plan.id)
    return RememberResult(
        "reinforced", plan.id, plan.reason, record.topic, record.content, plan.similarity
    )


def _store(store: Store, plan: Plan, moment: float, replaced: Sequence[int]) -> RememberResult:
    """Add the new memory and supersede what it replaces, as those memories now are."""
    assert plan.row is not None
    superseded: list[int] = []
    reason = plan.reason
    with store.transaction("adding memories"):  # the new fact and what it supersedes
        ident = store.add(plan.row, now=moment)
        for old in [*plan.supersede, *replaced]:
            now_as = store.get(old)
            if now_as is None or now_as.status != "active":
                continue  # archived meanwhile (or superseded by an earlier statement)
            if now_as.is_protected:
                reason += f"; memory {old} was protected meanwhile: not superseded"
                continue
            store.supersede(old, ident, now=moment)
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


def apply_one(store: Store, action: RoutedAction, plan: Plan, moment: float) -> ActionOutcome:
    """Carry out one planned action of an apply_actions document, inside its transaction."""
    if plan.kind == "update":
        assert plan.id is not None and plan.fields is not None
        store.edit(plan.id, plan.fields, now=moment)
        reason = plan.reason + plan.found
        return ActionOutcome(action.index, action.action_type, "updated", plan.id, reason)
    if plan.kind == "delete":
        assert plan.id is not None
        store.forget([plan.id], plan.reason, now=moment)
        reason = plan.reason + plan.found
        return ActionOutcome(action.index, action.action_type, "deleted", plan.id, reason)
    result = carry_out(store, plan, moment, query=action.content or "")
    return ActionOutcome(action.index, action.action_type, result.action, result.id, plan.reason)
