"""Finding credentials, identifiers and health data in a memory's text, and masking them."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

MASK = "••••••"
MAX_MASK_ROUNDS = 4
WORD = re.compile(r"\w{3,}")

# Words that follow "password is" in a sentence about a password, not in one giving it
# ("password = same" gives one: the exception is for "is" only).
NOT_A_VALUE = (
    r"(?:not|the|a|an|to|too|in|on|for|my|your|his|her|our|their|its|set|reset|required|"
    r"wrong|correct|missing|expired|changed|same|still|also|now|being|was|has|had|stored|"
    r"saved|kept|known|unknown|different|weak|strong|long|short|case|written|needed)"
)

# A secret given in a sentence, with words between its name and its value ("my password for
# the office Wi-Fi is Tr0ub4dor&3", "the PIN for my card is 4821", "the code to the gate is
# 1234"): what it is for (a preposition and up to five words, or "I use" and the like), then
# "is" (or ":" / "="), then the value.
OF_WHAT = (
    r"(?:\s+(?:that\s+)?(?:I|we|you|they|he|she)\s+(?:use|used|have|had|set|chose|picked)\b)?"
    r"(?:\s+(?:for|to|of|on|at|in|into)(?:\s+[\w'&/-]+){1,5}?)?"
)
GIVEN = r"(?:\s*[:=]\s*|\s+(?:is|was)(?:\s+(?:now|still|set\s+to))?\s+)"
# After "is", a prose password must look like one (a digit, a symbol or a capital inside the
# word) or be quoted: "the password for the VPN is easy to guess" gives none. After ":" or "="
# any words do ("passphrase of my wallet: purple monkey dishwasher").
LOOKS_LIKE_PASSWORD = r"(?=[^\s,;•]*(?:\d|[^\w\s,;•'\".!?]|(?<=\w)[A-Z]))[^\s,;•]{3,}"
# A quote left open runs to the end: a title cut short must not show half the value.
QUOTED = r"(?:\"[^\"\n]{3,64}(?:\"|$)|'[^'\n]{3,64}(?:'|$)|“[^”\n]{3,64}(?:”|$))"
PROSE_PASSWORD = (
    r"(?i)\b(?:password|passwd|passphrase|pass\s+phrase)\b"
    rf"(?=\s+(?:that\s+)?(?:I|we|you|they|he|she)\s|\s+(?:for|to|of|on|at|in|into)\s)"
    rf"{OF_WHAT}(?:\s*[:=]\s*(?P<secret>(?!{NOT_A_VALUE}\b)[^\n,;•]*[^\s,;•.!?])"
    rf"|\s+(?:is|was)(?:\s+(?:now|still|set\s+to))?\s+"
    rf"(?P<said>{QUOTED}|(?-i:{LOOKS_LIKE_PASSWORD})))"
)
# A passphrase is often plain words ("my passphrase for the backup disk is correct horse
# battery staple"): after "is", three to eight lower-case words, none of them a word that
# describes the passphrase instead ("is stored in my vault", "is too long to type").
NOT_A_PASSPHRASE_WORD = (
    r"(?:the|a|an|my|your|our|his|her|their|its|this|that|in|on|at|for|to|of|with|from|by|"
    r"and|or|but|not|no|is|are|was|were|be|been|it|too|very|so|still|now|also|same|"
    r"different|stored|kept|saved|written|hidden|set|changed|long|short|easy|hard|simple|"
    r"secure|strong|weak|secret|somewhere|there|here|something|what|which|where|when)"
)
PASSPHRASE_WORD = rf"(?!{NOT_A_PASSPHRASE_WORD}\b)[a-z]{{2,15}}"
PROSE_PASSPHRASE = (
    r"(?i)\b(?:passphrase|pass\s+phrase)\b"
    rf"{OF_WHAT}\s+(?:is|was)\s+"
    rf"(?P<secret>(?-i:{PASSPHRASE_WORD}(?:\s+{PASSPHRASE_WORD}){{2,7}}))(?=\s*(?:[.!;,\n]|$))"
)
# A PIN is digits (3 to 10, a # or * around them); a code may also be capitals and digits with
# at least one digit ("X7F2-9K"). Neither is a time, date, version, amount or measure.
DIGITS = r"[#*]?\d{3,10}[#*]?"
NOT_A_NUMBER_OF = (
    r"(?![\w:/-]|[.,]\d|\s*(?:%|(?:am|pm|ms|s|kb|mb|gb|km|kg|px|hours?|minutes?|seconds?|days?|"
    r"weeks?|months?|years?|lines?|bytes?|chars?|characters?|users?|people|times|files?|tests?|"
    r"steps?|pixels?|dollars?|euros?|eur|usd)\b))"
)
PIN_VALUE = rf"(?P<secret>{DIGITS}){NOT_A_NUMBER_OF}"
CODE_VALUE = (
    rf"(?P<secret>{DIGITS}|(?-i:(?=[A-Z]*\d)[A-Z0-9]{{4,10}}(?:-[A-Z0-9]{{2,6}})?))"
    rf"{NOT_A_NUMBER_OF}"
)
PROSE_PIN = (
    r"(?i)\b(?-i:PIN|Pin|pin)(?:\s+(?:code|number))?\b"
    rf"{OF_WHAT}{GIVEN}{PIN_VALUE}"
)
# Codes that open something: named so ("gate code", "alarm code", "passcode"), or "the code
# to/for/of/on" one of the things a code opens.
OPENS = (
    r"(?:front\s+|back\s+|side\s+|main\s+|garage\s+|bike\s+|building\s+|office\s+)?"
    r"(?:doors?|gates?|alarms?|safes?|locks?|padlocks?|garages?|buildings?|keypads?|lockers?|"
    r"vaults?|lobby|entrances?|house|flat|apartment|storage(?:\s+unit)?|suitcase|phone|"
    r"wi-?fi|router|lab|server\s+room|basement|shed|mailbox|key\s*box|lockbox)"
)
PROSE_PASSCODE = (
    r"(?i)\b(?:(?:access|entry|door|gate|alarm|security|lock|garage|keypad|safe|locker|"
    r"building|unlock|pass|verification|wi-?fi)\s*code|passcode|code\s+(?:for|to|of|on|at)"
    rf"(?:\s+(?:the|my|our|your|his|her|their|a))?(?:\s+[\w'-]+)?\s+{OPENS}\b)"
    rf"{OF_WHAT}{GIVEN}{CODE_VALUE}"
)

# Each pattern's group "secret" or "said" (or the whole match) is what gets masked.
CREDENTIAL_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "private key",
        re.compile(
            r"-----BEGIN (?:[A-Z]+ )*PRIVATE KEY-----"
            r"(?:[\s\S]*?-----END (?:[A-Z]+ )*PRIVATE KEY-----|(?:\s*[A-Za-z0-9+/=]{8,})*)"
        ),
    ),
    (
        "ssh key",
        re.compile(
            r"\b(?:ssh-rsa|ssh-ed25519|ssh-dss|ecdsa-sha2-nistp\d+) "
            r"(?P<secret>AAAA[0-9A-Za-z+/=]{16,})"
        ),
    ),
    (
        "password",
        re.compile(
            r"(?i)\b(?:password|passwd|pwd|passphrase)\b"
            rf"(?:\s+is\s+(?!{NOT_A_VALUE}(?:[\s.,;:!?]|$))|\s*[=:]\s*)"
            # a whole word, and not one naming which key is the password ("Password=Letta
            # API key"): that sentence says where the password is, not what it is
            r"(?P<secret>[^\s,;•]{3,})(?![^\s,;•])(?!\s+(?:api\s+)?(?:key|token)s?\b)"
        ),
    ),
    ("password", re.compile(PROSE_PASSWORD)),
    ("password", re.compile(PROSE_PASSPHRASE)),
    ("PIN", re.compile(PROSE_PIN)),
    ("passcode", re.compile(PROSE_PASSCODE)),
    (
        "api key",
        re.compile(
            r"(?i)\b(?:api[ _-]?key|secret[ _-]?key|access[ _-]?token|auth[ _-]?token|"
            r"client[ _-]?secret)\b\s*(?:is|=|:)?\s*(?P<secret>[A-Za-z0-9_\-./+=]{8,})"
        ),
    ),
    ("bearer token", re.compile(r"(?i)\bbearer\s*(?:=|:)?\s*(?P<secret>[A-Za-z0-9_\-.=+/]{12,})")),
    (
        "api key",
        re.compile(
            r"\b(?P<secret>(?:sk|pk|rk)[-_](?:live_|test_)?[A-Za-z0-9_\-]{16,}|gh[pousr]_[A-Za-z0-9]{20,}|AKIA[0-9A-Z]{16}|xox[abpr]-[A-Za-z0-9-]{10,})"
        ),
    ),
    (
        "card number",
        re.compile(r"(?<![\w-])(?P<secret>\d{4}[ -]?\d{4}[ -]?\d{4}[ -]?\d{4})(?![\w-])"),
    ),
    (
        "US SSN",
        re.compile(
            r"(?<![\w-])(?P<secret>(?!000|666|9\d\d)\d{3}-(?!00)\d{2}-(?!0000)\d{4})(?![\w-])"
        ),
    ),
)
# Words and digits without which no credential pattern can match: every pattern above needs one
# of them, at least as loosely (no \b, a shorter run of digits). Most texts hold none, so one
# search proves they hold nothing to mask and the eleven patterns are not run. An ASCII text is
# searched lower-cased (twice as fast as ignoring case; the same answer on ASCII), any other
# with case ignored as the patterns ignore it. A pattern added above needs its word here.
CREDENTIAL_HINT_WORDS = (
    r"private key|ssh-|ecdsa-sha2-|passw|pwd|pass\s*phrase|\bpin\b|code|api[ _-]?key|"
    r"secret|token|bearer|(?:sk|pk|rk)[-_]|gh[pousr]_|akia|xox[abpr]-|"
    r"\d{4}[ -]?\d{4}|\d{3}-\d{2}-\d{4}"
)
CREDENTIAL_HINT = re.compile("(?i)" + CREDENTIAL_HINT_WORDS)
CREDENTIAL_HINT_LOWER = re.compile(CREDENTIAL_HINT_WORDS)


def may_hold_credential(text: str) -> bool:
    """False when no credential pattern can match the text (see CREDENTIAL_HINT_WORDS)."""
    if text.isascii():
        return CREDENTIAL_HINT_LOWER.search(text.lower()) is not None
    return CREDENTIAL_HINT.search(text) is not None


# The hint's words as plain substrings, each found in every text that CREDENTIAL_HINT_WORDS
# finds something in, once lower-cased (see folded): `in` needs no regular expression, where
# Python's engine tries every alternative at every position (an import screens every string
# of a million lines). "pass\s*phrase" needs "phrase", "\bpin\b" "pin", "api[ _-]?key"
# "api", "(?:sk|pk|rk)[-_]" "k-" or "k_", "xox[abpr]-" "xox". ASCII digits are looked for
# with every digit turned into 0: four, a space or a dash, and four; or 3-2-4 (other digits,
# which \d also matches, by HINT_DIGITS).
HINT_LITERALS = (
    "private key", "ssh-", "ecdsa-sha2-", "passw", "pwd", "phrase", "pin", "code", "api",
    "secret", "token", "bearer", "k-", "akia", "xox",
)  # fmt: skip
HINT_UNDERSCORED = ("k_", "ghp_", "gho_", "ghu_", "ghs_", "ghr_")
HINT_DIGIT_SHAPES = ("00000000", "0000 0000", "0000-0000", "000-00-0000")
HINT_DIGITS = re.compile(r"\d{4}[ -]?\d{4}|\d{3}-\d{2}-\d{4}")
ZERO_DIGITS = str.maketrans("123456789", "000000000")
# The only characters beyond ASCII that a pattern ignoring case takes for an ASCII letter
# (tests/test_sensitive.py checks every code point): folded to that letter before a search
# for HINT_LITERALS or HEALTH_LITERALS, which str.lower() alone would miss ("paſſword").
ASCII_FOLDS = (("\u0130", "i"), ("\u0131", "i"), ("\u017f", "s"), ("\u212a", "k"))


def folded(text: str) -> str:
    """The text lower-cased as the patterns ignoring case see it, for a search of literals."""
    if not text.isascii():
        for char, letter in ASCII_FOLDS:
            if char in text:
                text = text.replace(char, letter)
    return text.lower()


def hint_literals_in(lowered: str, *, digits: bool = True) -> bool:
    """Whether `lowered` (see folded) holds a word of HINT_LITERALS or, with `digits`, ASCII
    digits of a card or SSN's shape: never false where CREDENTIAL_HINT finds something (but
    in digits beyond ASCII, which only HINT_DIGITS finds). Loops, not any(): it runs for
    every line of an import."""
    for word in HINT_LITERALS:
        if word in lowered:
            return True
    if "_" in lowered:
        for word in HINT_UNDERSCORED:
            if word in lowered:
                return True
    if digits:
        # On ASCII text, translate is a table look-up per character, far cheaper than \d.
        zeroed = lowered.translate(ZERO_DIGITS)
        if "000" in zeroed:
            for shape in HINT_DIGIT_SHAPES:
                if shape in zeroed:
                    return True
    return False


# What an engineer diagnoses or a procedure prescribes (agent text is full of both): a
# diagnosis counts only as "diagnosed with" / "diagnosis of" (a bare "diagnosed the bug" or
# "initial diagnosis" is an engineer's), and neither it nor a prescription counts when one of
# these follows within a few words.
TECHNICAL = (
    r"(?:bugs?|issues?|problems?|errors?|leaks?|failures?|regressions?|outages?|incidents?|"
    r"crash(?:es)?|deadlocks?|timeouts?|bottlenecks?|tests?|builds?|races?|queries|query|"
    r"steps?|format|order|checklists?|workflows?|process|procedures?|schema|api|code|config\w*)"
)
NOT_MEDICAL = rf"(?!(?:\s+[\w'-]+){{0,3}}?\s+{TECHNICAL}\b)"
HEALTH_PATTERN = re.compile(
    rf"(?i)\b(?:(?:diagnos(?:ed|is|ing)\s+(?:with|of)|prescri(?:bed|ption))\b{NOT_MEDICAL}|"
    r"(?:allerg(?:y|ic|ies)|"
    r"diabet(?:es|ic)|asthma|depression|anxiety disorder|adhd|cancer|chemotherapy|hiv|"
    r"pregnan(?:t|cy)|medication|blood pressure|insulin|antidepressant|therapy sessions?|"
    r"epilep(?:sy|tic)|migraines?)\b)"
)
# Substrings without which HEALTH_PATTERN cannot match a text lower-cased as folded() does
# (its terms' stems; its spaces are literal ones), searched for as HINT_LITERALS are.
HEALTH_LITERALS = (
    "diagnos", "prescri", "allerg", "diabet", "asthma", "depression", "anxiety disorder",
    "adhd", "cancer", "chemotherapy", "hiv", "pregnan", "medication", "blood pressure",
    "insulin", "antidepressant", "therapy session", "epilep", "migraine",
)  # fmt: skip
# A documentation placeholder in a credential's place: "sk-ant-...", "<YOUR_API_KEY>",
# "${TOKEN}", "xxxx", "your-api-key-here". It holds no secret, so it is neither refused nor masked.
PLACEHOLDER = re.compile(
    r"(?i)^(?:.*(?:\.\.\.|\u2026).*|<.*>|\{.*\}|\[.*\]|\$\{.*\}|(?-i:\$[A-Z_][A-Z0-9_]*)|"
    r"(?:[a-z]{2,4}[-_])*[x*•#.]+(?:[-_][x*•#.]+)*|"
    r"your[-_ ]\S*|\S*[-_](?:here|placeholder)|changeme|placeholder|redacted|example|dummy)$"
)


@dataclass(frozen=True, slots=True)
class Finding:
    """One sensitive span: its kind and where it is in the text."""

    kind: str
    start: int
    end: int

    @property
    def is_health(self) -> bool:
        return self.kind == "health data"


def luhn_ok(digits: str) -> bool:
    numbers = [int(d) for d in digits if d.isdigit()]
    total = 0
    for position, number in enumerate(reversed(numbers)):
        if position % 2:
            number *= 2
            if number > 9:
                number -= 9
        total += number
    return total % 10 == 0


def is_placeholder(value: str) -> bool:
    """Whether a credential-shaped value is a documentation placeholder, not a secret."""
    return PLACEHOLDER.match(value.strip("'\"`")) is not None


def find_sensitive(text: str, *, health: bool = True) -> list[Finding]:
    """Every credential or identifier span (and health terms unless health=False), in order."""
    findings = scan_credentials(text) if may_hold_credential(text) else []
    if health:
        findings.extend(
            Finding("health data", m.start(), m.end()) for m in HEALTH_PATTERN.finditer(text)
        )
    return sorted(findings, key=lambda f: f.start)


def scan_credentials(text: str) -> list[Finding]:
    """Every credential or identifier span, each pattern run in full (no CREDENTIAL_HINT)."""
    findings: list[Finding] = []
    for kind, pattern in CREDENTIAL_PATTERNS:
        value_groups = [name for name in ("secret", "said") if name in pattern.groupindex]
        for match in pattern.finditer(text):
            group = next((name for name in value_groups if match.group(name) is not None), 0)
            start, end = match.span(group)
            if kind == "card number" and not luhn_ok(match.group(group)):
                continue
            if is_placeholder(match.group(group)):
                continue
            if any(f.start <= start < f.end or start <= f.start < end for f in findings):
                continue
            findings.append(Finding(kind, start, end))
    return findings


def mask(text: str, findings: list[Finding] | None = None) -> str:
    """The text with every credential span replaced by a mask (health terms stay readable).

    Masked text holds no credential any more: a mask never matches a pattern, and a text
    whose masking joins words into a new match is masked again."""
    spans = [
        f
        for f in (find_sensitive(text, health=False) if findings is None else findings)
        if not f.is_health
    ]
    for _ in range(MAX_MASK_ROUNDS):
        if not spans:
            return text
        text = masked_spans(text, spans)
        spans = find_sensitive(text, health=False)
    return text


def masked_spans(text: str, spans: list[Finding]) -> str:
    out: list[str] = []
    position = 0
    for finding in spans:
        if finding.start < position:
            continue
        out.append(text[position : finding.start])
        out.append(MASK)
        position = finding.end
    out.append(text[position:])
    return "".join(out)


# Texts already masked, so that each distinct text is masked once: an export's history
# repeats each memory's texts and every record's field names. Emptied when full.
MASKED_TEXTS: dict[str, str] = {}
MASKED_TEXTS_MAX = 65536


def masked_text(text: str) -> str:
    """mask(text), remembered (see MASKED_TEXTS)."""
    masked = MASKED_TEXTS.get(text)
    if masked is None:
        if len(MASKED_TEXTS) >= MASKED_TEXTS_MAX:
            MASKED_TEXTS.clear()
        masked = MASKED_TEXTS[text] = mask(text)
    return masked


# Values that hold no text: mask_value copies them without a call (an export's history holds
# a million of them at 20,000 memories).
NO_TEXT = frozenset((int, float, bool, type(None)))


def mask_value(value: Any) -> Any:
    """A JSON-like value with every string in it, dict keys too, masked."""
    if isinstance(value, str):
        return masked_text(value)
    if isinstance(value, dict):
        known = MASKED_TEXTS
        out: dict[str, Any] = {}
        # Written out, not as calls per item: this loop runs for every field of every event.
        for key, item in value.items():
            name = known.get(key) if type(key) is str else None
            if name is None:
                name = masked_text(str(key))
            kind = type(item)
            if kind is str:
                text = known.get(item)
                out[name] = masked_text(item) if text is None else text
            elif kind in NO_TEXT:
                out[name] = item
            else:
                out[name] = mask_value(item)
        return out
    if isinstance(value, list | tuple):
        return [item if type(item) in NO_TEXT else mask_value(item) for item in value]
    return value


def secret_words(*texts: str) -> set[str]:
    """The words (lower case) inside the credential spans of the texts."""
    words: set[str] = set()
    for text in texts:
        for finding in find_sensitive(text, health=False):
            words.update(WORD.findall(text[finding.start : finding.end].lower()))
    return words


def changed_by_masking(value: Any) -> bool:
    """Whether mask_value would return anything but an equal copy of the value: a string it
    masks, or a tuple, a key that is not a string, a subclass it turns into a plain type.
    Looking is cheaper than copying, and most memories hold nothing to mask."""
    kind = type(value)
    if kind is str:
        return masked_text(value) != value
    if kind is dict:
        known = MASKED_TEXTS
        for key, item in value.items():
            if type(key) is not str or (known.get(key) or masked_text(key)) != key:
                return True
            kind = type(item)
            if kind is str:
                if (known.get(item) or masked_text(item)) != item:
                    return True
            elif kind not in NO_TEXT and changed_by_masking(item):
                return True
        return False
    if kind is list:
        return any(type(item) not in NO_TEXT and changed_by_masking(item) for item in value)
    return kind not in NO_TEXT and isinstance(value, str | dict | list | tuple)


def mask_record(data: dict[str, Any]) -> dict[str, Any]:
    """A memory as exports and the CLI show it (title, content, keywords, metadata, history):
    every string masked, and a keyword that is a word of a masked secret masked too. A new
    dict; what it holds is the input's own where nothing in it is masked."""
    texts = (str(data.get("title") or ""), str(data.get("content") or ""))
    # A text that masking leaves as it is holds no secret (a mask is never a finding).
    hidden = secret_words(*(text for text in texts if masked_text(text) != text))
    masked = mask_value(data) if changed_by_masking(data) else dict(data)
    if isinstance(masked.get("keywords"), list):
        masked["keywords"] = mask_keywords(masked["keywords"], hidden)
    return masked


