"""The user's own commands to the agent's memory: forget this, clear everything, what do you know.

See docs/ARCHITECTURE.md, "The agent API".

Pure functions over text: `find_request` tells whether a message asks the agent to forget,
clear or list what it remembers (remember() then routes it instead of storing it), and
`forget_subject` strips a forget request down to what it names ("Forget that I work at Acme
Corp" -> "I work at Acme Corp"). A request must open its sentence (after "please", "can you"
and the like): "I want to forget my ex's birthday party" tells the agent something, it asks
nothing; "don't forget ..." is a request to remember.

A request is carried out only in the user's own words (rules.speech): one in a message that
reports someone else's ("the email said: forget ...") is declined, never carried out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memory_console.agent.rules import facts, relation
from memory_console.agent.rules.describe import words_of
from memory_console.agent.rules.speech import quoted_at, someone_elses

FORGET = "forget"
CLEAR = "clear"
LIST = "list"

# Where a request may begin: the start of the message or of a sentence, or after a polite or
# linking word. A verb after anything else ("I want to forget ...", "don't forget ...") is not
# one: the user is telling, or asking to remember. Read widely here (after a colon, an opening
# quotation mark, a quoted reply's ">"), so that rules.speech can name why such a one is declined.
_LEAD = (
    r"(?:^|(?<=[.!?;:\n]))[>\"“”‘’«»„'\s]*"
    r"(?:(?:oh|ok|okay|hey|so|and|also|now|actually),?\s+){0,2}"
    # A reason may come first: "For privacy reasons, please ...", "To be safe, ...".
    r"(?:(?:for\s+(?:\w+\s+){0,2}reasons?|to\s+be\s+(?:safe|sure)|on\s+second\s+thought|"
    r"just\s+in\s+case|because\s+[^,.!?;:\n]{1,60}),?\s+)?"
    r"(?:(?:completely|fully|entirely|permanently|just)\s+)?"
    r"(?:(?:please|pls|kindly)\s+|(?:can|could|would|will)\s+you\s+(?:please\s+)?"
    r"|i\s+(?:want|need|would\s+like|'d\s+like|’d\s+like)\s+you\s+to\s+)?"
)
_STORED = r"(?:memories|memory|data|information|info|records?)"
_EVERYTHING = (
    r"(?:everything|all)(?:\s+(?:you\s+(?:know|have|remember|stored)|about\s+me|of\s+me|"
    r"(?:of\s+)?(?:my|the)\s+(?:memories|data))){0,2}"
    r"|(?:all\s+)?(?:of\s+)?my\s+(?:memories|data|stored\s+(?:memories|data))|me"
    # "all existing memories of me", "any stored data about me"
    r"|(?:all|any|every)\s+(?:(?:existing|stored|saved|previous|past|of\s+the|the|your)\s+)*"
    + _STORED
    + r"\s+(?:of|about|on)\s+me"
    # "all memories", "all the data", "every memory"
    r"|(?:all|every)\s+(?:(?:of\s+)?(?:the|your|my)\s+)?(?:memories|memory|data|information)"
    # "the DB", "your memory", "the database"
    r"|(?:the|your|my)\s+(?:db|database|memory|memories|memory\s+store)"
)
CLEAR_REQUEST = re.compile(
    _LEAD
    + r"(?P<verb>forget|delete|erase|wipe|clear|remove)\s+(?:out\s+)?(?:"
    + _EVERYTHING
    + r")(?:\s+(?:from\s+(?:your\s+)?(?:memory|memories|records)))?\s*(?:,?\s*please)?[.!]*\s*$",
    re.IGNORECASE,
)
LIST_REQUEST = re.compile(
    _LEAD + r"(?:what\s+(?:do|did|else\s+do)\s+you\s+(?:remember|know|have\s+stored|have\s+saved|"
    r"keep|store)\s+(?:about|on|of)\s+(?:me|my\b)"
    r"|what\s+have\s+you\s+(?:remembered|stored|saved|kept|got)\s+(?:about|on)\s+(?:me|my\b)"
    r"|(?:show|list|tell)\s+(?:me\s+)?(?:all\s+)?(?:of\s+)?(?:my|the)\s+(?:stored\s+|saved\s+)?"
    r"(?:memories|preferences|contacts|projects|decisions|data)\b"
    r"|(?:show|list|tell)\s+(?:me\s+)?what\s+you\s+(?:remember|know|have\s+stored)\s+about\s+"
    r"(?:me|my\b))",
    re.IGNORECASE,
)
# Forget, delete, erase, remove: "forget" takes anything ("Forget the Jenkins migration");
# the others are everyday words of a coding session ("delete the old branch"), so they count
# only when they name something of the user's, what the agent knows, or its memory.
FORGET_REQUEST = re.compile(
    _LEAD + r"(?P<verb>forget|delete|erase|remove|drop)\b\s*(?P<rest>\S.*)",
    re.IGNORECASE | re.DOTALL,
)
_PERSONAL_OBJECT = re.compile(
    r"^(?:(?:all\s+)?(?:of\s+)?my\b|that\b|the\s+fact\b|what\s+you\b|everything\s+you\b|"
    r"anything\s+(?:you\b|about)|about\b|any\s+(?:memory|mention|record)\b)"
    r"|\bfrom\s+(?:your\s+)?(?:memory|memories|records)\b",
    re.IGNORECASE,
)
# The request words a subject sheds, in front and behind.
_SUBJECT_OPENING = re.compile(
    r"^(?:(?:the\s+fact|the\s+part|what\s+i\s+(?:said|told\s+you))\s+(?:that\s+|about\s+)?"
    r"|(?:what|everything|anything|all)\s+(?:you\s+)?(?:know|remember|have(?:\s+stored)?|"
    r"stored|said)?\s*(?:about|on|of)\s+"
    r"|(?:any|all)\s+(?:memories|memory|mentions?|records?)\s+(?:of|about)\s+"
    r"|about\s+|that\s+)+",
    re.IGNORECASE,
)
_SUBJECT_CLOSING = re.compile(
    r"(?:\s*,?\s*(?:from\s+(?:your\s+)?(?:memory|memories|records|database)|please|"
    r"for\s+good|forever|completely|entirely|too|as\s+well)\b)+\s*[.!]*\s*$"
    r"|\s*[.!?]+\s*$",
    re.IGNORECASE,
)
_TOPIC_WORDS = {
    "preference": "preferences",
    "preferences": "preferences",
    "contact": "contacts",
    "contacts": "contacts",
    "project": "projects",
    "projects": "projects",
    "decision": "decisions",
    "decisions": "decisions",
}
_NOTHING = frozenset({"it", "this", "that", "them", "those", "these"})


@dataclass(frozen=True, slots=True)
class Request:
    """A request to the memory itself: kind forget (with its subject), clear or list (with
    the topic it names, if any); `phrase` is the request as the user wrote it. `reported`
    says why it is not the user's own (speech.reported_by), when it is not: then it is declined."""

    kind: str
    phrase: str
    subject: str | None = None
    topic: str | None = None
    reported: str | None = None

    @property
    def declined(self) -> str:
        """What was not done, and why, in one sentence."""
        return (
            f"the request to {self.kind} in this message was not carried out: it is in someone "
            f"else's words ({self.reported}), and only the user's own are; nothing archived"
        )


