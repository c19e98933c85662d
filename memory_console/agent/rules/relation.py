"""How two statements relate: the same fact, a newer value of the same fact, or different facts.

See docs/ARCHITECTURE.md, "Which memory is current". The one judgement behind remember's
duplicate rule, supersession (automatic when confident, left for review when not), the merges
of the consolidate pass and forget by phrase. Pure functions over text.

The method: both statements are reduced to their words in order, with what a rewording changes
freely made alike (case, articles, "really", "loves"/"likes", "I'm"/"I am", plural and -ing
endings), and aligned word by word. What the two share is the statement's frame; what differs
is its value. Then:
- nothing differs: the same fact;
- the same words in another order: the same fact when the order turns only around a word that
  reads both ways ("Joana is Sam's sister" / "Sam's sister is Joana", "A and B"), otherwise
  the roles are swapped, a newer value ("A reports to B" / "B reports to A", "X over Y");
- one value differs inside a frame of three or more words ("... at the University of Lisbon"
  / "... of Barcelona"), or of any length when the newer one says it changed ("Actually, I
  meant I like apples"): a newer value. A new subject in an otherwise equal sentence is a newer
  value only when the frame names someone or something ("X developed a website for Megan's
  research" / "Y developed ..."); two people with the same description are two facts;
- a negation added or dropped: a newer value;
- the subject and something else differ: different facts;
- a number, date or name that only one of them holds is never the same fact.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from difflib import SequenceMatcher
from functools import lru_cache

from memory_console.agent.rules import facts
from memory_console.agent.rules.statements import subject_of

SAME = "same"
NEWER = "newer"
DIFFERENT = "different"

MIN_FRAME = 3  # content words a shared frame needs for a changed value to be a newer one


@dataclass(frozen=True, slots=True)
class Relation:
    """How a newer statement relates to an older one; `confident` says whether a caller may
    act on it alone (supersede, merge) or should leave it for review; `why` says it in a
    short phrase."""

    kind: str
    confident: bool
    why: str
    # A newer value said in few shared words ("Actually, I meant I like apples"): a caller
    # acts on it alone only for the memory nearest in meaning, else leaves it for review.
    nearest_only: bool = False

    @property
    def blocks_merge(self) -> bool:
        """Whether this relation forbids taking the two for one fact, whatever their cosine."""
        return self.kind != SAME and self.confident


# Words a rewording adds or drops freely.
_DROPPED = frozenset(
    "a an the really very just also still all quite pretty so too actually well oh sorry "
    "please ok okay anyway basically currently now today these days always usually".split()
)
# Words that join or place: a span of only these changes no value.
_LIGHT = frozenset(
    "of in on at to for with and or that which who whom whose be have do will would can "
    "it its this there as by from about into than 's".split()
)
_NEGATIONS = frozenset(["not", "no", "never", "nobody", "nothing", "longer"])
_FIRST_PERSON = {"me": "i", "myself": "i", "user": "i", "mine": "my"}
_FORMS = {
    "is": "be", "are": "be", "am": "be", "was": "be", "were": "be", "been": "be",
    "being": "be", "has": "have", "had": "have", "does": "do", "did": "do",
    "loves": "like", "love": "like", "loved": "like", "likes": "like", "liked": "like",
    "enjoys": "like", "enjoy": "like", "enjoyed": "like", "prefers": "like",
    "prefer": "like", "favours": "like", "favors": "like", "adore": "like", "adores": "like",
    "wants": "like", "want": "like",
}  # fmt: skip
# Words around which order reads both ways: "A is B" / "B is A", "A and B" / "B and A".
_SYMMETRIC = frozenset(["be", "and", "&", "with", "or"])
# Words that say the newer statement changes a value.
CHANGE_CUES = re.compile(
    r"\b(?:actually|correction|update[ds]?|i meant|instead|any ?more|no longer|now|new|"
    r"changed|moved|switched|swapped|replaced|rescheduled|postponed|pushed back|escalated|"
    r"promoted|became|turned into|from now on|not any ?more|these days|since then)\b",
    re.IGNORECASE,
)
_CONTRACTIONS = (
    (re.compile(r"n['’]t\b"), " not"),
    (re.compile(r"['’]m\b"), " am"),
    (re.compile(r"['’]re\b"), " are"),
    (re.compile(r"['’]ve\b"), " have"),
    (re.compile(r"['’]ll\b"), " will"),
    (re.compile(r"['’]d\b"), " would"),
    (re.compile(r"\b(it|he|she|that|what|there|here|who|where|this)['’]s\b"), r"\1 is"),
    (re.compile(r"['’]s\b"), " 's"),  # a possessive stays a word: "Sam's sister" is not "Sam"
)
# What opens a correction before the statement itself ("Actually, sorry, I meant ...").
_OPENING = re.compile(
    r"^(?:(?:actually|sorry|oh|well|wait|oops|no|correction|update|my bad|i meant|i mean|"
    r"to be clear|let me correct that|by the way|btw|yeah|yes|so|and|also|hi|hey|fyi|"
    r"(?:please\s+)?(?:remember|note|keep in mind)(?:\s+that)?)\b[\s,:;.!—–-]*)+",
    re.IGNORECASE,
)
_WORD = re.compile(r"'s\b|[\w@+$€£%]+(?:[.:/-][\w@%]+)*")


def stem(word: str) -> str:
    """A word with its plural, third-person or -ing ending set aside, so both sides meet."""
    word = _FORMS.get(word, word)
    if word.endswith("ing") and len(word) > 5:
        word = word[:-3]
        if len(word) > 2 and word[-1] == word[-2]:
            word = word[:-1]  # running -> run
    elif word.endswith("ies") and len(word) > 4:
        word = word[:-3] + "y"
    elif word.endswith("s") and not word.endswith("ss") and len(word) > 3 and word.isalpha():
        word = word[:-1]
    return word


@lru_cache(maxsize=8192)
def words(text: str) -> tuple[str, ...]:
    """The statement's words as compared: case folded, contractions opened, the user as "i",
    filler dropped, endings set aside."""
    text = _OPENING.sub("", text.strip().casefold())
    text = text.replace("the user's", "my").replace("the user", "i")
    for pattern, replacement in _CONTRACTIONS:
        text = pattern.sub(replacement, text)
    found = []
    for word in _WORD.findall(text):
        word = _FIRST_PERSON.get(word, word)
        if word in _DROPPED:
            continue
        found.append(stem(word))
    if found[:1] == ["i"]:  # a memory often leaves its subject, the user, unsaid
        del found[0]
    return tuple(found)


def subject(text: str) -> str | None:
    """The subject a statement opens with ("sam", "the payments service", "i" for the user),
    or None when it opens with its verb, as a stored fact may ("Likes a dark theme")."""
    found = subject_of(without_opening(text))
    if found is None:
        return None
    said = found[0].replace("the user's", "my").replace("the user", "i")
    # The user and what is the user's ("my dog") are one subject: "My dog is named Rex" and
    # "I have a dog named Rex" say one thing.
    return "i" if said in ("i", "we") or said.startswith(("my ", "our ")) else said


def without_opening(text: str) -> str:
    """The statement without the words that open a correction ("Actually, sorry, I meant")."""
    stripped = _OPENING.sub("", text.strip())
    return stripped[:1].upper() + stripped[1:] if stripped else text.strip()


def change_cue(text: str) -> str | None:
    """The words in a statement that say a value changed ("actually", "now", "moved"), or None."""
    match = CHANGE_CUES.search(text)
    return " ".join(match.group(0).lower().split()) if match else None


def relate(old: str, new: str) -> Relation:
    """How `new` (said later) relates to `old`; see the module's rule."""
    return _relate(old, new)


