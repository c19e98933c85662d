"""Command palette provider: the console's own actions on the current screen and its screens,
then the theme and quit; not the widgets' cursor and clipboard keys."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, cast

from textual.command import DiscoveryHit, Hit, Hits, Provider

if TYPE_CHECKING:
    from memory_console.tui.app import MemoryConsoleApp

Command = tuple[str, str, Callable[[], object]]


class ConsoleCommands(Provider):
    """Actions of the focused widget and screen (by their binding descriptions), and screens,
    sorted by title; then the few of Textual's own that an operator wants (theme, quit).

    Only the console's bindings count (each has an id): Textual's widgets bring theirs
    ("Cursor left", "Copy selected text"), which the keys already do and which would bury
    the console's commands.
    """

    def commands(self) -> list[Command]:
        app = cast("MemoryConsoleApp", self.app)
        screen = self.screen
        found: dict[str, Command] = {}
        for active in screen.active_bindings.values():
            binding = active.binding
            if not binding.description or binding.id is None or binding.system:
                continue
            title = binding.description
            # The key as the footer draws it ("?", "/", "^p"), not its name ("question_mark").
            help_text = f"{binding.tooltip or title} ({app.get_key_display(binding)})"
            if not active.enabled:
                help_text = f"unavailable here: {help_text}"
                run: Callable[[], object] = partial(app.explain_disabled, title)
            else:
                run = partial(app.call_later, app.run_action, binding.action, active.node)
            found.setdefault(title, (title, help_text, run))
        for title, help_text, run in app.screen_commands(screen):
            found.setdefault(title, (title, help_text, run))
        own = sorted(found.values())
        return own + [c for c in app.textual_commands() if c[0] not in found]

    async def discover(self) -> Hits:
        for title, help_text, run in self.commands():
            yield DiscoveryHit(title, run, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        commands = self.commands()
        for rank, (title, help_text, run) in enumerate(commands):
            score = max(matcher.match(title), matcher.match(help_text) * 0.5)
            if score > 0:
                # Equal matches keep the order above: the console's commands first.
                yield Hit(score - rank * 1e-6, matcher.highlight(title), run, help=help_text)
