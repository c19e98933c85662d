"""How the console writes a memory's values: confidence with its words, dates, masked text
shown literally (stored text becomes a renderable only through `literal`)."""

from __future__ import annotations

import re
from datetime import UTC, datetime

from rich.style import StyleType
from rich.text import Text

from memory_console.confidence_words import confidence_label
from memory_console.literal import literal
from memory_console.sensitive import mask, mask_keywords, secret_words
from memory_console.store import MemoryRecord
from memory_console.timeutil import to_date

# One word per confidence label, for narrow tables.
SHORT_LABELS = {
    "stated explicitly": "stated",
    "very high confidence": "v.high",
    "high confidence": "high",
    "inferred": "inferred",
    "uncertain": "uncertain",
}
LABEL_STYLES = {
    "stated explicitly": "bold green",
    "very high confidence": "bold green",
    "high confidence": "green",
    "inferred": "yellow",
    "uncertain": "red",
}
STATUS_STYLES = {"active": "", "archived": "dim", "consolidated": "dim italic"}
LAYOUT_RUN = re.compile(r"[ \t\n]+")
PROTECTED_MARK = "◆"
SELECTED_MARK = "●"
CHANGED_MARK = "*"  # a row another process changed since it was shown


def confidence_text(
    value: float, *, short: bool = False, source: str | None = None, now: float | None = None
) -> Text:
    """`0.82 high confidence`, the words coloured by how sure the memory is; with `now` (the
    value a decay run now would set) where it differs: `0.33 uncertain now (0.85 stored)`."""
    shown = value if now is None else now
    label = confidence_label(shown, source)
    words = SHORT_LABELS[label] if short else label
    text = Text(f"{shown:.2f} ")
    text.append(words, style=LABEL_STYLES[label])
    if now is not None and round(now, 2) != round(value, 2):
        text.append(f" now ({value:.2f} stored)", style="dim")
    return text


def when(ts: float | None) -> str:
    """`2026-05-28 03:27 UTC`, or `never`."""
    if ts is None:
        return "never"
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M UTC")


def date_or_never(ts: float | None) -> str:
    return to_date(ts) or "never"


def masked(text: str, *, reveal: bool) -> str:
    """Secrets masked until the person reveals them (the masked text, not yet shown)."""
    return text if reveal else mask(text)


def shown(text: str, *, reveal: bool, style: StyleType = "") -> Text:
    """The text as the console shows it: secrets masked until the person reveals them, the
    rest literally."""
    return literal(masked(text, reveal=reveal), style)


def shown_keywords(record: MemoryRecord, *, reveal: bool) -> Text:
    """A memory's keywords as the console shows them: a word of a masked secret masked."""
    if reveal:
        return literal(", ".join(record.keywords) or "none")
    hidden = secret_words(record.title, record.content)
    return literal(", ".join(mask(k) for k in mask_keywords(record.keywords, hidden)) or "none")


def one_line(text: str, limit: int = 200, *, style: StyleType = "") -> Text:
    """Text flattened to one line (titles in a table cell), shown literally: runs of spaces,
    newlines and tabs become one space; every other control character is shown escaped."""
    flat = literal(LAYOUT_RUN.sub(" ", text).strip(), style)
    flat.truncate(limit, overflow="ellipsis")
    # A cell narrower than the text ends it with "…", so a cut title never reads as whole.
    flat.no_wrap = True
    flat.overflow = "ellipsis"
    return flat