def same_fact(one: str, other: str) -> bool:
    """Whether two statements state one fact (in either order)."""
    return _relate(one, other).kind == SAME and _relate(other, one).kind == SAME


@lru_cache(maxsize=8192)
def _relate(old: str, new: str) -> Relation:
    differing = facts.differences(old, new)
    judged = _judge(old, new, differing)
    if differing and judged.kind != SAME:  # say what differs in the words of the fact kind
        return dataclasses.replace(judged, why="; ".join(differing))
    return judged


def _judge(old: str, new: str, differing: list[str]) -> Relation:
    a, b = words(old), words(new)
    cue = change_cue(new)
    if a == b:
        if differing:
            return Relation(NEWER, bool(cue), "; ".join(differing))
        return Relation(SAME, True, "the same words")
    if sorted(a) == sorted(b):
        pivot = _symmetric_turn(a, b)
        if pivot is not None:
            return Relation(SAME, True, f"the same fact, turned around {pivot!r}")
        return Relation(NEWER, True, f"roles swapped ({_region(a, b)})")
    swapped = _names_swapped(old, new)
    if swapped is not None:
        return Relation(NEWER, True, f"roles swapped ({swapped})")
    spans, frame = _spans(a, b)
    if not spans:
        if differing:
            return Relation(DIFFERENT, True, "; ".join(differing))
        return Relation(SAME, True, "the same words but filler")
    if all(span.negation for span in spans):
        return Relation(NEWER, True, "negated")
    if len(spans) == 1:
        return _one_value(spans[0], frame, old, new, cue, differing)
    first = spans[0]
    if first.op == "replace" and _in_subject(first, old, new) and _subjects_differ(first, old, new):
        return Relation(DIFFERENT, True, f"another subject ({first})")
    if cue and frame >= 2 or frame >= MIN_FRAME and frame * 2 >= max(len(a), len(b)):
        return Relation(NEWER, bool(cue), "; ".join(map(str, spans)), frame < MIN_FRAME)
    return Relation(DIFFERENT, bool(differing), "; ".join(differing) or "little in common")