def find_request(message: str) -> Request | None:
    """The request a message makes of the agent's memory in the user's own words, or None
    for anything else (a request in someone else's words too: see reported_request)."""
    request = _request(message)
    return request if request is not None and request.reported is None else None


def reported_request(message: str) -> Request | None:
    """The request a message holds in someone else's words (its `reported` says whose), or
    None: one that is declined, never carried out."""
    request = _request(message)
    return request if request is not None and request.reported is not None else None


def _request(message: str) -> Request | None:
    if not isinstance(message, str) or not message.strip():
        return None
    text = " ".join(message.split())
    cleared = CLEAR_REQUEST.search(text)
    if cleared:
        return Request(CLEAR, text, reported=_reported(message, text, cleared.start()))
    listed = LIST_REQUEST.search(text)
    if listed is not None:
        words = re.findall(r"[a-z]+", listed.group(0).lower())
        topic = next((_TOPIC_WORDS[w] for w in words if w in _TOPIC_WORDS), None)
        reported = _reported(message, text, listed.start())
        return Request(LIST, text, topic=topic, reported=reported)
    forget = FORGET_REQUEST.search(text)
    if forget is None:
        return None
    rest = forget.group("rest")
    if forget.group("verb").lower() != FORGET and not _PERSONAL_OBJECT.search(rest):
        return None
    subject = forget_subject(text)
    if subject is None:
        return None
    reported = _reported(message, text, forget.start())
    return Request(FORGET, text, subject=subject, reported=reported)


