"""The memory table's columns: what each shows and which fit a given width."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from rich.text import Text

from memory_console.confidence_words import confidence_label
from memory_console.embed.hits import SearchHit
from memory_console.store import MemoryRecord
from memory_console.tui.formatting import (
    CHANGED_MARK,
    LABEL_STYLES,
    PROTECTED_MARK,
    SELECTED_MARK,
    SHORT_LABELS,
    STATUS_STYLES,
    confidence_text,
    date_or_never,
    masked,
    one_line,
)

CELL_PADDING = 1
MIN_TITLE = 16


@dataclass(frozen=True, slots=True)
class Cell:
    """What one row needs to draw its cells."""

    record: MemoryRecord
    hit: SearchHit | None
    selected: bool
    reveal: bool
    changed: bool = False  # another process changed it since the table first showed it
    confidence_now: float | None = None  # what a decay run now would set (None: unknown)


@dataclass(frozen=True, slots=True)
class Column:
    """A table column: its key, header, width, the store column it sorts by, and its cell."""

    key: str
    label: str
    width: int
    sort: str | None
    render: Callable[[Cell], Text | str]
    right: bool = False


def _status(cell: Cell) -> Text:
    status = cell.record.status
    return one_line(status, 8, style=STATUS_STYLES.get(status, ""))


def _score(cell: Cell) -> Text:
    if cell.hit is None:
        return Text("")
    return Text(f"{cell.hit.score:.3f}", justify="right")


RELEVANCE_STYLES = {"strong": "bold green", "weak": "yellow", "unrelated": "dim"}


def _relevance(cell: Cell) -> Text:
    """The search's word for how well a hit answers the query (strong, weak, unrelated)."""
    word = getattr(cell.hit, "relevance", None) if cell.hit is not None else None
    if not isinstance(word, str):
        return Text("")
    return Text(word, style=RELEVANCE_STYLES.get(word, ""))


def _owner_topic(width: int) -> Callable[[Cell], Text]:
    return lambda c: one_line(f"{c.record.owner}/{c.record.topic}", width)


def _matched(cell: Cell) -> str:
    if cell.hit is None:
        return ""
    return "+".join("kw" if part == "keyword" else "sem" for part in cell.hit.matched)


def _mark(cell: Cell) -> Text | str:
    if cell.selected:
        return Text(SELECTED_MARK, style="bold")
    return Text(CHANGED_MARK, style="bold yellow") if cell.changed else ""


def table_confidence(cell: Cell, *, short: bool) -> Text:
    """`0.99 v.high`; where decay has lowered it since it was stored, the stored value then
    the one as of now, as the CLI lists them: `0.95→0.33 uncertain` (the words describe the
    value as of now; the narrow column has no room for them, so its colour tells)."""
    record, now = cell.record, cell.confidence_now
    if now is None or round(now, 2) == round(record.confidence, 2):
        return confidence_text(record.confidence, short=short, source=record.source)
    label = confidence_label(now, record.source)
    text = Text(f"{record.confidence:.2f}→", style="dim")
    text.append(f"{now:.2f}", style=LABEL_STYLES[label])
    if not short:
        text.append(f" {SHORT_LABELS[label]}", style=LABEL_STYLES[label])
    return text


SELECT = Column("selected", " ", 1, None, _mark)
TITLE = Column(
    "title",
    "title",
    MIN_TITLE,
    "title",
    lambda c: one_line(masked(c.record.title, reveal=c.reveal)),
)
CONFIDENCE = Column(
    "confidence",
    "confidence",
    22,
    "confidence",
    lambda c: table_confidence(c, short=False),
)
CONFIDENCE_SHORT = Column(
    "confidence",
    "confidence",
    14,
    "confidence",
    lambda c: table_confidence(c, short=True),
)
STATUS = Column("status", "status", 8, "status", _status)
PROTECTED = Column(
    "protected",
    "prot",
    4,
    "is_protected",
    lambda c: PROTECTED_MARK if c.record.is_protected else "",
)
RETRIEVALS = Column(
    "retrievals",
    "ret",
    3,
    "retrieval_count",
    lambda c: Text(f"{c.record.retrieval_count:,}", justify="right"),
    right=True,
)
LAST_ACCESS = Column(
    "last_access",
    "last access",
    11,
    "last_accessed_at",
    lambda c: date_or_never(c.record.last_accessed_at),
)
TYPE = Column("type", "type", 10, "memory_type", lambda c: one_line(c.record.memory_type))
TIER = Column("tier", "tier", 10, "tier", lambda c: one_line(c.record.tier))
IDENT = Column("id", "id", 7, "id", lambda c: Text(str(c.record.id), justify="right"), right=True)
TOPIC = Column("topic", "owner/topic", 22, "topic", _owner_topic(22))
# Search results of one wording are told apart by whose and which topic they are: kept on
# any width, wider when there is room.
TOPIC_SHORT = Column("topic", "owner/topic", 18, "topic", _owner_topic(18))
TOPIC_WIDE = Column("topic", "owner/topic", 30, "topic", _owner_topic(30))
RELEVANCE = Column("relevance", "match", 9, None, _relevance)
SCORE = Column("score", "score", 6, None, _score, right=True)
MATCHED = Column("matched", "via", 6, None, _matched)

# Columns kept on any width after the title, then those added while the title keeps a
# comfortable width, in order (title takes whatever is left).
ESSENTIAL = (CONFIDENCE_SHORT, STATUS, PROTECTED, RETRIEVALS)
SEARCH_ESSENTIAL = (RELEVANCE, TOPIC_SHORT, SCORE, STATUS, PROTECTED)
OPTIONAL = (LAST_ACCESS, TYPE, CONFIDENCE, TIER, IDENT, TOPIC)
SEARCH_OPTIONAL = (
    TOPIC_WIDE,
    CONFIDENCE_SHORT,
    MATCHED,
    RETRIEVALS,
    LAST_ACCESS,
    TYPE,
    CONFIDENCE,
    TIER,
    IDENT,
)
TITLE_COMFORT = 30
DISPLAY_ORDER = (
    "selected",
    "id",
    "relevance",
    "score",
    "matched",
    "title",
    "topic",
    "type",
    "tier",
    "confidence",
    "retrievals",
    "last_access",
    "status",
    "protected",
)


def span(column: Column) -> int:
    return column.width + 2 * CELL_PADDING


def fit_columns(width: int, *, search: bool, relevance: bool = True) -> list[Column]:
    """The columns that fit `width` cells, title taking what the others leave; `relevance`:
    the hits carry the search's relevance word (else its column is left out)."""
    chosen: dict[str, Column] = {}
    used = span(SELECT) + span(TITLE)
    comfort = TITLE_COMFORT - MIN_TITLE
    for reserve, columns in (
        (0, SEARCH_ESSENTIAL if search else ESSENTIAL),
        (comfort, SEARCH_OPTIONAL if search else OPTIONAL),
    ):
        for column in columns:
            if column.key == RELEVANCE.key and not relevance:
                continue
            previous = chosen.get(column.key)
            extra = span(column) - (span(previous) if previous else 0)
            if used + extra + reserve <= width:
                chosen[column.key] = column
                used += extra
    title = Column(
        TITLE.key, TITLE.label, TITLE.width + max(0, width - used), TITLE.sort, TITLE.render
    )
    chosen.update({"selected": SELECT, "title": title})
    return [chosen[key] for key in DISPLAY_ORDER if key in chosen]
