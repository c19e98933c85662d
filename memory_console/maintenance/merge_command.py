"""The operator's merge command: asked for the merged memory's words when a plan is applied.

It is also asked for a decision on each supersession the plan proposes (supersede or keep,
maintenance/supersede_review.py): recorded in the pair's reason, never carried out by itself.

Planning never runs it (a plan only reads the store). The step the operator asked for
(apply, from the console or the CLI) runs it once per merge, outside the write
transaction: each call under its own timeout, all of the run's calls under one budget,
its output read up to a cap (maintenance/command.py). Its answer is screened as an agent's
write is: a title, content and keywords the store would accept, no credential, no health
data its members do not hold, no control character. When it fails or answers badly, that
merge keeps its extractive words, its reason says why, and the run counts them by cause.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from memory_console.maintenance.changes import NewMemory, Plan
from memory_console.maintenance.command import (
    Budget,
    MergeFailure,
    ask,
    sensitive_problem,
    text_problem,
)
from memory_console.maintenance.reasons import Reason, merge_failure_text
from memory_console.maintenance.supersede_review import propose_with_command
from memory_console.store import MemoryRecord, Store
from memory_console.store.errors import ValidationError
from memory_console.store.validate import (
    MAX_TEXT,
    MAX_TITLE,
    check_keywords,
    check_text,
    default_title,
)

if TYPE_CHECKING:
    from memory_console.settings import Settings

COMMAND_MERGED = "merged_by_command"  # a Reason value: this merge's words came from the command


def run_budget(settings: Settings) -> Budget:
    """The merge command's budget for one apply or review, from the operator's settings."""
    return Budget(settings.merge_budget, settings.merge_timeout)


def external_merge(
    command: str,
    group: Sequence[MemoryRecord],
    merged: Mapping[str, Any],
    budget: Budget | None = None,
) -> tuple[dict[str, Any], MergeFailure | None]:
    """Ask the command for title/content/keywords: (merged, None) on success, or (the
    extractive merge unchanged, why it was not used)."""
    payload = {
        "members": [
            {
                "id": c.id,
                "title": c.title,
                "content": c.content,
                "keywords": c.keywords,
                "created_at": c.created_at,
            }
            for c in group
        ],
        "extractive": {k: merged[k] for k in ("title", "content", "keywords")},
    }
    kept = dict(merged)
    answer, failure = ask(command, payload, budget or Budget())
    if failure is not None:
        return kept, failure
    words, failure = screened(answer, group)
    if words is None:
        return kept, failure
    return {**kept, **words}, None


def screened(
    answer: Any, group: Sequence[MemoryRecord]
) -> tuple[dict[str, Any] | None, MergeFailure | None]:
    """The answer's title, content and keywords as the merged memory stores them, or why
    they are refused: missing or of the wrong type (incomplete), or what an agent's write
    would be refused for (refused, with a reason that never repeats the refused text)."""
    if not (
        isinstance(answer, dict)
        and isinstance(answer.get("title"), str)
        and isinstance(answer.get("content"), str)
        and answer["content"].strip()
        and isinstance(answer.get("keywords"), list)
        and all(isinstance(k, str) for k in answer["keywords"])
    ):
        return None, MergeFailure("incomplete")
    title = answer["title"].strip()
    content = answer["content"].strip()
    keywords = [word.strip() for word in answer["keywords"] if word.strip()]
    problem = text_problem({"title": title, "content": content, "keyword": keywords})
    if problem is None:
        try:
            check_text("title", title, MAX_TITLE)
            check_text("content", content, MAX_TEXT)
            check_keywords(keywords)
        except ValidationError as error:
            problem = str(error)
    if problem is None:
        problem = sensitive_problem([title, content, *keywords], group)
    if problem is not None:
        return None, MergeFailure("refused", error=problem)
    title = title or default_title(content)
    return {"title": title, "content": content, "keywords": keywords}, None


@dataclass(frozen=True)
class CommandMerges:
    """A plan whose merges the command worded, and the reasons of those it could not."""

    plan: Plan
    failures: dict[int, MergeFailure]  # NewMemory key -> why its extractive merge stayed
    undecided: int = 0  # supersessions the command proposed no decision for
    asked: int = 0  # merges sent to the command (or left unasked by its budget)

    @property
    def summary(self) -> str:
        """One line for the operator: how many merges kept their extractive words, counted
        by cause (the first of each cause's wording)."""
        lines = []
        if self.failures:
            counts: Counter[str] = Counter(f.code for f in self.failures.values())
            first = {f.code: f for f in reversed(list(self.failures.values()))}
            causes = "; ".join(
                f"{count}: {merge_failure_text(code, first[code].values())}"
                for code, count in counts.most_common()
            )
            lines.append(
                f"{len(self.failures)} of {self.asked} merges kept their extractive words "
                f"({causes})"
            )
        if self.undecided:
            lines.append(
                f"the merge command proposed no decision for {self.undecided} supersessions"
            )
        return "; ".join(lines)


def merge_with_command(
    store: Store, plan: Plan, command: str | None, budget: Budget | None = None
) -> CommandMerges:
    """`plan` with each merge the command has not worded yet sent to `command` (nothing
    when there is none), every call of the run under `budget` (a fresh default one when
    None); members are read from `store` as they are now. A merge whose call fails or whose
    answer is refused keeps its extractive words; the others are worded all the same."""
    if not command:
        return CommandMerges(plan, {})
    budget = budget or Budget()
    plan, undecided = propose_with_command(store, plan, command, budget)
    memories: list[NewMemory] = []
    failures: dict[int, MergeFailure] = {}
    asked = 0
    for memory in plan.new_memories:
        why = memory.reason
        ids = list((memory.fields.get("metadata") or {}).get("consolidated_from") or [])
        if not isinstance(why, Reason) or why.code != "merge_group" or not ids:
            memories.append(memory)
            continue
        if why.get(COMMAND_MERGED) or why.get("merge_command_failure"):
            memories.append(memory)
            continue
        asked += 1
        records = store.get_many(ids)
        group = [records[i] for i in ids if i in records]
        fields, failure = external_merge(command, group, memory.fields, budget)
        if failure is None:
            why = why.with_values(**{COMMAND_MERGED: True})
        else:
            failures[memory.key] = failure
            why = why.with_values(**failure.values())
        memories.append(replace(memory, fields=fields, reason=why))
    figures = {**plan.figures}
    if "consolidate" in figures:
        causes = Counter(f"merge_command_{f.code}" for f in failures.values())
        figures["consolidate"] = {
            **figures["consolidate"],
            "merge_command_failures": len(failures),
            **causes,  # by cause, for --json readers: merge_command_timed_out 3, ...
        }
    merged = replace(plan, new_memories=memories, figures=figures)
    return CommandMerges(merged, failures, undecided, asked)
