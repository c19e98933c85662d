"""A person's memory actions (protect, archive, forget, edit, undo) as plain Store calls."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from memory_console.store import ChangeResult, Store

FORGET_REASON = "forgotten by an operator"


@dataclass(frozen=True, slots=True)
class OperatorAction:
    """One action a person can take on memories: the Store call and the events it writes."""

    name: str
    past: str  # "protected": how a notification says it
    kinds: tuple[str, ...]  # the event kinds it writes, which undo looks up
    unchanged: str  # why a memory was left as it was


ACTIONS: dict[str, OperatorAction] = {
    action.name: action
    for action in (
        OperatorAction("protect", "protected", ("protected",), "already protected"),
        OperatorAction("unprotect", "unprotected", ("unprotected",), "not protected"),
        OperatorAction("archive", "archived", ("archived",), "already archived"),
        OperatorAction("restore", "restored", ("restored",), "already active"),
        OperatorAction("forget", "forgot", ("archived",), "already archived"),
        OperatorAction("edit", "edited", ("edited",), "no change"),
    )
}


@dataclass(frozen=True, slots=True)
class DoneAction:
    """What undo needs to take an action back: when it ran, which kinds, and how to say it."""

    action: str
    moment: float
    kinds: tuple[str, ...]
    ids: tuple[int, ...]


def run_action(
    store: Store,
    name: str,
    ids: Sequence[int],
    moment: float,
    *,
    reason: str | None = None,
    fields: dict[str, Any] | None = None,
) -> ChangeResult:
    """Do one action through the Store (each changed memory gets its event)."""
    if name == "protect":
        return store.protect(ids, now=moment)
    if name == "unprotect":
        return store.unprotect(ids, now=moment)
    if name == "archive":
        return store.archive(ids, now=moment)
    if name == "restore":
        return store.restore(ids, now=moment)
    if name == "forget":
        return store.forget(ids, reason or FORGET_REASON, now=moment)
    if name == "edit":
        if len(ids) != 1:
            raise ValueError("edit changes one memory at a time")
        return store.edit(ids[0], fields or {}, now=moment)
    raise ValueError(f"unknown action {name!r}")


def undo_action(store: Store, done: DoneAction, moment: float) -> ChangeResult:
    """Take back the events one action wrote (memories changed since are left alone)."""
    event_ids = store.last_event_ids(store.actor, done.kinds, done.moment)
    return store.undo_event_group(event_ids, now=moment)


def plural(count: int, word: str = "memory") -> str:
    if word == "memory":
        return f"{count:,} {'memory' if count == 1 else 'memories'}"
    return f"{count:,} {word}{'' if count == 1 else 's'}"


def describe_result(name: str, result: ChangeResult) -> str:
    """`archived 3 memories (1 already archived)`: one line for the notification."""
    action = ACTIONS[name]
    if name == "edit":
        text = "saved the edit" if result.changed else "nothing to save: no field changed"
    else:
        text = f"{action.past} {plural(len(result.changed))}"
    extra = []
    if result.unchanged and name != "edit":
        extra.append(f"{len(result.unchanged):,} {action.unchanged}")
    if result.missing:
        extra.append(f"{len(result.missing):,} no longer in the store")
    return text + (f" ({', '.join(extra)})" if extra else "")


def describe_undo(done: DoneAction, result: ChangeResult) -> str:
    if not result.changed and result.undone and not result.unchanged:
        return f"nothing to undo: {done.action} of {plural(len(result.undone))} is already undone"
    if not result.changed:
        return (
            f"could not undo {done.action}: {plural(len(result.unchanged))} changed again "
            "since, left as they are"
        )
    text = f"undid {done.action} of {plural(len(result.changed))}"
    if result.unchanged:
        text += f" ({len(result.unchanged):,} changed again since, left as they are)"
    return text
