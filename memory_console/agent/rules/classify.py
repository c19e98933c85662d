"""The memory-type rules: semantic (facts, identity, preferences), episodic, or procedural.

See docs/ARCHITECTURE.md, "Memory types". Semantic memories never decay, so a text is semantic
only on a sign of a stable fact about someone: an identity ("my name is", "works at", "lives
in", "is a nurse"), a standing preference ("prefers", "likes", "I always ...", "I never ..."),
a possession or a trait. How-to texts and routines ("to deploy, run ...", "first ... then",
"every Sunday night") are procedural. Events, plans, projects and discussions ("yesterday",
"next month", "is working on", "we discussed") are episodic, and so is a text with no sign at
all: the source schema's default, so that what nobody recognised fades rather than stays.

Each cue has a weight; the type with the largest sum wins (ties: procedural, then episodic,
then semantic, the more specific reading first). The reason names the cue that decided it.
Pure functions over text: the agent API, the importers and the classify pass share them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memory_console.timeutil import MONTH_ABBREVIATIONS, MONTHS, WEEKDAYS

SEMANTIC, EPISODIC, PROCEDURAL = "semantic", "episodic", "procedural"
DEFAULT_TYPE = EPISODIC
TIE_ORDER = (PROCEDURAL, EPISODIC, SEMANTIC)

_DAY = r"(?:" + "|".join(WEEKDAYS) + r")s?"
_MONTH = r"(?:" + "|".join([*MONTHS, *MONTH_ABBREVIATIONS]) + r")"
_PERIOD = rf"(?:morning|afternoon|evening|night|day|week|weekend|month|year|{_DAY})"
_SUBJECT = r"(?:the user|user|i|he|she|they|we|my \w+|the user's \w+)"


@dataclass(frozen=True, slots=True)
class Cue:
    """One sign of a type: its weight and how the reason names it."""

    memory_type: str
    weight: float
    label: str
    pattern: re.Pattern[str]


def _cue(memory_type: str, weight: float, label: str, pattern: str) -> Cue:
    return Cue(memory_type, weight, label, re.compile(pattern, re.IGNORECASE))


CUES: tuple[Cue, ...] = (
    # -- how-to and routines ------------------------------------------------------------------
    _cue(PROCEDURAL, 3.0, "a how-to", r"^\s*(?:how\s+)?to\s+[a-z]+\b[^.,;]*,"),
    _cue(PROCEDURAL, 3.0, "a how-to", r"\bhow\s+to\b|\bsteps?\s+(?:to|for)\b"),
    _cue(
        PROCEDURAL,
        2.5,
        "a routine or procedure",
        r"\b(?:workflow|routine|procedure|process\s+for|checklist|recipe|instructions)\b",
    ),
    _cue(PROCEDURAL, 2.5, "steps in order", r"\bfirst\b[^.]*\bthen\b|,\s*then\b|;\s*then\b"),
    _cue(
        PROCEDURAL,
        2.5,
        "a repeated habit",
        rf"\b(?:every|each)\s+(?:other\s+)?{_PERIOD}|\b(?:daily|weekly|monthly|nightly)\b"
        r"|\b(?:before|after)\s+(?:each|every)\b|\bafter\s+waking\b",
    ),
    _cue(
        PROCEDURAL,
        2.0,
        "an instruction",
        r"^\s*(?:run|use|install|open|click|press|type|check|set|add|create|restart|hold|book|"
        r"email|call|format|select|choose|enable|disable|configure|update|deploy|always\s+run)\b",
    ),
    _cue(PROCEDURAL, 2.0, "an instruction", r"^\s*when\b[^.,]*,\s*(?!the user\b|i\b|we\b)\w+"),
    _cue(
        PROCEDURAL,
        1.0,
        "a command",
        r"\bwith\s+(?:cron|git|make|pip|poetry|npm|the\s+\w+\s+command)\b",
    ),
    # -- events, plans, projects and discussions --------------------------------------------
    _cue(
        EPISODIC,
        2.5,
        "a time it happened or will",
        rf"\b(?:yesterday|today|tonight|tomorrow|this\s+(?:morning|afternoon|evening|week|"
        rf"month|year|spring|summer|autumn|fall|winter|quarter)|(?:last|next)\s+"
        rf"(?:{_PERIOD}|session|time|quarter|spring|summer|autumn|fall|winter|{_MONTH})|"
        r"\d+\s+(?:days?|weeks?|months?|years?)\s+ago|over\s+(?:easter|christmas|the\s+holidays))\b",
    ),
    _cue(
        EPISODIC,
        2.0,
        "a date",
        rf"\b(?:on|by|until|from|in|since)\s+(?:{_DAY}|{_MONTH}\.?(?:\s+\d{{1,2}})?|"
        r"\d{1,2}(?:st|nd|rd|th)?\s+of\s+\w+)\b(?!\s*\d{4}\b)|\bdue\b|\bdeadline\b",
    ),
    _cue(
        EPISODIC,
        2.0,
        "something under way",
        r"\b(?:is|am|are|'m|'re|was|were)\s+(?:currently\s+|now\s+|still\s+)?"
        r"(?!going\s+by\b)[a-z]+ing\b",
    ),
    _cue(
        EPISODIC,
        2.0,
        "a plan",
        r"\b(?:plans?|planning|intends?|hopes?|wants?|going|decided|agreed)\s+to\b|\bwill\b|\b'll\b",
    ),
    _cue(
        EPISODIC,
        2.0,
        "an event or a discussion",
        r"\b(?:went|met|visited|had|got|bought|lost|started|finished|shipped|released|launched|"
        r"discussed|talked|asked|mentioned|told|said|complained|decided|agreed|reviewed|"
        r"sketched|broke|debugged|fixed|called|moved|attended|booked|signed|sent|received|"
        r"slipped|won|failed|passed|joined|left|quit|hired|fired|promoted)\b",
    ),
    _cue(
        EPISODIC,
        1.5,
        "a project or an occasion",
        r"\b(?:project|sprint|release|milestone|meeting|appointment|interview|trip|session|"
        r"party|concert|conference|talk|launch|migration|renovation|audit|proposal|"
        r"pull\s+request|ticket|bug|incident)\b",
    ),
    # -- stable facts, identity and standing preferences ------------------------------------
    _cue(
        SEMANTIC,
        3.0,
        "an identity",
        r"\b(?:name\s+is|call\s+me|is\s+called|born\s+(?:in|on)|years\s+old|native\s+\w+\s+speaker|"
        r"i'?m\s+from|is\s+from|comes\s+from|(?:works?|working)\s+(?:at|for|as)|lives?\s+in|"
        r"(?:email|e-mail|phone|phone\s+number|address|birthday|time\s*zone)\s+is)\b",
    ),
    _cue(
        SEMANTIC,
        3.0,
        "a standing preference",
        r"\b(?:prefers?|preferred|likes?|loves?|enjoys?|hates?|dislikes?|favou?rite|"
        r"would\s+rather|can'?t\s+stand|always|never|usually)\b",
    ),
    _cue(
        SEMANTIC,
        2.5,
        "a lasting trait",
        r"\b(?:allergic|intolerant|vegetarian|vegan|left-handed|right-handed|colou?r-blind|"
        r"afraid\s+of|introvert|extrovert|diabetic|married|divorced|single)\b",
    ),
    _cue(
        SEMANTIC,
        2.0,
        "who someone is",
        rf"^\s*(?:{_SUBJECT}|i'm|i\s+am)\s+(?:is|am|'m)?\s*(?:an?|the)\s+(?!\w+ing\b)\w+",
    ),
    _cue(
        SEMANTIC,
        2.0,
        "a relation or possession",
        r"\b(?:(?:wife|husband|partner|son|daughter|mother|father|sister|brother|manager|boss|"
        r"dog|cat)\s+is|has\s+(?:a|an|two|three|four|\d+)\s+\w+|owns|holds\s+an?|speaks|drives|"
        r"supports|uses)\b",
    ),
    _cue(
        SEMANTIC,
        1.5,
        "a fact in the present tense",
        r"^\s*(?:the\s+user|i)\s+(?:is|are|am|has|have|'s|reads|wants|needs|believes|knows)\b",
    ),
)


def classify_type(text: str) -> tuple[str, str]:
    """(memory_type, reason): the type the rules give a text and the cue that decided it."""
    scores = {SEMANTIC: 0.0, EPISODIC: 0.0, PROCEDURAL: 0.0}
    decisive: dict[str, tuple[float, str, str]] = {}
    for cue in CUES:
        match = cue.pattern.search(text)
        if match is None:
            continue
        scores[cue.memory_type] += cue.weight
        best = decisive.get(cue.memory_type)
        if best is None or cue.weight > best[0]:
            decisive[cue.memory_type] = (cue.weight, cue.label, match.group(0).strip())
    top = max(scores.values())
    if top == 0:
        return DEFAULT_TYPE, "episodic: no sign of a stable fact or a how-to (the default)"
    chosen = next(name for name in TIE_ORDER if scores[name] == top)
    _, label, matched = decisive[chosen]
    return chosen, f"{chosen}: {label} ({_quote(matched)})"


def _quote(matched: str, limit: int = 40) -> str:
    words = " ".join(matched.split())
    return f'"{words if len(words) <= limit else words[: limit - 1] + "…"}"'
