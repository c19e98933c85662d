"""scan_turn's decision steps: which facts of a turn are kept, each decided as a write.

See docs/ARCHITECTURE.md, "The agent API". A fact found in the message is scored by the
decision rules; one that reaches the threshold and passes the screens is decided as remember
decides a text (agent/decide.py). Nothing here writes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from memory_console.agent.decide import Plan, StoreView, decide
from memory_console.agent.message import EXCERPT_LIMIT, ORIGINAL_LIMIT, excerpts_of
from memory_console.agent.results import RememberResult, ScanResult
from memory_console.agent.rules import remember as rules
from memory_console.agent.rules.remember import Candidate

# What a candidate comes with: the text screened for it and its metadata.split (or None).
Found = tuple[Candidate, str, dict[str, Any] | None]


def scan_plans(
    view: StoreView,
    message: str,
    candidates: Sequence[Found],
    *,
    messages: list[str],
    task: str | None,
    user_requested: bool,
    owner: str,
    foreign: str | None,
    check: Callable[[], None],
) -> tuple[list[ScanResult | Candidate], list[Plan], list[str]]:
    """(each candidate's ScanResult when it is skipped or refused, else the scored candidate
    whose plan follows; the plans; their excerpts of the message). Credentials anywhere in the
    message refuse every fact (a fact keeps an excerpt of the message); health data only where
    the fact's own text holds it. `check` runs before each candidate."""
    secret = rules.refusal(message, user_requested=True)
    health: dict[tuple[str, bool], str | None] = {}
    results: list[ScanResult | Candidate] = []
    plans: list[Plan] = []
    excerpts: list[str] = []
    for found, screened, split in candidates:
        check()
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
        plans.append(_scan_plan(view, candidate, owner, asked, foreign, excerpt, split))
        results.append(candidate)
        excerpts.append(excerpt)
    return results, plans, excerpts


def _scan_plan(
    view: StoreView,
    candidate: Candidate,
    owner: str,
    asked: bool,
    foreign: str | None,
    excerpt: str,
    split: dict[str, Any] | None,
) -> Plan:
    """A kept fact decided as a long-term memory, its score as its importance."""
    return decide(
        view,
        candidate.content,
        owner,
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
