"""The slot table (which fact a sentence states) and the fact-difference detector.

See docs/ARCHITECTURE.md, "Facts that change". Pure functions over text: the agent API's
supersession, its duplicate rule and the review pass read facts through this one table.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memory_console.timeutil import MONTH_ABBREVIATIONS, MONTHS, WEEKDAYS

# Who a statement is about: the user speaking, or the user as a stored fact words it.
_I = r"\b(?:i|the user)"
_MY = r"\b(?:my|the user's)"
_NOW = r"(?:\s+(?:now|just|recently|currently|also|finally|all))*"
_IS = r" is(?:\s+(?:now|still))? "
# Where a free-text value ends: punctuation, a joined clause, a closing "now", or when it
# happened ("I joined Hooli in March", "... last week").
_WHEN = (
    r" (?:in|since|from|back in) (?:"
    + "|".join(MONTHS)
    + r"|spring|summer|autumn|fall|winter|\d{4})\b"
    r"| (?:last|this|next) (?:week|month|year|spring|summer|autumn|fall|winter)\b"
    r"| (?:yesterday|today|recently)\b"
)
_END = r"\s*(?=$|[.,;!?\n]| and | but | now\b| since\b| for (?:a|the|two|three|\d)|" + _WHEN + r")"
_PLACE = r"(?P<value>[^.,;!?\n]+?)" + _END
_NAME = r"(?P<value>(?-i:[A-Z])[\w'-]*(?: (?-i:[A-Z])[\w'-]*){0,2})"
_EMAIL = r"(?P<value>[\w.+-]+@[\w-]+(?:\.[\w-]+)+)"
_PHONE = r"(?P<value>\+?\d[\d\s().-]{5,}\d)"
_PARTNER = r"(?:wife|husband|partner|girlfriend|boyfriend|spouse|fianc[eé]e?)"
_PET = r"(?P<what>dog|cat|pet|puppy|kitten|rabbit|parrot|hamster|horse)"


@dataclass(frozen=True, slots=True)
class Slot:
    """One row of the slot table: a sentence matching `pattern` states the value of `name`.

    `what` in the pattern narrows the slot ("favourite <what>", "<what>'s name");
    `template` is how the background scan words the fact; `change` marks a row whose words
    themselves say the value changed ("moved to", "now work at", "new number")."""

    name: str
    pattern: re.Pattern[str]
    topic: str
    example: str
    template: str
    change: bool = False


def _slot(
    name: str, pattern: str, topic: str, example: str, template: str, change: bool = False
) -> Slot:
    return Slot(name, re.compile(pattern, re.IGNORECASE), topic, example, template, change)


SLOTS: tuple[Slot, ...] = (
    _slot(
        "name",
        _MY + r" name" + _IS + _NAME,
        "user_info",
        "My name is Dana Whitfield.",
        "The user's name is {value}.",
    ),
    _slot(
        "name",
        r"\bcall me " + _NAME,
        "user_info",
        "Please call me Dee.",
        "The user's name is {value}.",
    ),
    _slot(
        "employer",
        _I + _NOW + r" works? (?:at|for) " + _PLACE,
        "user_info",
        "I work at Acme Corp.",
        "The user works at {value}.",
    ),
    _slot(
        "employer",
        _I + r"(?:'ve| have| has)?" + _NOW + r" (?:joined|started (?:at|with)) " + _PLACE,
        "user_info",
        "I just joined Globex.",
        "The user works at {value}.",
        change=True,
    ),
    _slot(
        "location",
        _I + _NOW + r" lives? in " + _PLACE,
        "user_info",
        "I live in Lyon.",
        "The user lives in {value}.",
    ),
    _slot(
        "location",
        _I + r"(?:'ve| have| has)?" + _NOW + r" (?:moved|relocated) to " + _PLACE,
        "user_info",
        "I just moved to Lyon.",
        "The user lives in {value}.",
        change=True,
    ),
    _slot(
        "location",
        r"\b(?:i'm|i am|the user is)" + _NOW + r" (?:settled|based) in " + _PLACE,
        "user_info",
        "I'm all settled in Porto now.",
        "The user lives in {value}.",
        change=True,
    ),
    _slot(
        "preference",
        _I + _NOW + r" prefers? (?P<value>[^.;!?\n]+?)\s*(?=$|[.;!?\n])",
        "preferences",
        "I prefer aisle seats.",
        "The user prefers {value}.",
    ),
    _slot(
        "email",
        _MY + r" (?:new )?e-?mail(?: address)?" + _IS + _EMAIL,
        "contacts",
        "My email is dana@example.com.",
        "The user's email is {value}.",
    ),
    _slot(
        "phone",
        _MY + r" (?:phone|phone number|number|mobile|mobile number)" + _IS + _PHONE,
        "contacts",
        "My phone number is 555-0141.",
        "The user's phone number is {value}.",
    ),
    _slot(
        "phone",
        r"\b(?:(?:my|the user's) )?new (?:phone |mobile )?number(?:" + _IS + r"|\s*:\s*)" + _PHONE,
        "contacts",
        "My new number is 555-0187.",
        "The user's phone number is {value}.",
        change=True,
    ),
    _slot(
        "favourite",
        _MY
        + r" favou?rite (?P<what>[a-z][\w-]*(?: [a-z][\w-]*)?)"
        + _IS
        + r"(?P<value>[^.,;!?\n]+?)"
        + _END,
        "preferences",
        "My favourite colour is green.",
        "The user's favourite {what} is {value}.",
    ),
    _slot(
        "pet's name",
        _MY + r" " + _PET + r"(?:'s name is| is called| is named) " + _NAME,
        "user_info",
        "My dog's name is Rex.",
        "The user's {what} is called {value}.",
    ),
    _slot(
        "partner's name",
        _MY + r" " + _PARTNER + r"(?:'s name is| is called| is named) " + _NAME,
        "contacts",
        "My wife's name is Mara.",
        "The user's partner is called {value}.",
    ),
)
# The words a question about each slot uses ("what company does the user work for?"): a
# memory stating the slot gets them as keywords, so keyword search finds it however it was
# worded ("I joined Hooli in March.").
ASKED_WITH: dict[str, tuple[str, ...]] = {
    "name": ("name", "called"),
    "employer": ("work", "employer", "company", "job"),
    "location": ("live", "home", "city"),
    "preference": ("prefer", "preference"),
    "email": ("email", "address"),
    "phone": ("phone", "number", "call"),
    "favourite": ("favourite",),
    "pet's name": ("pet", "name"),
    "partner's name": ("partner", "name"),
}


def asked_with(text: str) -> tuple[str, ...]:
    """The question words of the slot the text states (empty when it states none)."""
    stated = slot_of(text)
    return ASKED_WITH.get(stated.kind, ()) if stated is not None else ()


# Words that say a fact changed even where no slot row matches ("I switched to oat milk").
CHANGE_WORDS = re.compile(
    r"\b(?:moved to|now work(?:s|ing)? (?:at|for)|switched (?:to|from)|no longer|"
    r"new (?:phone |mobile )?number|changed (?:my|the user's)|not any ?more|these days)\b",
    re.IGNORECASE,
)
_NO_LONGER = re.compile(r"\b(?:no longer|not any ?more|don't|do not|doesn't|does not)\s+", re.I)


@dataclass(frozen=True, slots=True)
class SlotValue:
    """The slot a text states and its value ("location", "Porto"); `change` when its words
    say the value changed."""

    slot: str
    value: str
    change: bool = False
    topic: str = "general"
    kind: str = ""  # the slot table row's name ("favourite" for "favourite colour")


def slot_of(text: str) -> SlotValue | None:
    """The first slot the text states a value of, or None. "favourite <what>" and
    "<what>'s name" name their own slot; a preference is keyed by its last word (aisle seats
    and window seats are one slot, tea and dark mode are not); "no longer" makes the value
    "no longer <value>"."""
    negated = _NO_LONGER.search(text) is not None
    plain = _NO_LONGER.sub("", text) if negated else text
    for row in SLOTS:
        match = row.pattern.search(plain)
        if match is None:
            continue
        value = " ".join(match.group("value").split()).rstrip(".")
        if not value:
            continue
        groups = match.groupdict()
        slot = row.name
        if groups.get("what"):
            what = groups["what"].lower()
            slot = f"{what}'s name" if row.name == "pet's name" else f"{row.name} {what}"
        elif row.name == "preference":
            slot = f"preference {preference_kind(value)}"
        if negated:
            value = f"no longer {value}"
        change = row.change or negated or CHANGE_WORDS.search(text) is not None
        return SlotValue(slot, value, change, row.topic, row.name)
    return None


def preference_kind(value: str) -> str:
    """What a preference is about: the pair it compares, else its last word, singular."""
    pair = re.split(r"\s+(?:over|to|rather than|instead of)\s+", value.casefold(), maxsplit=1)
    if len(pair) == 2:
        return " or ".join(sorted(word_key(side) for side in pair))
    return word_key(value)


def word_key(phrase: str) -> str:
    """The last word before any "on", "for", "when"... ("window seats on long flights": seat),
    without a plural s."""
    head = re.split(r"\s+(?:on|in|at|for|with|when|during|because|if|while)\s+", phrase)[0]
    words = re.findall(r"[^\W\d_][\w-]*", head.casefold())
    last = words[-1] if words else phrase.casefold()
    return last[:-1] if last.endswith("s") and not last.endswith("ss") and len(last) > 3 else last


def cue_words(kind: str) -> str:
    """The words of a slot's example sentences without their values: what a keyword search
    for other statements of the slot looks for ("live moved settled")."""
    cues = []
    for row in SLOTS:
        if row.name == kind:
            found = slot_of(row.example)
            cues.append(row.example.replace(found.value, " ") if found else row.example)
    return " ".join(cues)


_FILLER = frozenset("a an the my our your their his her its".split())


def same_value(one: str, other: str) -> bool:
    """Whether two slot values are one ("dark mode" and "a dark mode", "555-0141" and
    "555 0141"): compared by their words without articles and possessives."""

    def words(value: str) -> list[str]:
        return [w for w in re.findall(r"[\w@.+'-]+", value.casefold()) if w not in _FILLER]

    if words(one) == words(other):
        return True
    return bool(re.fullmatch(r"[\d\s().+-]+", one + other)) and _digits(one) == _digits(other)


def change_words(text: str) -> str | None:
    """The words in a text that say a fact changed ("moved to", "no longer"), or None."""
    match = CHANGE_WORDS.search(text)
    return " ".join(match.group(0).lower().split()) if match else None


# -- differences ---------------------------------------------------------------------------

_MONTHS = [*MONTHS, *MONTH_ABBREVIATIONS]
_WEEKDAYS = list(WEEKDAYS)
_MONTH = r"(?:" + "|".join(_MONTHS) + r")\.?"
DATE = re.compile(
    r"\b(?:\d{4}-\d{2}-\d{2}|\d{1,2}/\d{1,2}(?:/\d{2,4})?"
    r"|\d{1,2}(?:st|nd|rd|th)?\s+(?:of\s+)?" + _MONTH + r"(?:\s+\d{4})?"
    r"|" + _MONTH + r"\s+\d{1,2}(?:st|nd|rd|th)?(?:,?\s+\d{4})?"
    r"|(?:" + "|".join(_WEEKDAYS) + r")s?|tomorrow|yesterday|tonight)\b",
    re.IGNORECASE,
)
# A number: a phone number or version keeps its inner separators; 1,000 and 2.5 are one.
NUMBER = re.compile(r"(?<![\w.])[+$€£]?\d+(?:[\s().,:/-]?\d+)*(?:\.\d+)*%?(?![\w])")
# A capitalised word (or run of them) that is not the first of its sentence.
ENTITY = re.compile(r"\b[A-Z][\w'&-]*(?:\s+[A-Z][\w'&-]*)*")
# What ends the text before a word that begins a sentence: nothing, a stop and a space, a
# line break, an opening quote or bracket (sentence_starts_at reads it without a search).
_SENTENCE_ENDS = ".!?:;"
_OPENINGS = "\"'“("
_NOT_ENTITIES = frozenset(
    "i i'm i've i'd i'll the user my a an and but it it's this that please remember note "
    "yes no ok okay oh hey also so".split()
)


def numbers(text: str) -> list[str]:
    """Numbers outside dates, as written ("555-0141", "2.5", "4")."""
    spans = [m.span() for m in DATE.finditer(text)]
    found = []
    for match in NUMBER.finditer(text):
        if any(start <= match.start() < end for start, end in spans):
            continue
        found.append(match.group(0).strip())
    return found


def dates(text: str) -> list[str]:
    """Dates, weekdays and "tomorrow"-like words, lower-cased with spaces collapsed."""
    return [" ".join(m.group(0).lower().rstrip("s").split()) for m in DATE.finditer(text)]


def sentence_starts_at(text: str, start: int) -> bool:
    """Whether the word at `start` begins a sentence: the text before it is empty, or ends
    with a line break and spaces, a stop and at least one space, or an opening quote or
    bracket and any spaces. Read backwards over the spaces only: a search of the whole text
    before each word (a regular expression anchored at its end) cost the square of a long
    message, 24 s for "From: " said 10,000 times."""
    at = start
    line_break = False
    while at > 0 and text[at - 1].isspace():  # the same characters as a pattern's \s
        at -= 1
        line_break = line_break or text[at] == "\n"
    if start == 0 or line_break:
        return True
    if at == 0:
        return False
    last = text[at - 1]
    return (last in _SENTENCE_ENDS and at < start) or last in _OPENINGS


def entities(text: str) -> list[str]:
    """Capitalised names that do not begin a sentence ("Lyon", "Acme Corp", "VPN")."""
    found = []
    for match in ENTITY.finditer(text):
        name = match.group(0)
        if sentence_starts_at(text, match.start()):
            words = name.split()  # the first word may only be capitalised as a sentence starts
            name = " ".join(words[1:])
            if not name:
                continue
        name = name.strip("'")
        if name.casefold() in _NOT_ENTITIES or name.lower() in _WEEKDAYS + _MONTHS:
            continue
        found.append(name)
    return found


def _digits(number: str) -> str:
    return re.sub(r"[^\d.%]", "", number)


def differences(old_text: str, new_text: str) -> list[str]:
    """Why two similar texts state different facts, each a short phrase ("number 555-0141 vs
    555-0187", "location Lyon vs Porto"); [] when they state the same one.

    A number, date or name counts only when the other text lacks it altogether, so a
    rewording ("I live in Lyon" / "Lyon is where I live") differs in nothing."""
    found: list[str] = []
    old_slot, new_slot = slot_of(old_text), slot_of(new_text)
    if old_slot and new_slot and old_slot.slot == new_slot.slot:
        if not same_value(old_slot.value, new_slot.value):
            found.append(f"{new_slot.slot} {old_slot.value} vs {new_slot.value}")
    old_numbers = {_digits(n): n for n in numbers(old_text)}
    new_numbers = {_digits(n): n for n in numbers(new_text)}
    gone = [text for key, text in old_numbers.items() if key not in new_numbers]
    added = [text for key, text in new_numbers.items() if key not in old_numbers]
    if gone or added:
        found.append(f"number {', '.join(gone) or 'none'} vs {', '.join(added) or 'none'}")
    old_dates, new_dates = dates(old_text), dates(new_text)
    gone = [d for d in dict.fromkeys(old_dates) if d not in new_dates]
    added = [d for d in dict.fromkeys(new_dates) if d not in old_dates]
    if gone or added:
        found.append(f"date {', '.join(gone) or 'none'} vs {', '.join(added) or 'none'}")
    gone = _missing(entities(old_text), new_text)
    added = _missing(entities(new_text), old_text)
    if gone or added:
        found.append(f"name {', '.join(gone) or 'none'} vs {', '.join(added) or 'none'}")
    return found


def _missing(names: list[str], other: str) -> list[str]:
    """The names that the other text does not hold, as words, in any case."""
    words = set(re.findall(r"[\w'&-]+", other.casefold()))
    return [
        name
        for name in dict.fromkeys(names)
        if not set(re.findall(r"[\w'&-]+", name.casefold())) <= words
    ]
