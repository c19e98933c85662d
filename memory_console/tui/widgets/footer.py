"""The console's footer: the keys that fit the width are shown whole, the rest left out."""

from __future__ import annotations

from textual import events
from textual.app import ComposeResult
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

KEY_GAP = 1  # the compact footer's margin after each key


class FittedFooter(Footer):
    """A compact Footer that never cuts a key in half: keys are kept in binding order while
    they fit beside the palette key; the rest are hidden (? lists every key)."""

    def __init__(self) -> None:
        super().__init__(compact=True)

    def compose(self) -> ComposeResult:
        yield from super().compose()
        self.call_after_refresh(self.fit)

    def on_resize(self, event: events.Resize) -> None:
        self.fit()

    def fit(self) -> None:
        keys = list(self.query(FooterKey))
        if not keys or not self.size.width:
            return
        docked = [key for key in keys if key.has_class("-command-palette")]
        room = self.size.width - sum(key.render().cell_len + KEY_GAP for key in docked)
        used = 0
        for key in keys:
            if key in docked:
                continue
            used += key.render().cell_len + KEY_GAP
            key.display = used <= room
