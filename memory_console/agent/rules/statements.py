"""Splitting a message into statements, one per subject, so that one memory holds one fact.

See docs/ARCHITECTURE.md, "The agent API". Pure functions over text.

The rule: each sentence is a statement, unless it leans on the one before (it opens with he,
she, it, they, his, her, its, their, this, that, also, but, then ...; or it is short, has no
subject and points back: "Please update it.", "Love it here!"), is a question, or is a
fragment of fewer than three words; those stay with their neighbour. Inside a sentence, clauses
joined by "and" (or ";") are statements of their own only when each has its own subject and
the subjects differ: "My sister lives in Oslo and my brother lives in Rome" is two, "Rex is a
beagle and is 4", "I like tea and coffee" and "I moved to Porto and I started at Acme" are one.
"""

from __future__ import annotations

import re

# A sentence ends at . ! ? (closing quotes and brackets kept) before a capital, a digit or an
# opening quote, or at a line break; not after a title, an initial or an abbreviation.
SENTENCE_END = re.compile(r"(?<=[.!?])[\"'”’)\]]*\s+(?=[\"'“‘(\[]?[A-Z0-9])|\s*\n\s*")
ABBREVIATION = re.compile(
    r"(?i)(?:\b(?:mr|mrs|ms|dr|prof|st|jr|sr|vs|etc|e\.g|i\.e|no|approx|inc|ltd|co|mt|ft)|"
    r"(?<![\w.])(?-i:[A-Z]))\.$"
)
ABBREVIATION_REACH = 12  # characters before a stop that hold any abbreviation it may end
MIN_WORDS = 3  # a shorter sentence ("Hi!", "Thanks a lot.") stays with its neighbour

PRONOUN = r"(?:I|you|he|she|it|we|they)"
CONTRACTED = r"(?:I'm|I've|I'd|I'll|you're|you've|he's|she's|it's|we're|we've|they're|they've)"
DETERMINER = r"(?:my|your|his|her|its|our|their|the|a|an|this|that|these|those|one\s+of\s+my)"
ADVERB = r"(?:also|now|still|just|recently|already|never|always|often|usually|really|only)"
VERB = (
    r"(?:is|are|was|were|am|has|have|had|does|did|do|doesn't|don't|didn't|isn't|aren't|"
    r"wasn't|can|can't|could|will|won't|would|should|must|may|might|"
    r"lives?|lived|works?|worked|likes?|liked|loves?|loved|prefers?|preferred|hates?|hated|"
    r"enjoys?|enjoyed|moved|moves|started|starts|joined|joins|uses?|used|owns?|owned|plays?|"
    r"played|studies|studied|teaches|taught|wants?|wanted|needs?|needed|goes|went|gets|got|"
    r"became|becomes|turned|turns|drives?|drove|speaks?|spoke|keeps?|kept|runs?|ran|eats?|ate|"
    r"drinks?|drank|lost|bought|sold|left|leaves|calls?|called|knows?|knew|studies|visits?|"
    r"visited|stays?|stayed|comes|came|plans?|planned|graduated|retired|married|weighs?)"
)
# A word of a noun phrase: not one that joins or places ("a Mac at work", "the user and Mia").
NOUN_WORD = r"(?!(?:and|or|but|at|in|on|for|to|of|with|from|by|as|than|about)\b)[\w'-]+"
# A subject, then (perhaps an adverb and) a verb: what makes a clause a statement of its own.
SUBJECT = re.compile(
    rf"(?i)^\s*(?:(?P<contracted>{CONTRACTED})\b|(?P<subject>{PRONOUN}|"
    rf"{DETERMINER}\s+(?:{NOUN_WORD}\s+){{0,2}}?{NOUN_WORD}|"
    r"(?-i:[A-Z][\w'-]*)(?:\s+(?-i:[A-Z][\w'-]*)){0,2})"
    rf"\s+(?:{ADVERB}\s+)?{VERB}\b)"
)
# Words that refer back to what was said before: a clause or sentence opening with them is
# about the subject before it, so it stays with it.
REFERS_BACK = re.compile(
    r"(?i)^\s*(?:he|she|it|they|him|them|his|her|its|their|this|that|these|those|there|"
    r"also|and|but|or|so|then|too|which|who|both|each|though|although|however|because)\b"
)
# A word that stands for something said before, as the object of a subjectless sentence.
POINTER = re.compile(r"(?i)(?<!^)\b(?:it|that|this|them|those|these|there|here|him)\b(?!')")
CONTRACTED_START = re.compile(rf"(?i)^\s*(?:{CONTRACTED}|{PRONOUN})\b")
POINTING_WORDS = 10  # a longer sentence that points back usually names what it means
POINTING_WITH_SUBJECT = 8  # and one with a subject of its own, past this many words
ENTITY_WORD = re.compile(r"(?<![.!?]\s)\b(?!I\b|I')[A-Z][\w'-]*")  # a name past the first word
JOINER = re.compile(r"\s*(?:,\s*and\b|\band\b|;)\s+")


