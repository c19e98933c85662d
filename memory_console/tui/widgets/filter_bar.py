"""The filter bar: text (with actor:NAME), status, type, tier, owner and a confidence range."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.message import Message
from textual.timer import Timer
from textual.validation import Number
from textual.widgets import Input, Select

from memory_console.literal import literal
from memory_console.store.vocab import MEMORY_TYPES, STATUSES, TIERS
from memory_console.tui.widgets.literal_input import LiteralInput

DEBOUNCE = 0.3  # seconds of quiet typing before the table follows
ACTOR_WORD = "actor:"  # a word of the text field naming an actor (actor:mcp:cursor@alice)


@dataclass(frozen=True, slots=True)
class FilterValues:
    """What the bar asks for; None means any."""

    text: str | None = None
    status: str | None = None
    memory_type: str | None = None
    tier: str | None = None
    owner: str | None = None
    min_confidence: float | None = None
    max_confidence: float | None = None
    actor: str | None = None


def split_actor(text: str) -> tuple[str, str | None]:
    """The text field's words without an `actor:NAME` word, and that name (the last one given):
    the events' actor is one word, so it rides in the text field instead of a field of its own."""
    words, actor = [], None
    for word in text.split():
        if word.lower().startswith(ACTOR_WORD) and len(word) > len(ACTOR_WORD):
            actor = word[len(ACTOR_WORD) :]
        else:
            words.append(word)
    return " ".join(words), actor


def choices(values: tuple[str, ...]) -> list[tuple[Text, str]]:
    """Select options: an owner's name is stored text, shown literally."""
    return [(literal(value), value) for value in values]


class FilterBar(Horizontal):
    """One line of compact fields; changes are reported (debounced) as FilterBar.Changed."""

    DEFAULT_CSS = """
    FilterBar {
        height: 1;
        width: 1fr;
        & > Input, & > Select { margin-right: 1; background: $boost; }
        & > Input { width: 1fr; min-width: 12; }
        /* every field whole at 80 columns: 12 + 3 * 10 + 12 + 2 * 8 and the gaps */
        & > Select { width: 10; }
        & > #filter-owner { width: 12; }
        & > .confidence { width: 8; min-width: 8; }
        & > #filter-max { margin-right: 0; }
    }
    """

    @dataclass
    class Changed(Message):
        bar: FilterBar
        values: FilterValues

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._timer: Timer | None = None
        self._owners: list[str] = []

    def compose(self) -> ComposeResult:
        unit = [Number(minimum=0.0, maximum=1.0, failure_description="a number from 0 to 1")]
        yield LiteralInput(
            placeholder="filter text",
            id="filter-text",
            compact=True,
            tooltip="Only memories containing all these words; actor:NAME only those an actor "
            "touched (actor:mcp:cursor@alice, actor:tui)",
        )
        yield Select(
            choices(STATUSES),
            prompt="status",
            id="filter-status",
            compact=True,
            tooltip="Only memories with this status",
        )
        yield Select(
            choices(MEMORY_TYPES),
            prompt="type",
            id="filter-type",
            compact=True,
            tooltip="Only memories of this type",
        )
        yield Select(
            choices(TIERS),
            prompt="tier",
            id="filter-tier",
            compact=True,
            tooltip="Only memories in this tier",
        )
        yield Select(
            [],
            prompt="owner",
            id="filter-owner",
            compact=True,
            tooltip="Only memories of this owner",
        )
        yield LiteralInput(
            placeholder="conf ≥",
            id="filter-min",
            classes="confidence",
            compact=True,
            validators=unit,
            tooltip="Lowest confidence to show (0 to 1)",
        )
        yield LiteralInput(
            placeholder="conf ≤",
            id="filter-max",
            classes="confidence",
            compact=True,
            validators=unit,
            tooltip="Highest confidence to show (0 to 1)",
        )

    @property
    def values(self) -> FilterValues:
        def chosen(select_id: str) -> str | None:
            value: Any = self.query_one(select_id, Select).value
            return None if value is Select.NULL else str(value)

        text, actor = split_actor(self.query_one("#filter-text", Input).value)
        return FilterValues(
            text=text or None,
            actor=actor,
            status=chosen("#filter-status"),
            memory_type=chosen("#filter-type"),
            tier=chosen("#filter-tier"),
            owner=chosen("#filter-owner"),
            min_confidence=self.unit("#filter-min"),
            max_confidence=self.unit("#filter-max"),
        )

    def unit(self, input_id: str) -> float | None:
        field = self.query_one(input_id, Input)
        value = field.value.strip()
        if not value:
            return None
        try:
            number = float(value)
        except ValueError:
            return None
        return number if 0.0 <= number <= 1.0 else None

    def set_owners(self, owners: list[str]) -> None:
        """Offer these owners in the owner choice (keeps the current one)."""
        if owners == self._owners:
            return
        self._owners = owners
        select = self.query_one("#filter-owner", Select)
        current = select.value
        with self.prevent(Select.Changed):
            select.set_options(choices(tuple(owners)))
            if current is not Select.NULL and current in owners:
                select.value = current

    def set_owner(self, owner: str | None) -> None:
        """Follow the topics tree: show its owner here without reporting a change."""
        select = self.query_one("#filter-owner", Select)
        with self.prevent(Select.Changed):
            if owner is None:
                select.clear()
            elif owner in self._owners:
                select.value = owner

    def set_status(self, status: str | None) -> None:
        select = self.query_one("#filter-status", Select)
        with self.prevent(Select.Changed):
            if status is None:
                select.clear()
            else:
                select.value = status

    @on(Select.Changed)
    def _select_changed(self, event: Select.Changed) -> None:
        event.stop()
        self.report()

    @on(Input.Changed)
    def _input_changed(self, event: Input.Changed) -> None:
        event.stop()
        if event.validation_result is not None and not event.validation_result.is_valid:
            return
        if self._timer is not None:
            self._timer.stop()
        self._timer = self.set_timer(DEBOUNCE, self.report)

    @on(Input.Submitted)
    def _input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if event.validation_result is not None and not event.validation_result.is_valid:
            self.notify(
                f"confidence: {'; '.join(event.validation_result.failure_descriptions)}",
                severity="warning",
            )
            return
        if self._timer is not None:
            self._timer.stop()
        self.report()

    def report(self) -> None:
        self._timer = None
        self.post_message(self.Changed(self, self.values))
