"""What every screen shares: the store, the search engine, the console's clock and undo list."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from memory_console.embed.search import SearchEngine
from memory_console.settings import Settings
from memory_console.store import Store
from memory_console.tui.actions import DoneAction


@dataclass
class ConsoleContext:
    """The state behind the screens (no widgets here).

    `frozen_now` fixes the time for forecasts and actions (tests, screenshots, --now).
    `revision` grows with each change made through the console, so a screen that was not
    showing knows to reload when it shows again; `outside` grows each time the console sees
    that another process changed the store (the app polls for it).
    """

    settings: Settings
    store: Store
    search: SearchEngine
    frozen_now: float | None = None
    done: list[DoneAction] = field(default_factory=list)
    revision: int = 0
    outside: int = 0
    last_moment: float = 0.0
    semantic_state: str = "keyword search"

    @property
    def read_only(self) -> bool:
        return self.store.read_only or self.settings.read_only

    def now(self) -> float:
        return time.time() if self.frozen_now is None else self.frozen_now

    def action_moment(self) -> float:
        """A time for the next action, distinct from the previous one's, so that undo can
        find exactly the events an action wrote (it looks them up by actor and time)."""
        moment = max(self.now(), self.last_moment + 0.001)
        self.last_moment = moment
        return moment
