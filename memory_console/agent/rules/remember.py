"""The memory decision logic: directives, refusals, background-scan scoring, routing documents.

See docs/ARCHITECTURE.md, "The agent API".

Pure functions over text and JSON: nothing here reads or writes a store. How a text is titled,
keyworded and given a topic is rules/describe.py, which the importers share.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from memory_console.agent.rules.describe import WORD, infer_topic, words_of
from memory_console.agent.rules.facts import SLOTS
from memory_console.agent.rules.speech import quoted_at, someone_elses
from memory_console.sensitive import Finding, find_sensitive, with_article
from memory_console.store import settings

DIRECTIVE_IMPORTANCE = 1.0  # an explicit directive; an inferred memory gets 0.5
INFERRED_IMPORTANCE = 0.5
DIRECTIVE_CONFIDENCE = 1.0  # "stated explicitly"
STATED_CONFIDENCE = 0.9  # a fact the user stated about themselves (background scan)
# What the agent concluded on its own: the relevance design's "inferred" starting confidence,
# half way, so that it must be recalled (or confirmed) before it reads as trusted.
INFERRED_CONFIDENCE = 0.5
BACKGROUND_THRESHOLD = 0.5  # scan_turn stores a fact when its score reaches this

# The scoring weights of a background-scan candidate (they sum to 1.0).
WEIGHT_EXPLICIT = 0.4  # the user asked for it to be remembered
WEIGHT_PERSONAL = 0.3  # personal information: user_info, contacts, preferences
WEIGHT_REPEATED = 0.2  # mentioned in two or more messages of the conversation
WEIGHT_TASK = 0.1  # shares two or more words with the current task
PERSONAL_TOPICS = ("user_info", "contacts", "preferences")

SPACES = re.compile(r"\s{2,}")

# Where a directive may begin: the start of the message, after punctuation, or after a polite
# or linking word ("please remember", "can you note that", "and keep in mind").
_LEAD = (
    r"(?:^|(?<=[.!?;:,\n])\s*|\b(?:please|pls|also|and|oh|hey|so)\s+"
    r"|\b(?:can|could|would|will) you\s+(?:please\s+)?)"
)
_DIRECTIVE_VERBS = (
    r"remember(?:\s+(?:that|this)\b)?",
    r"don'?t\s+forget(?:\s+(?:that|this)\b)?",
    r"do\s+not\s+forget(?:\s+(?:that|this)\b)?",
    r"note(?:\s+(?:that|this)\b)?",
    r"keep\s+in\s+mind(?:\s+that\b)?",
    r"make\s+a\s+note(?:\s+(?:that|of)\b)?",
    r"store\s+(?:this|that)\b",
    r"save\s+(?:this|that)(?:\s+(?:for\s+later|to\s+memory))?",
    r"(?:it'?s|it\s+is)\s+important\s+(?:that|to)\b",
)
DIRECTIVE = re.compile(
    _LEAD + r"(?P<phrase>" + "|".join(_DIRECTIVE_VERBS) + r")\s*[:,\-–]?\s+(?P<content>\S.*)",
    re.IGNORECASE | re.DOTALL,
)
# "I always fly with Lufthansa", "I never take red-eye flights": a standing rule the user
# states is one of the decision spec's implicit strong signals; the whole sentence is kept.
ALWAYS_NEVER = re.compile(
    r"(?:^|(?<=[.!;:\n])\s*|\b(?:and|also|but|so)\s+)(?P<content>I\s+(?P<phrase>always|never)"
    r"\s+[^\W\d_][^.!?\n]*[.!?]?)",
    re.IGNORECASE,
)
# "I'm allergic to peanuts, please remember that." : the directive follows what it names.
TRAILING_DIRECTIVE = re.compile(
    r"^(?P<content>.*\S)\s*[,;:.!\-–]\s*(?:please\s+)?(?P<phrase>remember|don'?t\s+forget|"
    r"note|keep\s+in\s+mind)\s+(?:that|this|it)\s*(?:please\s*)?[.!]*\s*$",
    re.IGNORECASE | re.DOTALL,
)

BANKS = {"WORKING": "working", "STM": "short_term", "LTM": "long_term", "EPISODIC": "episodic"}
ACTION_TYPES = ("STORE", "UPDATE", "DELETE")
MEMORY_TYPE_NAMES = ("semantic", "episodic", "procedural")
# A routing document's entry_type -> (memory_type, topic or None for inferred); the design's
# names plus the memory types themselves. Any other entry_type is an event: episodic.
ENTRY_TYPES: dict[str, tuple[str, str | None]] = {
    "fact": ("semantic", None),
    "entity_update": ("semantic", None),
    "preference": ("semantic", "preferences"),
    "procedure": ("procedural", None),
    **{name: (name, None) for name in MEMORY_TYPE_NAMES},
}
DEFAULT_ENTRY_TYPE = ("episodic", None)
# UPDATE and DELETE without memory_id change the owner's most similar memory of the target
# bank at or above the store's update_threshold setting, by default this cosine. Chosen on
# tests/data/update_pairs.jsonl (50 labelled pairs): 0.54-0.56 separate them best (accuracy
# 0.98, precision 1.00, recall 0.96); "lives in Austin" vs "lives in Denver" scores 0.69,
# unrelated facts of one user at most 0.54.
UPDATE_THRESHOLD = settings.UPDATE_THRESHOLD


@dataclass(frozen=True, slots=True)
class Directive:
    """A user directive found in a message: the phrase that made it one and what to keep."""

    phrase: str
    content: str


@dataclass(frozen=True, slots=True)
class Candidate:
    """A fact the background scan found in a message, with its score and the reasons."""

    kind: str
    value: str
    content: str
    topic: str
    explicit: bool
    score: float = 0.0
    reasons: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class RoutedAction:
    """One checked entry of an apply_actions document; `index` is its place in the list."""

    index: int
    action_type: str
    bank: str
    tier: str
    content: str | None
    entry_type: str | None
    memory_type: str
    topic: str | None
    confidence: float | None
    reasoning: str | None
    memory_id: int | None
    user_requested: bool

    @property
    def where(self) -> str:
        return f"memory_actions[{self.index}]"

    @property
    def typed(self) -> bool:
        """Whether its entry_type names a memory type (an UPDATE then sets it)."""
        return entry_key(self.entry_type) in ENTRY_TYPES


@dataclass(frozen=True, slots=True)
class ActionDocument:
    """A checked apply_actions document."""

    analysis: str | None
    salience_score: float | None
    actions: list[RoutedAction] = field(default_factory=list)


class ActionsError(ValueError):
    """A malformed apply_actions document or action; the message names where and why."""


# -- text --------------------------------------------------------------------------------


def normalise(text: str) -> str:
    """The text compared for exact duplicates: case-folded, spaces collapsed, end stops off."""
    return " ".join(text.casefold().split()).rstrip(".!…").rstrip()


def sentence_case(text: str) -> str:
    text = text.strip()
    return text[:1].upper() + text[1:] if text else text


def find_directive(message: str) -> Directive | None:
    """The user directive in a message ("remember that ...", "don't forget ...", "note that
    ...", "keep in mind ...", "..., please remember that", or a standing rule: "I always ...",
    "I never ..."), or None. A question ("remember when ...?") is not a directive, nor one in
    someone else's words (directive_of)."""
    return directive_of(message)[0]


