"""Whose words a message holds: the user's own, or someone else's that it reports or quotes.

See docs/ARCHITECTURE.md, "The agent API". A request to the memory ("forget that ...",
"remember that ...") is carried out only in the user's own words: "the email said: forget
..." or a forwarded message is text to keep at most, never a command. Pure functions over text.
"""

from __future__ import annotations

import re

# A verb of saying: someone said, wrote or asked what follows (or what came before).
_SAYING = re.compile(
    r"(?i)\b(?:said|says|wrote|writes|told|tells|asked|asks|warned|warns|replied|replies|"
    r"claimed|claims|instructed|instructs|insisted|insists|texted|emailed|"
    r"messaged|forwarded|quoted|quotes|reads|announced|announces)\b"
)
# Words between a subject and its verb of saying ("I have just said", "you already told").
_BETWEEN = frozenset(
    "just already also have has had 've 'd once never ever then earlier before previously "
    "did didn't do don't clearly literally".split()
)
# Who may say things in a request that stays the user's own: the user, and the agent spoken to.
_OWN_SPEAKERS = frozenset(
    "i you we i've i'd you've you'd we've we'd i’ve i’d you’ve you’d we’ve we’d".split()
)
_OTHER_MARKERS = (
    (re.compile(r"(?i)\baccording\s+to\b"), "'according to'"),
    (re.compile(r"(?i)\b(?:forwarded|original)\s+message\b|\bfwd?:"), "a forwarded message"),
    (
        re.compile(r"(?im)^[ \t]*(?:from|to|cc|subject|sent|date|reply-to)[ \t]*:"),
        "an email's header",
    ),
    (re.compile(r"(?m)^[ \t]*>"), "a quoted reply ('>')"),
)
# (A line's own blanks only, [ \t]*, not \s*: from each of a million line breaks, \s* would run
# over all the others again.)
_QUOTE_PAIRS = (("“", "”"), ("«", "»"), ("‘", "’"))
_QUOTE_CHARACTERS = "\"'“”‘’«»„>"


def reported_by(text: str, at: int) -> str | None:
    """What makes the words at `at` of a text someone else's, in a few words ("'the email
    said'", "quotation marks"), or None when they are the user's own: someone_elses anywhere
    in the text, or quoted_at that place."""
    return someone_elses(text) or quoted_at(text, at)


def someone_elses(text: str) -> str | None:
    """What in a text reports someone else's words, or None: a verb of saying whose subject
    is not I, you or we ("the email said", "my boss told me"), "according to", a forwarded
    message, an email's header line (From:, Subject: ...) or a quoted reply line ("> ...")."""
    for match in _SAYING.finditer(text):
        before = re.findall(r"[\w'’]+", text[max(0, match.start() - 80) : match.start()])
        while before and before[-1].lower() in _BETWEEN:
            before.pop()
        if not before or before[-1].lower() not in _OWN_SPEAKERS:
            return "'" + " ".join([*before[-2:], match.group(0)]) + "'"
    for pattern, name in _OTHER_MARKERS:
        if pattern.search(text):
            return name
    return None


def foreign_words(text: str) -> str | None:
    """What in a text is someone else's (someone_elses), or "quotation marks" when it quotes
    anything; None when it is the user's own words throughout."""
    found = someone_elses(text)
    if found is None and (text.count('"') >= 2 or "“" in text or "«" in text or "„" in text):
        return "quotation marks"
    return found


def quoted_at(text: str, at: int, *, colon: bool = True) -> str | None:
    """Whether the words at `at` are inside quotation marks ("quotation marks") or, unless
    colon=False, follow a colon ("a colon before it": it introduces someone's words, or a
    list; either way no request of the user's), else None."""
    start = at
    while start < len(text) and (text[start].isspace() or text[start] in _QUOTE_CHARACTERS):
        start += 1
    head = text[:start]
    opened = head.count('"') % 2 == 1 or any(
        head.count(opening) > head.count(closing) for opening, closing in _QUOTE_PAIRS
    )
    last = head.rstrip()[-1:]
    if opened or "„" in head or (last and last in "'\"‘“«"):
        return "quotation marks"
    if colon and head.rstrip().rstrip(_QUOTE_CHARACTERS).rstrip().endswith(":"):
        return "a colon before it"
    return None