def _one_value(
    span: Span, frame: int, old: str, new: str, cue: str | None, differing: list[str]
) -> Relation:
    """Two statements that differ in one place."""
    at_start = span.i1 == 0 and span.j1 == 0
    if _in_subject(span, old, new) and _subjects_differ(span, old, new):
        if span.op == "replace" and _names_in_frame(old, new):
            return Relation(NEWER, True, f"another subject for the same thing ({span})")
        return Relation(DIFFERENT, True, f"another subject ({span})")
    if span.op == "delete" and not differing:  # the newer says part of the older
        return Relation(SAME, False, f"states part of it (without {span.old!r})")
    if span.op == "insert":
        return Relation(NEWER, frame >= 2, f"adds {span.new!r}")
    if not frame:
        return Relation(DIFFERENT, bool(differing), "little in common")
    if at_start:  # no subject on one side: the verb changed ("Uses ..." / "Likes ...")
        return Relation(NEWER, bool(cue), f"{span} (another verb)", nearest_only=True)
    if frame >= MIN_FRAME or (frame >= 1 and cue):
        return Relation(NEWER, True, str(span), frame < MIN_FRAME)
    return Relation(DIFFERENT, False, f"{span} in a short frame")


@dataclass(frozen=True, slots=True)
class Span:
    """Where two statements differ: the older's words [i1, i2) for the newer's [j1, j2)."""

    op: str
    i1: int
    i2: int
    j1: int
    j2: int
    old: str
    new: str

    @property
    def negation(self) -> bool:
        """Whether the span only adds or drops a negation ("not", "no longer")."""
        said = set(self.old.split()) | set(self.new.split())
        return bool(said & _NEGATIONS) and said <= _NEGATIONS | _LIGHT

    def __str__(self) -> str:
        return f"{self.old or '-'} -> {self.new or '-'}"


def _spans(a: tuple[str, ...], b: tuple[str, ...]) -> tuple[list[Span], int]:
    """The spans where the two differ in a word that carries meaning, and how many such words
    they share in order (the frame)."""
    matcher = SequenceMatcher(None, a, b, autojunk=False)
    spans: list[Span] = []
    frame = 0
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            frame += sum(word not in _LIGHT for word in a[i1:i2])
        elif not all(word in _LIGHT for word in (*a[i1:i2], *b[j1:j2])):
            spans.append(Span(op, i1, i2, j1, j2, " ".join(a[i1:i2]), " ".join(b[j1:j2])))
    return spans, frame


def _in_subject(span: Span, old: str, new: str) -> bool:
    """Whether a span starts within both statements' subjects ("Lina Bowden" / "Lina Turrell"
    differ from the second word on), or at the start of both."""
    if span.i1 == 0 and span.j1 == 0:
        return True
    one, other = subject(old), subject(new)
    if one is None or other is None:
        return False
    return span.i1 < len(words(one)) and span.j1 < len(words(other))


def _subjects_differ(span: Span, old: str, new: str) -> bool:
    """Whether a span at the start is a change of subject: one side's subject was replaced,
    or a subject stands where the other side leaves it unsaid ("Likes hiking" / "Sam likes
    hiking")."""
    if span.op == "replace":
        one, other = subject(old), subject(new)
        return one is not None and other is not None and one != other
    return subject(new if span.op == "insert" else old) not in (None, "i")


