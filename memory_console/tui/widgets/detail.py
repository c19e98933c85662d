"""The detail pane beside the table: the highlighted memory at a glance."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

from memory_console.embed.hits import SearchHit
from memory_console.store import MemoryRecord
from memory_console.tui.formatting import PROTECTED_MARK, confidence_text, shown, when
from memory_console.tui.story import Story


def fields_table(rows: list[tuple[str, RenderableType]]) -> Table:
    grid = Table.grid(padding=(0, 1))
    grid.add_column(style="dim", no_wrap=True)
    grid.add_column()
    for name, value in rows:
        grid.add_row(name, value)
    return grid


def memory_fields(record: MemoryRecord) -> list[tuple[str, RenderableType]]:
    """The fields every view of a memory shows, in the order a person reads them."""
    confidence = confidence_text(record.confidence)
    confidence.append(f"  (base {record.base_confidence:.2f})", style="dim")
    status = record.status + (f" into #{record.consolidated_into}"
                              if record.consolidated_into else "")
    protection = f"{PROTECTED_MARK} protected" if record.is_protected else "not protected"
    return [
        ("owner/topic", f"{record.owner} / {record.topic}"),
        ("type/tier", f"{record.memory_type} / {record.tier}"),
        ("confidence", confidence),
        ("importance", f"{record.importance:.2f}"),
        ("retrievals", f"{record.retrieval_count:,}"),
        ("created", when(record.created_at)),
        ("last access", when(record.last_accessed_at)),
        ("status", f"{status}, {protection}"),
        ("decay policy", record.decay_policy),
        ("source", record.source),
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


class DetailPane(VerticalScroll):
    """Title, fields, forecast line, content and keywords of one memory."""

    DEFAULT_CSS = """
    DetailPane { padding: 0 1; }
    DetailPane > Static { width: 1fr; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.record: MemoryRecord | None = None
        self.hit: SearchHit | None = None
        self.story: Story | None = None
        self.reveal = False
        self.can_focus = True

    def compose(self) -> ComposeResult:
        yield Static(id="detail-body")

    def show(self, record: MemoryRecord | None, hit: SearchHit | None = None) -> None:
        """Show a memory at once from its row; its story (forecast) follows via show_story."""
        if self.story is not None and record is not None and self.story.record.id != record.id:
            self.story = None
        self.record, self.hit = record, hit
        self.render_body()

    def show_story(self, story: Story) -> None:
        if self.record is not None and story.record.id == self.record.id:
            self.story = story
            self.record = story.record
            self.render_body()

    def render_body(self) -> None:
        body = self.query_one("#detail-body", Static)
        record = self.record
        if record is None:
            body.update(Text("No memory here: change the filter or the topic.", style="dim"))
            return
        title = Text(f"#{record.id} ", style="dim")
        title.append(shown(record.title, reveal=self.reveal), style="bold")
        rows = memory_fields(record)
        if self.story is not None:
            rows.append(("forecast", self.story.forecast_text))
        else:
            rows.append(("forecast", Text("…", style="dim")))
        if self.hit is not None:
            rows += hit_fields(self.hit)
        content = Text(shown(record.content, reveal=self.reveal))
        keywords = Text("keywords: ", style="dim")
        keywords.append(", ".join(record.keywords) or "none")
        parts: list[RenderableType] = [title, fields_table(rows), Text(""), content,
                                       keywords]
        if shown(record.content, reveal=False) != record.content and not self.reveal:
            parts.append(Text("secrets masked: press v to reveal", style="italic dim"))
        body.update(Group(*parts))
