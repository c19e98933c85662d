"""What the agent API answers: each call's result, as plain frozen records.

See docs/ARCHITECTURE.md, "The agent API". MemoryAPI (agent/api.py) returns these; the MCP
server turns them into its tools' JSON.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from memory_console.agent.forgetting import ClearResult, ForgetResult
from memory_console.agent.rules.remember import Candidate
from memory_console.store import MemoryRecord


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


def declining(result: RememberResult, declined: str | None) -> RememberResult:
    """The result with what remember declined to do (a request in someone else's words)."""
    if declined is None:
        return result
    return replace(result, reason=f"{result.reason}; {declined}", declined=declined)