def _names_in_frame(old: str, new: str) -> bool:
    """Whether what the two say of their subjects names something particular that both share
    (a name, a number), said with a verb of doing, not of being: "X developed a website for
    Megan's research" / "Y developed ..." is one thing done by another; "X is a biologist who
    works in the Pacific" / "Y is ..." describes two people."""
    one, other = _predicate(old), _predicate(new)
    if one is None or other is None or _DESCRIBING.match(one) or _DESCRIBING.match(other):
        return False
    shared = set(facts.entities(one)) & set(facts.entities(other))
    return bool(shared or set(facts.numbers(one)) & set(facts.numbers(other)))


# A predicate that describes its subject rather than tells what it did.
_DESCRIBING = re.compile(
    r"(?i)^\s*(?:is|are|was|were|has\s+been|have\s+been|'s|'re|remains?|seems?|"
    r"looks?|becomes?|became)\b"
)


def _predicate(text: str) -> str | None:
    """What a statement says of its subject, from its verb on; None without a subject."""
    text = without_opening(text)
    found = subject_of(text)
    if found is None:
        return None
    match = re.match(r"(?i)\s*(?:the\s+user|[\w'-]+(?:\s+[\w'-]+){0,3}?)\s+", text)
    verb_end = found[1]
    start = text.rfind(" ", 0, verb_end)  # the verb itself begins after the last space
    return text[start + 1 :] if match is not None else None


def _names_swapped(old: str, new: str) -> str | None:
    """The names two statements give the same words but in other places ("Jo has published a
    book of portraits of Al and Tam" / "Al published a book of portraits of Jo and Tam"), or
    None: the same people and nearly the same words, in another order. Names joined by "and"
    form one group, in either order."""
    one, other = _name_groups(old), _name_groups(new)
    names = sorted(name for group in one for name in group)
    if len(names) < 2 or one == other or names != sorted(n for g in other for n in g):
        return None
    plain = [w for w in words(old) if w not in _LIGHT]
    said = [w for w in words(new) if w not in _LIGHT]
    if len(set(plain) ^ set(said)) > SWAP_SLACK:
        return None
    first = " / ".join(" and ".join(sorted(group)) for group in one)
    return f"{first} -> {' / '.join(' and '.join(sorted(group)) for group in other)}"


SWAP_SLACK = 2  # words in one and not the other that a role swap may still differ by


def _name_groups(text: str) -> list[frozenset[str]]:
    """The names of a statement in order, those joined by "and" (or a comma) as one group."""
    found = list(facts.ENTITY.finditer(text))
    groups: list[set[str]] = []
    end = -1
    for match in found:
        name = match.group(0)
        if name.casefold() in ("i", "i'm", "i've", "the"):
            continue
        between = text[end : match.start()] if end >= 0 else ""
        if groups and re.fullmatch(r"\s*(?:,|,?\s+and|&)\s*", between):
            groups[-1].add(name)
        else:
            groups.append({name})
        end = match.end()
    return [frozenset(group) for group in groups]


def _symmetric_turn(a: tuple[str, ...], b: tuple[str, ...]) -> str | None:
    """The word around which `b` is `a` turned ("X be Y" / "Y be X"), within the stretch where
    they differ; None when the order changes otherwise."""
    start = 0
    while a[start] == b[start]:
        start += 1
    end = 0
    while a[len(a) - 1 - end] == b[len(b) - 1 - end]:
        end += 1
    while 0 < end and a[len(a) - end] == "'s":  # "Sam's sister" is one phrase: keep it whole
        end = max(0, end - 2)
    while 0 < start and a[start - 1] == "'s":
        start = max(0, start - 2)
    left, right = a[start : len(a) - end], b[start : len(b) - end]
    for place, word in enumerate(left):
        if word in _SYMMETRIC and right == left[place + 1 :] + (word,) + left[:place]:
            return word
    return None


def _region(a: tuple[str, ...], b: tuple[str, ...]) -> str:
    start = 0
    while start < len(a) and a[start] == b[start]:
        start += 1
    return f"{' '.join(a[start : start + 4])} / {' '.join(b[start : start + 4])}"
