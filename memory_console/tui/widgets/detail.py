"""The detail pane beside the table: the highlighted memory at a glance."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import RenderableType
from rich.table import Table
from rich.text import Text
from textual.widgets import Static

from memory_console.describe import created_note
from memory_console.embed.hits import SearchHit
from memory_console.literal import literal
from memory_console.store import EventRecord, MemoryRecord
from memory_console.tui.formatting import (
    PROTECTED_MARK,
    confidence_text,
    masked,
    shown,
    shown_keywords,
    when,
)
from memory_console.tui.story_data import Story


def fields_table(rows: list[tuple[str, RenderableType]]) -> Table:
    grid = Table.grid(padding=(0, 1))
    grid.add_column(style="dim", no_wrap=True)
    grid.add_column()
    for name, value in rows:
        grid.add_row(name, value)
    return grid


def fields_text(rows: list[tuple[str, RenderableType]]) -> Text:
    """The fields as aligned lines of text (cheaper to draw than a table, for the pane that
    follows the cursor)."""
    width = max(len(name) for name, _ in rows) + 1
    text = Text()
    for name, value in rows:
        text.append(name.ljust(width), style="dim")
        text.append(value if isinstance(value, Text) else literal(str(value)))
        text.append("\n")
    return text


def memory_fields(
    record: MemoryRecord,
    supersedes: Sequence[int] = (),
    confidence_now: float | None = None,
    history: Sequence[EventRecord] = (),
) -> list[tuple[str, RenderableType]]:
    """The fields every view of a memory shows, in the order a person reads them; a fact
    that changed names the memory that superseded it, or those it superseded. Given
    `confidence_now` (what a decay run now would set), confidence shows it beside the stored
    value; given the `history`, a merged memory's created time says it is its earliest
    member's."""
    confidence = confidence_text(record.confidence, source=record.source, now=confidence_now)
    base = f"base {record.base_confidence:.2f}"
    if confidence.plain.endswith(" stored)"):  # one parenthesis: (0.85 stored, base 0.85)
        confidence.right_crop(1)
        confidence.append(f", {base})", style="dim")
    else:
        confidence.append(f"  ({base})", style="dim")
    status = record.status + (
        f" into #{record.consolidated_into}" if record.consolidated_into else ""
    )
    protection = f"{PROTECTED_MARK} protected" if record.is_protected else "not protected"
    links = []
    if record.superseded_by is not None:
        links.append(f"superseded by #{record.superseded_by}")
    if supersedes:
        links.append("supersedes " + ", ".join(f"#{ident}" for ident in supersedes))
    # Every field is stored text (another program may have written any of them).
    return [
        ("owner/topic", literal(f"{record.owner} / {record.topic}")),
        *([("namespace", literal(record.namespace))] if record.namespace else []),
        ("type/tier", literal(f"{record.memory_type} / {record.tier}")),
        ("confidence", confidence),
        ("importance", f"{record.importance:.2f}"),
        ("retrievals", f"{record.retrieval_count:,}"),
        ("created", when(record.created_at) + created_note(record, list(history))),
        ("last access", when(record.last_accessed_at)),
        ("status", literal(f"{status}, {protection}")),
        ("decay policy", literal(record.decay_policy)),
        ("source", literal(record.source)),
        *([("fact", "; ".join(links))] if links else []),
    ]


def hit_fields(hit: SearchHit) -> list[tuple[str, RenderableType]]:
    """Why a search hit ranked where it did."""
    parts = [f"score {hit.score:.3f} via {' + '.join(hit.matched)}"]
    if hit.keyword_rank is not None:
        bm25 = f", bm25 {hit.bm25:.2f}" if hit.bm25 is not None else ""
        parts.append(f"keyword rank {hit.keyword_rank}{bm25}")
    if hit.semantic_rank is not None:
        cosine = f", cosine {hit.cosine:.3f}" if hit.cosine is not None else ""
        parts.append(f"semantic rank {hit.semantic_rank}{cosine}")
    if hit.fused is not None:
        parts.append(f"fused {hit.fused:.4f}")
    if hit.effective is not None:
        parts.append(f"effective {hit.effective:.3f}")
    return [("search", "; ".join(parts))]


class DetailPane(Static):
    """Title, fields, forecast line, content and keywords of one memory, cropped to the pane
    (Enter opens the whole story). Its size comes from the layout, never from its content,
    so following the cursor redraws the pane without a new layout of the screen."""

    DEFAULT_CSS = """
    DetailPane { padding: 0 1; overflow: hidden; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.record: MemoryRecord | None = None
        self.hit: SearchHit | None = None
        self.story: Story | None = None
        self.reveal = False
        self.waiting = True  # no rows shown yet: "no memory" would be a wrong answer

    def show(
        self, record: MemoryRecord | None, hit: SearchHit | None = None, *, waiting: bool = False
    ) -> None:
        """Follow the cursor to a memory; the pane redraws once its story (with the forecast)
        arrives, so a cursor move costs one redraw, not two. From an empty pane it draws the
        memory at once: a note saying there is none must not stay beside listed rows.
        `waiting`: the table has not been given its rows yet."""
        was_empty = self.record is None
        self.record, self.hit, self.waiting = record, hit, waiting
        story = self.story
        current = story is not None and record is not None and story.record.id == record.id
        if record is None or was_empty or current:
            self.render_body()

    def show_story(self, story: Story) -> None:
        if self.record is not None and story.record.id == self.record.id:
            self.story = story
            self.record = story.record
            self.render_body()

    def on_resize(self) -> None:
        self.render_body()

    def render_body(self) -> None:
        record = self.record
        if record is None:
            self.story = None
            note = (
                "Reading the store…"
                if self.waiting
                else "No memory here: change the filter or the topic."
            )
            self.update(Text(note, style="dim"), layout=False)
            return
        title = Text(f"#{record.id} ", style="dim")
        title.append(shown(record.title, reveal=self.reveal, style="bold"))
        current = self.story is not None and self.story.record.id == record.id
        story = self.story if current else None
        rows = (
            memory_fields(record, story.supersedes, story.confidence_now, story.history)
            if story is not None
            else memory_fields(record)
        )
        if self.story is not None and current:
            rows.append(("forecast", self.story.forecast_text))
        if self.hit is not None:
            rows += hit_fields(self.hit)
        content = shown(record.content, reveal=self.reveal)
        keywords = Text("keywords: ", style="dim")
        keywords.append(shown_keywords(record, reveal=self.reveal))
        fields = fields_text(rows)
        fields.rstrip()
        parts = [title, fields, content, keywords]
        if masked(record.content, reveal=False) != record.content and not self.reveal:
            parts.append(Text("secrets masked: press v to reveal", style="italic dim"))
        self.update(self.cropped(parts), layout=False)

    def cropped(self, parts: list[Text]) -> Text:
        """The parts wrapped to the pane, the last visible line saying when more is hidden."""
        width = self.content_size.width or 40
        height = self.content_size.height or 12
        lines = [line for part in parts for line in part.wrap(self.app.console, width)]
        if len(lines) > height:
            lines = lines[: max(0, height - 1)]
            lines.append(Text("… Enter shows the whole story", style="italic dim"))
        return Text("\n").join(lines)