def mask_keywords(keywords: list[Any], hidden: set[str]) -> list[Any]:
    """The keywords, each one holding a word of a secret (see secret_words) masked."""
    if not hidden:
        return keywords
    return [
        MASK if isinstance(k, str) and hidden & set(WORD.findall(k.lower())) else k
        for k in keywords
    ]


def strings_of(value: Any) -> Iterator[str]:
    """Every string in a JSON-like value (dict keys included: a key can hold a secret too)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from strings_of(key)
            yield from strings_of(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from strings_of(item)


def collect_strings(value: Any, out: list[str]) -> list[str]:
    """strings_of(value) appended to `out`, without a generator per value."""
    kind = type(value)
    if kind is str:
        out.append(value)
    elif kind is dict:
        for key, item in value.items():
            collect_strings(key, out)
            if type(item) is str:
                out.append(item)
            elif type(item) not in NO_TEXT:
                collect_strings(item, out)
    elif kind is list or kind is tuple:
        for item in value:
            if type(item) is str:
                out.append(item)
            elif type(item) not in NO_TEXT:
                collect_strings(item, out)
    elif kind not in NO_TEXT:
        out.extend(strings_of(value))  # a subclass of str, dict, list or tuple
    return out


def joined(texts: list[str]) -> tuple[str, str]:
    """The ASCII texts joined by NUL and lower-cased, and the others joined by NUL.

    A NUL between two texts is neither a word character nor a space, so a pattern that
    matches in one of the texts matches in the joined text too (\\b sees a NUL as it sees
    the text's end; nothing that needs a space or a word character runs over it): one search
    answers for all the texts. Most texts are ASCII, searched for literals alone."""
    plain = [text for text in texts if text.isascii()]
    other = [text for text in texts if not text.isascii()] if len(plain) < len(texts) else []
    return "\0".join(plain).lower(), "\0".join(other)


# The kinds each distinct text holds, so that texts an import repeats (a demo-like store's,
# every record's field names) are screened once. Emptied when full.
CREDENTIAL_KINDS: dict[str, tuple[str, ...]] = {}


def text_credential_kinds(text: str) -> tuple[str, ...]:
    """The kinds of credential or identifier in one text, in order, remembered."""
    kinds = CREDENTIAL_KINDS.get(text)
    if kinds is None:
        if len(CREDENTIAL_KINDS) >= MASKED_TEXTS_MAX:
            CREDENTIAL_KINDS.clear()
        found = find_sensitive(text, health=False)
        kinds = CREDENTIAL_KINDS[text] = tuple(dict.fromkeys(f.kind for f in found))
    return kinds


def credential_kinds(value: Any) -> list[str]:
    """The kinds of credential or identifier in any string of a JSON-like value, in order.

    All the strings are first searched at once (see joined) for the hint's words: most values
    hold none, and then hold no credential. Otherwise each string is screened on its own, as
    find_sensitive screens it."""
    texts = collect_strings(value, [])
    ascii_part, other = joined(texts)
    if not hint_literals_in(ascii_part) and not (
        other and (hint_literals_in(folded(other), digits=False) or HINT_DIGITS.search(other))
    ):
        return []
    kinds: dict[str, None] = {}
    for text in texts:
        kinds.update(dict.fromkeys(text_credential_kinds(text)))
    return list(kinds)


def has_health_data(*texts: str) -> bool:
    """Whether any of the texts holds a health term (HEALTH_PATTERN). The texts are first
    searched at once (see joined) for the terms' stems (HEALTH_LITERALS); the pattern runs
    only where one is found (on the others joined: a NUL ends its look-ahead as an end does)."""
    ascii_part, other = joined(list(texts))
    if other and health_literals_in(folded(other)) and HEALTH_PATTERN.search(other):
        return True
    if not health_literals_in(ascii_part):
        return False
    return any(HEALTH_PATTERN.search(text) for text in texts if text.isascii())


def health_literals_in(lowered: str) -> bool:
    for word in HEALTH_LITERALS:
        if word in lowered:
            return True
    return False


ARTICLES = {"ssh key": "an ssh key", "US SSN": "a US SSN", "health data": "health data"}


def with_article(kind: str) -> str:
    """A kind of finding as a sentence names it: "a password", "an api key", "a US SSN"."""
    return ARTICLES.get(kind) or ("an " if kind[:1].lower() in "aeiou" else "a ") + kind


def describe(findings: list[Finding]) -> str:
    """A short reason such as "password, card number"."""
    return ", ".join(dict.fromkeys(f.kind for f in findings))