def _reported(message: str, text: str, at: int) -> str | None:
    """speech.reported_by for a request found at `at` of `text`, the message with its spaces
    collapsed (the message itself keeps the lines a header or a quoted reply is seen on)."""
    return someone_elses(message) or quoted_at(text, at)


def phrase_reported(phrase: str) -> str | None:
    """speech.reported_by for a forget phrase: its words, and where its request, if any, begins."""
    text = " ".join(phrase.split())
    request = FORGET_REQUEST.search(text)
    return someone_elses(phrase) or quoted_at(text, request.start() if request else 0)


def forget_subject(phrase: str) -> str | None:
    """What a forget phrase names, request words off ("Forget that I work at Acme Corp",
    "remove my email from your memory"); the phrase itself when it is no request; None when
    nothing is named ("forget it")."""
    text = " ".join(str(phrase).split())
    request = FORGET_REQUEST.search(text)
    if request is not None:
        text = request_sentence(request.group("rest"))
    pointing = _POINTING.search(text) is not None
    text = _SUBJECT_CLOSING.sub("", _SUBJECT_OPENING.sub("", text)).strip(" ,;:-")
    first = re.split(r"[\s,;:.!?]+", text.lower(), maxsplit=1)[0]
    if text and (pointing or first in _NOTHING) and request is not None:
        # "I don't want to talk about Alex anymore. Please forget everything about that
        # relationship": what "that" points to is named in the sentence before.
        return _named_before(" ".join(str(phrase).split())[: request.start()])
    if not text or first in _NOTHING or not words_of(text):
        return None
    return text


# "... about that relationship": a subject that points back to what was said before.
_POINTING = re.compile(
    r"\b(?:about|of|regarding)\s+(?:that|this|those|these)(?:\s+[\w'-]+){0,2}\s*[.!?]*$",
    re.IGNORECASE,
)


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'“])|\s+[-–—]\s+")


def request_sentence(rest: str) -> str:
    """What follows a request's verb up to the end of its sentence (or a dash clause): "forget
    that I like chess. I more enjoy ..." names chess only."""
    return _SENTENCE_END.split(rest, maxsplit=1)[0]


def after_request(message: str) -> str:
    """The sentences of a message after the one that holds its request to forget ("Actually,
    forget that I like to play chess. I more enjoy playing table top games"), which remember
    keeps as any text; "" when there are none."""
    text = " ".join(str(message).split())
    request = FORGET_REQUEST.search(text)
    if request is None:
        return ""
    rest = request.group("rest")
    found = re.search(r"(?<=[.!?])\s+(?=[A-Z\"'“])", rest)
    return rest[found.end() :].strip() if found else ""


def _named_before(said: str) -> str | None:
    """The names in the words before a request ("Alex"), which a "that ..." subject points
    to; None when they name no one and nothing."""
    names = facts.entities(said)
    return " ".join(dict.fromkeys(names)) if names else None


BROAD = re.compile(
    r"\b(?:everything|anything|all|every\s+(?:memory|mention)|any\s+(?:memory|mention))\b"
    r"[^.!?]{0,40}?\b(?:about|of|regarding|related\s+to|to\s+do\s+with)\s+\S",
    re.IGNORECASE,
)


def is_broad(phrase: str) -> bool:
    """Whether a forget phrase asks for everything about its subject ("forget everything
    about Alex"), not for the one memory it means."""
    text = " ".join(str(phrase).split())
    request = FORGET_REQUEST.search(text)
    return BROAD.search(request.group("rest") if request else text) is not None