def directive_of(message: str) -> tuple[Directive | None, str | None]:
    """(the user's directive in the message, or None; what makes a directive in it someone
    else's ("'the newsletter said'", "quotation marks": rules.speech), or None). A directive
    in someone else's words is no directive: the first is None then."""
    message = collapse_spaces(message)
    trailing = TRAILING_DIRECTIVE.match(message.strip())
    match = trailing or DIRECTIVE.search(message) or ALWAYS_NEVER.search(message)
    if match is None:
        return None, None
    directive = _directive(trailing, match)
    if directive is None:
        return None, None
    at = match.start("phrase") if trailing is None else 0
    reported = someone_elses(message) or quoted_at(message, at, colon=False)
    return (None, reported) if reported is not None else (directive, None)


def _directive(trailing: re.Match[str] | None, match: re.Match[str]) -> Directive | None:
    if trailing is None and match.re is ALWAYS_NEVER:
        return _standing_rule(match)
    content = sentence_case(match.group("content"))
    if normalise(content) in ("that", "this", "it") or not WORD.search(content):
        return None
    if content.endswith("?"):
        return None
    if trailing is not None and content[-1] not in ".!":
        content += "."
    return Directive(" ".join(match.group("phrase").lower().split()), content)


def collapse_spaces(text: str) -> str:
    """A text with each run of white space made one character (a line break when the run
    holds one): the patterns that may begin after a stop and spaces would otherwise try
    every place in a long run again, at a cost of the run's square."""
    return SPACES.sub(lambda run: "\n" if "\n" in run.group() else " ", text)


