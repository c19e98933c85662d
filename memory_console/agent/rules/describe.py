"""How a memory's text is described: its title, keywords and topic.

See docs/ARCHITECTURE.md, "The agent API". Pure functions over text. The agent's writes and
the importers (ingest/formats/) describe a text alike, so that a memory reads and is found the
same way however it arrived.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

from memory_console.store.validate import default_title

MAX_KEYWORDS = 8
MAX_WORD = 40  # a longer run of letters is no word a keyword could name (a hash, a paste)

STOP_WORDS = frozenset(
    """
    a about above after again all also am an and any are as at be been before being below
    between both but by can could did do does doing don down during each else few for from
    further had has have having he her here hers him his how i if in into is it its itself
    just let like me might more most must my myself no nor not now of off on once only or
    other our ours out over own please same she should so some such than that the their
    theirs them then there these they this those through to too under until up very was we
    were what when where which while who whom why will with would you your yours yourself
    """.split()
)
WORD = re.compile(r"[^\W\d_][\w'-]*[^\W_]|[^\W\d_]", re.UNICODE)

TOPIC_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (topic, re.compile(pattern, re.IGNORECASE))
    for topic, pattern in (
        (
            "preferences",
            r"\b(?:prefer\w*|likes?|liked|favou?rite|always|never|hates?|loves?|dislikes?|"
            r"rather|enjoys?)\b",
        ),
        (
            "user_info",
            r"\b(?:name is|call me|work (?:at|for)|works (?:at|for)|live[sd]? in|age is|"
            r"years old|birthday|born (?:in|on)|my job|i am an? )",
        ),
        (
            "contacts",
            r"\b(?:e-?mail|phone|contact|address|colleague|friend|manager|boss|wife|husband|"
            r"partner|sister|brother|mother|father|mom|dad)\b|(?<![^\s@])[^\s@]+@[^\s@]+\.\w+",
        ),
        (
            "projects",
            r"\b(?:project|working on|building|developing|task|repo(?:sitory)?|codebase|"
            r"endpoint|api|deadline|release|sprint|milestone)\b",
        ),
        (
            "decisions",
            r"\b(?:decided|decision|agreed|commit(?:ted|ment)? to|plan(?:s|ned)? to|chose|"
            r"going with|settled on)\b",
        ),
    )
)


def infer_topic(text: str) -> str:
    """preferences, user_info, contacts, projects, decisions (first that matches), or general."""
    for topic, pattern in TOPIC_PATTERNS:
        if pattern.search(text):
            return topic
    return "general"


def words_of(text: str) -> list[str]:
    """Lower-case words of three to MAX_WORD letters, stop words and contractions left out."""
    words = []
    for raw in WORD.findall(text):
        word = raw.lower().strip("'-")
        if word.endswith("'s"):
            word = word[:-2]
        if 3 <= len(word) <= MAX_WORD and "'" not in word and word not in STOP_WORDS:
            words.append(word)
    return words


def extract_keywords(
    text: str, *, first: Iterable[str] = (), limit: int = MAX_KEYWORDS
) -> list[str]:
    """Keywords by frequency (ties in order of appearance), stop words left out; `first`
    (tags, categories, names) come before the extracted ones. At most `limit`."""
    keywords: list[str] = []
    seen: set[str] = set()
    for raw in first:
        keyword = " ".join(str(raw).split())
        if keyword and keyword.casefold() not in seen:
            seen.add(keyword.casefold())
            seen.update(words_of(keyword))
            keywords.append(keyword)
    counts = Counter(words_of(text))
    for word in sorted(counts, key=lambda word: -counts[word]):  # stable: ties keep their order
        if word not in seen:
            seen.add(word)
            keywords.append(word)
    return keywords[:limit]


def make_title(content: str) -> str:
    """The first sentence, or the first 50 characters."""
    return default_title(content)