def split_statements(text: str) -> list[str]:
    """The statements of a message (see the module's rule); the message itself, stripped, when
    it is one statement."""
    message = text.strip()
    if not message:
        return []
    parts: list[str] = []
    for sentence in sentences(message):
        clauses = clauses_of(sentence)
        if parts and (leans_back(sentence) or is_fragment(parts[-1])):
            parts[-1] = f"{parts[-1]} {clauses[0]}"
            clauses = clauses[1:]
        parts.extend(clauses)
    if len(parts) > 1 and is_fragment(parts[-1]):
        parts[-2:] = [f"{parts[-2]} {parts[-1]}"]
    return parts if len(parts) > 1 else [message]


def sentences(text: str) -> list[str]:
    """The sentences of a text, in order, each as written. Only the last few characters
    before a stop are looked at for an abbreviation, so a text of many ("Dr. Dr. Dr. ...")
    costs its length, not its square."""
    found: list[str] = []
    start = 0
    for end in SENTENCE_END.finditer(text):
        stop = end.start()
        while stop > start and text[stop - 1].isspace():
            stop -= 1
        if ABBREVIATION.search(text, max(start, stop - ABBREVIATION_REACH), stop):
            continue
        piece = text[start : end.start() + len(end.group().rstrip())].strip()
        if piece:
            found.append(piece)
        start = end.end()
    tail = text[start:].strip()
    if tail:
        found.append(tail)
    return found


def subject_of(clause: str) -> tuple[str, int] | None:
    """The clause's subject, lower case ("my sister", "rex", "i"), and where its verb ends;
    None without one."""
    match = SUBJECT.match(clause)
    if match is None:
        return None
    if match.group("contracted"):
        return match.group("contracted").split("'")[0].lower(), match.end()
    return " ".join(match.group("subject").lower().split()), match.end()


def leans_back(sentence: str) -> bool:
    """Whether a sentence depends on the one before: it refers back, asks, is a fragment, or
    has no subject of its own and points back ("Please update it.", "Love it here!")."""
    return bool(REFERS_BACK.match(sentence)) or is_fragment(sentence) or points_back(sentence)


def points_back(sentence: str) -> bool:
    """A short sentence that points back and names nothing of its own: with no subject ("Please
    update it.", "Love it here!"), or with one but an object that stands for what was said
    before ("I found it very interesting.", "I'll try to watch this TV show.")."""
    words = sentence.split()
    if len(words) > POINTING_WORDS or POINTER.search(sentence) is None:
        return False
    if subject_of(sentence) is None and not CONTRACTED_START.match(sentence):
        return True
    return len(words) <= POINTING_WITH_SUBJECT and not ENTITY_WORD.search(sentence, 1)


def is_fragment(sentence: str) -> bool:
    """A question or fewer than three words: not a statement to keep on its own."""
    return sentence.rstrip().endswith("?") or len(sentence.split()) < MIN_WORDS


def clauses_of(sentence: str) -> list[str]:
    """The sentence cut at each "and" (or ";") whose clauses have different subjects of their
    own, each clause ending with the sentence's stop and opening with a capital."""
    first = subject_of(sentence)
    if first is None:
        return [sentence]
    cuts: list[tuple[int, int]] = []
    current, verb_end = first
    for joiner in JOINER.finditer(sentence):
        if joiner.start() < verb_end:  # an "and" inside the subject joins no clauses
            continue
        after = sentence[joiner.end() :]
        found = subject_of(after)
        if found is None or found[0] == current or REFERS_BACK.match(after):
            continue
        cuts.append((joiner.start(), joiner.end()))
        current, verb_end = found[0], joiner.end() + found[1]
    if not cuts:
        return [sentence]
    stop = sentence[-1] if sentence[-1] in ".!" else ""
    pieces: list[str] = []
    start = 0
    for cut_start, cut_end in cuts:
        piece = sentence[start:cut_start].rstrip(" ,")
        pieces.append(piece if piece.endswith((".", "!")) else piece + stop)
        start = cut_end
    pieces.append(sentence[start:])
    return [piece[:1].upper() + piece[1:] for piece in pieces]