def _standing_rule(match: re.Match[str]) -> Directive | None:
    """A standing rule ("I always ...", "I never ..."): the sentence as said, or None."""
    content = sentence_case(match.group("content").strip())
    if content.endswith("?"):
        return None
    if content[-1] not in ".!":
        content += "."
    return Directive(f"i {match.group('phrase').lower()}", content)


# -- sensitive data ------------------------------------------------------------------------


def refusal(text: str, *, user_requested: bool) -> str | None:
    """Why a text must not be stored ("holds a password"), or None when it may be.

    Credentials are always refused; health data only when the user did not ask for it."""
    findings: list[Finding] = find_sensitive(text, health=True)
    secrets = list(dict.fromkeys(f.kind for f in findings if not f.is_health))
    if secrets:
        return "holds " + " and ".join(with_article(kind) for kind in secrets)
    if any(f.is_health for f in findings) and not user_requested:
        return "holds health data, kept only when the user asks (user_requested=True)"
    return None


# -- background scan -----------------------------------------------------------------------


def find_facts(message: str) -> list[Candidate]:
    """The explicit facts of a message: a directive and each row of the slot table (name,
    employer, home, preference, email, phone, a favourite, a pet's or partner's name), each
    once."""
    found: dict[str, Candidate] = {}
    directive = find_directive(message)
    if directive is not None:
        found[normalise(directive.content)] = Candidate(
            "explicit", directive.content, directive.content, infer_topic(directive.content), True
        )
    for slot in SLOTS:  # the slot table is the scanner's one list of facts
        for match in slot.pattern.finditer(message):
            value = match.group("value").strip().rstrip(".")
            if not value:
                continue
            what = (match.groupdict().get("what") or "").lower()
            content = slot.template.format(value=value, what=what)
            found.setdefault(
                normalise(content), Candidate(slot.name, value, content, slot.topic, False)
            )
    return list(found.values())


def score_candidate(
    candidate: Candidate, messages: Sequence[str], task: str | None = None
) -> Candidate:
    """The candidate's score: explicit request +0.4, personal information +0.3, mentioned in two or
    more of `messages` (the conversation, this message included) +0.2, two or more words in
    common with the current task +0.1; at most 1.0."""
    score = 0.0
    reasons: list[str] = []
    if candidate.explicit:
        score += WEIGHT_EXPLICIT
        reasons.append(f"explicit request +{WEIGHT_EXPLICIT}")
    if candidate.topic in PERSONAL_TOPICS:
        score += WEIGHT_PERSONAL
        reasons.append(f"personal information +{WEIGHT_PERSONAL}")
    needle = candidate.value.casefold()
    if sum(needle in message.casefold() for message in messages) >= 2:
        score += WEIGHT_REPEATED
        reasons.append(f"repeated mention +{WEIGHT_REPEATED}")
    if task and len(set(words_of(candidate.value)) & set(words_of(task))) >= 2:
        score += WEIGHT_TASK
        reasons.append(f"task relevance +{WEIGHT_TASK}")
    return Candidate(
        candidate.kind,
        candidate.value,
        candidate.content,
        candidate.topic,
        candidate.explicit,
        round(min(score, 1.0), 4),
        tuple(reasons),
    )


# -- apply_actions documents ------------------------------------------------------------------


