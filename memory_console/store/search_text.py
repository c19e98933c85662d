"""Turning what a person types into a safe FTS5 query (no syntax errors, no stop words)."""

from __future__ import annotations

import re

WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)?", re.UNICODE)
MAX_TERMS = 16

STOP_WORDS = frozenset(
    """a about above after again all am an and any are as at be because been before being
    below between both but by can could did do does doing down during each few for from
    further had has have having he her here hers herself him himself his how i if in into
    is it its itself just me more most my myself no nor not now of off on once only or other
    our ours ourselves out over own same she should so some such than that the their theirs
    them themselves then there these they this those through to too under until up very was
    we were what when where which while who whom why will with would you your yours yourself
    yourselves user users does like likes s t""".split()
)


def terms(text: str) -> list[str]:
    """The query's distinct words, lower-cased, without stop words, at most MAX_TERMS."""
    seen: dict[str, None] = {}
    for match in WORD.finditer(text.lower()):
        word = match.group(0).replace("’", "'")
        if word not in STOP_WORDS and len(word) > 1:
            seen[word] = None
    return list(seen)[:MAX_TERMS]


def fts_query(text: str, *, require_all: bool) -> str:
    """An FTS5 MATCH expression: every word quoted (so no FTS syntax can leak in), joined by
    AND for a filter or OR for ranked search. Empty when no word is left."""
    words = terms(text)
    if not words:
        return ""
    joiner = " AND " if require_all else " OR "
    return joiner.join('"' + word.replace('"', '""') + '"' for word in words)
