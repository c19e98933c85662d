"""The operator's merge command: asked for the merged memory's words when a plan is applied.

It is also asked for a decision on each supersession the plan proposes (supersede or keep,
maintenance/supersede_review.py): recorded in the pair's reason, never carried out by itself.

Planning never runs it (a plan only reads the store). The step the operator asked for
(apply, from the console or the CLI) runs it once per merge, outside the write
transaction, each call under its own timeout; when it fails or answers badly, the
extractive merge stays and the merge's reason says why.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from memory_console.maintenance.changes import NewMemory, Plan
from memory_console.maintenance.command import MergeFailure, ask
from memory_console.maintenance.reasons import Reason, merge_failure_text
from memory_console.maintenance.supersede_review import propose_with_command
from memory_console.store import MemoryRecord, Store

MERGE_TIMEOUT_S = 60.0
COMMAND_MERGED = "merged_by_command"  # a Reason value: this merge's words came from the command


def external_merge(
    command: str,
    group: Sequence[MemoryRecord],
    merged: Mapping[str, Any],
    timeout: float = MERGE_TIMEOUT_S,
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
    answer, failure = ask(command, payload, timeout)
    if failure is not None:
        return kept, failure
    if not (
        isinstance(answer, dict)
        and isinstance(answer.get("title"), str)
        and isinstance(answer.get("content"), str)
        and answer["content"].strip()
        and isinstance(answer.get("keywords"), list)
        and all(isinstance(k, str) for k in answer["keywords"])
    ):
        return kept, MergeFailure("incomplete")
    return {
        **kept,
        "title": answer["title"],
        "content": answer["content"],
        "keywords": answer["keywords"],
    }, None


@dataclass(frozen=True)
class CommandMerges:
    """A plan whose merges the command worded, and the reasons of those it could not."""

    plan: Plan
    failures: dict[int, MergeFailure]  # NewMemory key -> why its extractive merge stayed
    undecided: int = 0  # supersessions the command proposed no decision for

    @property
    def summary(self) -> str:
        """One line for the operator, naming the first failure."""
        lines = []
        if self.failures:
            first = next(iter(self.failures.values()))
            words = merge_failure_text(first.code, first.values())
            lines.append(
                f"{len(self.failures)} of the merges kept their extractive words ({words})"
            )
        if self.undecided:
            lines.append(
                f"the merge command proposed no decision for {self.undecided} supersessions"
            )
        return "; ".join(lines)


def merge_with_command(
    store: Store, plan: Plan, command: str | None, timeout: float = MERGE_TIMEOUT_S
) -> CommandMerges:
    """`plan` with each merge the command has not worded yet sent to `command` (nothing
    when there is none); members are read from `store` as they are now."""
    if not command:
        return CommandMerges(plan, {})
    plan, undecided = propose_with_command(store, plan, command, timeout)
    memories: list[NewMemory] = []
    failures: dict[int, MergeFailure] = {}
    for memory in plan.new_memories:
        why = memory.reason
        ids = list((memory.fields.get("metadata") or {}).get("consolidated_from") or [])
        if not isinstance(why, Reason) or why.code != "merge_group" or not ids:
            memories.append(memory)
            continue
        if why.get(COMMAND_MERGED) or why.get("merge_command_failure"):
            memories.append(memory)
            continue
        records = store.get_many(ids)
        group = [records[i] for i in ids if i in records]
        fields, failure = external_merge(command, group, memory.fields, timeout)
        if failure is None:
            why = why.with_values(**{COMMAND_MERGED: True})
        else:
            failures[memory.key] = failure
            why = why.with_values(**failure.values())
        memories.append(replace(memory, fields=fields, reason=why))
    figures = {**plan.figures}
    if "consolidate" in figures:
        figures["consolidate"] = {**figures["consolidate"], "merge_command_failures": len(failures)}
    return CommandMerges(replace(plan, new_memories=memories, figures=figures), failures, undecided)
