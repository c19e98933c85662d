"""Messages that carry worker results back to the screens (each names what it brings)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from textual.message import Message

from memory_console.embed.hits import SearchHit
from memory_console.store import ChangeResult, ErasureScope, PlaceCount, PurgeResult
from memory_console.tui.actions import DoneAction
from memory_console.tui.paging import PageSlice, View
from memory_console.tui.story_data import Story


@dataclass
class PageLoaded(Message):
    """A page of the memory table; `focus_id` is the row the cursor should land on (when it
    is gone, `focus_row`: the place the cursor held)."""

    page: PageSlice
    focus_id: int | None = None
    focus_end: bool = False
    focus_row: int | None = None
    confidence_now: dict[int, float] = field(default_factory=dict)  # by id, as of now


@dataclass
class CountLoaded(Message):
    """How many memories match a view (counted apart: a count may take longer than a page)."""

    view: View
    count: int


@dataclass
class TopicsLoaded(Message):
    """(owner, namespace, topic, count) rows for the topics tree."""

    counts: list[PlaceCount]


@dataclass
class StoryLoaded(Message):
    """One memory's story, for the detail pane or the story screen."""

    story: Story


@dataclass
class ChartBuilt(Message):
    """A confidence chart rendered off the interface thread."""

    memory_id: int
    chart: Any  # rich.text.Text
    width: int


@dataclass
class SearchDone(Message):
    """Search results and the mode that produced them."""

    query: str
    mode: str
    hits: list[SearchHit]
    fallback: str | None = None  # why the results are keyword matches only, if they are
    confidence_now: dict[int, float] = field(default_factory=dict)  # by id, as of now


@dataclass
class ActionDone(Message):
    """A person's action went through the Store (or was undone)."""

    done: DoneAction
    result: ChangeResult
    text: str
    undo: bool = False


@dataclass
class RemovalAsked(Message):
    """The memories an archive or forget would take out of recall, with the protected ones
    among them (id -> title) that its dialog names; `title` is the one memory's title."""

    name: str
    ids: list[int]
    protected: dict[int, str]
    title: str | None


@dataclass
class PurgeAsked(Message):
    """What purging the chosen memories would erase, and the purge file it would write:
    the confirmation dialog shows it."""

    scope: ErasureScope
    out: Path
    moment: float


@dataclass
class Purged(Message):
    """The memories were erased, after being written to `out` (the only way back)."""

    result: PurgeResult
    out: Path
    moment: float


@dataclass
class EditRefused(Message):
    """The Store refused an edit: show why and let the person fix the values."""

    memory_id: int
    fields: dict[str, Any]
    reason: str


@dataclass
class SemanticProgress(Message):
    """Embedding progress at start-up (later reports replace earlier ones in the queue)."""

    done: int
    total: int

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, SemanticProgress)


@dataclass
class SemanticFinished(Message):
    """Semantic search is ready (ready=True) or unavailable, and why."""

    ready: bool
    detail: str
