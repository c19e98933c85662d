"""One message, cut: its statements (at most MAX_STATEMENTS), each statement's excerpt of the
message and its metadata.split.

See docs/ARCHITECTURE.md, "The agent API" (one memory, one fact). Pure functions over text.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memory_console.agent.rules.describe import infer_topic
from memory_console.agent.rules.remember import Candidate
from memory_console.agent.rules.statements import split_statements

ORIGINAL_LIMIT = 200  # metadata.original_message keeps this much of the message...
# ...or, when the message is split, this much of it around the statement: the whole message
# when it is this short, so every statement's source shows, and never more, so that what a
# message stores grows with the message, not with its statements times the message.
EXCERPT_LIMIT = 400
# One call stores at most this many statements (remember) or facts (scan_turn); the answer
# says how many more there were. A person's message to an agent holds a handful; a longer
# one is a document, and the console's importers are the way in for documents.
MAX_STATEMENTS = 50


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
            part = Candidate(candidate.kind, statement, statement, infer_topic(statement), True)
            out.append((part, candidate.content, split_of(message_id, number, len(statements))))
    return out