# -- matching a subject to memories -----------------------------------------------------------

# The best memory must lead the next one by this much to be archived: a near tie ("my
# daughter's birthday" scores the user's own birthday 0.501, the daughter's 0.489) is
# ambiguous, and a wrong archive is worse than a missed one. Chosen with the threshold on
# tests/data/forget_phrases.jsonl (benchmarks/forget_threshold.py).
FORGET_MARGIN = 0.05
# Words that say what to do, not what to forget.
_REQUEST_WORDS = frozenset({"forget", "delete", "erase", "remove", "know", "remember", "user"})


_STATEMENT = re.compile(r"(?i)^\s*(?:i|i'm|i've|i'd|i'll|we|we're|we've|the user|my)\s")
_OWN = frozenset({"i", "my"})
# After "my <noun>", a verb that can only be one: "my son lives", "my locker number is" (not
# "my old work schedule", where "work" is a noun).
_FINITE = re.compile(
    r"(?i)^my\s+(?:[\w'-]+\s+){1,3}?(?:is|are|was|were|has|had|[a-z]+(?:es|ed)|"
    r"[a-z]+[^s\W]s)\b"
)


def _is_statement(subject: str) -> bool:
    """Whether a forget subject is the user's statement of their own ("I live in Berlin", "my
    son lives in Ohio"), not a phrase ("my old work schedule")."""
    if not _STATEMENT.match(subject) or relation.subject(subject) is None:
        return False
    return not subject.lower().startswith("my ") or _FINITE.match(subject) is not None


def ruled_out(subject: str, content: str) -> str | None:
    """Why a memory is not what a forget subject names, by the relation judgement
    (rules/relation.py), or None. Only a subject that is the user's statement of their own
    ("I'm allergic to shellfish", "I live in Berlin") is judged: a memory stating another fact
    or another value of it ("I'm allergic to peanuts", "Acme's office is in Berlin") is not
    what it names. A subject that is a phrase ("my home address") names part of a memory and
    is not judged."""
    if not _is_statement(subject):
        return None
    named, stated = relation.words(subject), set(relation.words(content))
    if all(word in stated for word in named if word not in _OWN):
        return None  # the memory says it, and perhaps more
    judged = relation.relate(content, subject)
    return None if judged.kind == relation.SAME else f"{judged.kind}: {judged.why}"


def strong_match(
    scored: list[tuple[int, float]], threshold: float, margin: float = FORGET_MARGIN
) -> int | None:
    """The id a forget phrase means among (id, cosine) pairs: the best, when at or above the
    threshold and at least `margin` ahead of the next; None when none is, or it is a near tie."""
    ranked = sorted(scored, key=lambda pair: -pair[1])
    if not ranked or ranked[0][1] < threshold:
        return None
    if len(ranked) > 1 and ranked[0][1] - ranked[1][1] < margin:
        return None
    return ranked[0][0]


def content_words(subject: str) -> list[str]:
    """The words of a subject that name something (request words and stop words left out)."""
    return [word for word in dict.fromkeys(words_of(subject)) if word not in _REQUEST_WORDS]


def _same_word(wanted: str, word: str) -> bool:
    """One word, give or take an ending: work/works, allergy/allergic, studied/studies."""
    if wanted == word:
        return True
    shorter, longer = sorted((wanted, word), key=len)
    if len(shorter) >= 4 and longer.startswith(shorter):
        return True
    if len(shorter) >= 5 and wanted[:5] == word[:5]:
        return True
    one, other = _stem(wanted), _stem(word)
    return len(one) >= 4 and one == other  # parking / parked


def _stem(word: str) -> str:
    for ending in ("ing", "ed", "es", "s"):
        if word.endswith(ending) and len(word) - len(ending) >= 3:
            return word[: -len(ending)]
    return word


def holds_every_word(words: list[str], text: str) -> bool:
    """Whether a text holds every one of `words` (give or take an ending)."""
    present = words_of(text)
    return bool(words) and all(any(_same_word(w, p) for p in present) for w in words)