def _unit(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
        raise ActionsError(f"{where} must be a number between 0 and 1, not {value!r}")
    if not 0.0 <= float(value) <= 1.0:
        raise ActionsError(f"{where} must be between 0 and 1, not {value!r}")
    return float(value)


def _optional_text(action: dict[str, Any], name: str, where: str) -> str | None:
    value = action.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise ActionsError(f"{where}.{name} must be a string, not {type(value).__name__}")
    return value


def entry_key(entry_type: str | None) -> str:
    """An entry_type as ENTRY_TYPES spells it ("Entity update" -> entity_update)."""
    return "_".join((entry_type or "").strip().lower().replace("-", " ").split())


def entry_memory_type(entry_type: str | None) -> tuple[str, str | None]:
    """(memory_type, topic or None) of an entry_type: FACT and ENTITY_UPDATE semantic,
    PREFERENCE semantic with topic preferences, PROCEDURE procedural, others episodic."""
    return ENTRY_TYPES.get(entry_key(entry_type), DEFAULT_ENTRY_TYPE)


def parse_action(action: Any, index: int) -> RoutedAction:
    """One checked action; ActionsError names the first thing wrong with it."""
    where = f"memory_actions[{index}]"
    if not isinstance(action, dict):
        raise ActionsError(f"{where} must be an object, not {type(action).__name__}")
    bank = action.get("target_memory_bank")
    if not isinstance(bank, str) or bank.upper() not in BANKS:
        raise ActionsError(
            f"{where}.target_memory_bank must be one of {', '.join(BANKS)}, not {bank!r}"
        )
    action_type = action.get("action_type")
    if not isinstance(action_type, str) or action_type.upper() not in ACTION_TYPES:
        raise ActionsError(
            f"{where}.action_type must be one of {', '.join(ACTION_TYPES)}, not {action_type!r}"
        )
    action_type = action_type.upper()
    content = _optional_text(action, "content", where)
    if content is not None and not content.strip():
        content = None
    memory_id = action.get("memory_id")
    if memory_id is not None and (
        isinstance(memory_id, bool) or not isinstance(memory_id, int) or memory_id < 1
    ):
        raise ActionsError(f"{where}.memory_id must be a memory id (a whole number >= 1)")
    if action_type in ("STORE", "UPDATE") and content is None:
        raise ActionsError(f"{where}: {action_type} needs a non-empty content")
    if action_type == "DELETE" and memory_id is None and content is None:
        raise ActionsError(f"{where}: DELETE needs a memory_id or the content of the memory")
    entry_type = _optional_text(action, "entry_type", where)
    confidence = action.get("confidence_score")
    user_requested = action.get("user_requested", False)
    if not isinstance(user_requested, bool):
        raise ActionsError(f"{where}.user_requested must be true or false")
    tier = BANKS[bank.upper()]
    memory_type, topic = entry_memory_type(entry_type)
    return RoutedAction(
        index=index,
        action_type=action_type,
        bank=bank.upper(),
        tier=tier,
        content=content.strip() if content else None,
        entry_type=entry_type,
        memory_type=memory_type,
        topic=topic,
        confidence=None if confidence is None else _unit(confidence, f"{where}.confidence_score"),
        reasoning=_optional_text(action, "reasoning", where),
        memory_id=memory_id,
        user_requested=user_requested,
    )


def parse_actions(json_text: str | bytes | dict[str, Any]) -> ActionDocument:
    """A checked memory-routing document, or ActionsError for the first thing wrong in it
    (so that nothing of a malformed document is applied)."""
    if isinstance(json_text, dict):
        document: Any = json_text
    else:
        try:
            document = json.loads(json_text)
        except json.JSONDecodeError as error:
            raise ActionsError(
                f"invalid JSON: {error.msg} (line {error.lineno} column {error.colno})"
            ) from error
        except (TypeError, ValueError, RecursionError) as error:
            raise ActionsError(f"invalid JSON: {error}") from error
    if not isinstance(document, dict):
        raise ActionsError(f"the document must be a JSON object, not {type(document).__name__}")
    actions = document.get("memory_actions")
    if not isinstance(actions, list):
        raise ActionsError("memory_actions must be a list of actions")
    analysis = document.get("analysis")
    if analysis is not None and not isinstance(analysis, str):
        raise ActionsError("analysis must be a string")
    salience = document.get("salience_score")
    salience_score = None if salience is None else _unit(salience, "salience_score")
    parsed = [parse_action(action, index) for index, action in enumerate(actions)]
    return ActionDocument(analysis, salience_score, parsed)
