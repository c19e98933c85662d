"""The console app and make_app, the one factory the CLI, the tests and the screenshots use."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from pathlib import Path

from textual import events
from textual.app import App
from textual.binding import Binding
from textual.content import Content
from textual.notifications import SeverityLevel
from textual.screen import ModalScreen, Screen
from textual.theme import Theme

from memory_console.embed.search import SearchEngine
from memory_console.literal import visible
from memory_console.settings import Settings
from memory_console.store import MemoryFilter, Store
from memory_console.tui.context import ConsoleContext
from memory_console.tui.palette import ConsoleCommands
from memory_console.tui.typing import TypingGuard

WATCH_INTERVAL = 1.0  # seconds between two looks at the store's data_version


def postgres_title(location: str) -> str:
    """`DB on HOST (PostgreSQL)` for a store's URL as shown (without its password); the URL
    itself when it does not split so (several hosts, a port that is no number)."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(location)
        database = parts.path.lstrip("/") or "postgres"
        host = parts.hostname or "the local socket"
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return f"{location} (PostgreSQL)"
    return f"{database} on {host}{port} (PostgreSQL)"


class MemoryConsoleApp(App[None]):
    """Screens live in tui/screens; this class only wires them to the shared context."""

    CSS_PATH = "app.tcss"
    TITLE = "memory-console"
    COMMANDS = {ConsoleCommands}  # it offers Textual's theme and quit after its own
    BINDINGS = [
        Binding(
            "question_mark",
            "help",
            "Help",
            id="app.help",
            tooltip="Every key and what the console's words mean",
        ),
        Binding("q", "quit", "Quit", id="app.quit", tooltip="Leave the console"),
        Binding(
            "m",
            "maintenance",
            "Maintenance",
            show=False,
            id="app.maintenance",
            tooltip="Choose maintenance passes, preview what they would change, apply",
        ),
        Binding(
            "R",
            "runs",
            "Runs",
            show=False,
            id="app.runs",
            tooltip="Applied maintenance runs: what each changed; undo one",
        ),
        Binding(
            "H",
            "health",
            "Health",
            show=False,
            id="app.health",
            tooltip="The store's health: tiers now and ahead, age, staleness, quotas",
        ),
        Binding(
            "comma",
            "settings",
            "Settings",
            show=False,
            id="app.settings",
            tooltip="The store's settings: decay policy and parameters, intervals, lifespans, "
            "thresholds; change one",
        ),
    ]

    def __init__(self, context: ConsoleContext, *, semantic: bool = True) -> None:
        super().__init__()
        self.context = context
        self.semantic = semantic
        store = context.store
        # A file by its name; a PostgreSQL store by its database's name and server, first in
        # a header that cuts what does not fit (the whole URL pushed the name out of it).
        name = postgres_title(store.location) if store.url is not None else Path(store.path).name
        self.sub_title = f"{name} (read-only)" if context.read_only else name
        self.watch_interval = WATCH_INTERVAL
        self.typing = TypingGuard()  # keys that change memories act only when pressed alone
        self.seen_version: int | None = None

    def on_mount(self) -> None:
        from textual.theme import BUILTIN_THEMES

        theme = self.context.settings.theme
        if theme in self.available_themes or theme in BUILTIN_THEMES:
            self.theme = theme
        else:
            self.notify(f"unknown theme {theme!r}; using {self.theme}", severity="warning")
        self.theme_changed_signal.subscribe(self, self.remember_theme)
        self.seen_version = self.context.store.data_version()
        self.set_interval(self.watch_interval, self.watch_store, name="watch-store")

    def on_key(self, event: events.Key) -> None:
        """An Escape followed at once by a letter reaches us as one "alt+letter" key (a
        terminal sends both bytes together and Textual reads them as Meta): no binding of ours
        uses Alt, so it is the Escape, then the letter, typed together. The Escape acts; the
        letter counts as typing (a key that changes memories is not done, tui/typing.py)."""
        name = event.key
        if not name.startswith("alt+") or len(name) != len("alt+x") or not name[-1].isprintable():
            return
        event.stop()
        event.prevent_default()
        self.post_message(events.Key("escape", "\x1b"))
        letter = name[-1]
        self.call_after_refresh(self.typed_after_escape, letter)

    def typed_after_escape(self, letter: str) -> None:
        self.typing.last_typed = time.monotonic()  # came with the Escape: within a burst
        self.post_message(events.Key(letter, letter))

    def remember_theme(self, theme: Theme) -> None:
        """The operator chose a theme: keep it for the next run (config.toml's `theme`)."""
        from memory_console.settings import SettingsError, save_setting

        if theme.name == self.context.settings.theme:
            return
        try:
            save_setting("theme", theme.name)
        except (OSError, SettingsError) as error:
            self.notify(f"theme {theme.name} not remembered: {error}", severity="warning")
            return
        self.context.settings = self.context.settings.with_overrides(theme=theme.name)

    def watch_store(self) -> None:
        """Another process (an agent, the CLI, another console) may have changed the store:
        the Store's data_version says so cheaply (SQLite's own, or PostgreSQL's count of
        commits: see Store.data_version). The screen showing refreshes what it shows;
        the others catch up when they show again."""
        from memory_console.tui.screens.base import ConsoleScreen

        version = self.context.store.data_version(wait=False)  # busy: look again next time
        if version is None or version == self.seen_version:
            return
        self.seen_version = version
        self.context.outside += 1
        screen = self.screen
        if isinstance(screen, ConsoleScreen):
            screen.catch_up()

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = True,
    ) -> None:
        """Every notification is literal: its words may hold stored text (a title, a reason,
        an error about a field), which must not run as markup or reach the terminal raw."""
        super().notify(
            visible(message),
            title=visible(title, layout=False),
            severity=severity,
            timeout=timeout,
            markup=False,
        )

    def format_title(self, title: str, sub_title: str) -> Content:
        """The header's title and sub-title (the store's file name) with control characters
        made visible."""
        return super().format_title(visible(title, layout=False), visible(sub_title, layout=False))

    def get_default_screen(self) -> Screen[None]:
        from memory_console.tui.screens.main import MainScreen

        return MainScreen()

    def action_help(self) -> None:
        from memory_console.tui.screens.help import HelpScreen

        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("maintenance", "runs", "health", "settings") and isinstance(
            self.screen, ModalScreen
        ):
            return False  # a dialog is answered first
        return True

    def open_screen(self, kind: type[Screen[None]]) -> None:
        """Show a screen of this kind: back to it when it is already open, else a new one."""
        if isinstance(self.screen, kind):
            return
        open_one = next((s for s in reversed(self.screen_stack) if isinstance(s, kind)), None)
        if open_one is None:
            self.push_screen(kind())
            return
        while self.screen is not open_one:
            self.pop_screen()

    def action_maintenance(self) -> None:
        from memory_console.tui.screens.maintenance import MaintenanceScreen

        self.open_screen(MaintenanceScreen)

    def action_runs(self) -> None:
        from memory_console.tui.screens.runs import RunsScreen

        self.open_screen(RunsScreen)

    def action_health(self) -> None:
        from memory_console.tui.screens.health import HealthScreen

        self.open_screen(HealthScreen)

    def action_settings(self) -> None:
        from memory_console.tui.screens.settings import SettingsScreen

        self.open_screen(SettingsScreen)

    def show_memories(self, memory_filter: MemoryFilter, label: str) -> None:
        """The memories behind a figure of the screen showing (the health screen), on a main
        screen of their own over it: acted on there, and Escape goes back to the figures."""
        from memory_console.tui.screens.main import MainScreen

        self.push_screen(MainScreen(figure=(memory_filter, label)))

    def explain_disabled(self, title: str) -> None:
        """A palette choice that does not apply here says why."""
        if self.context.read_only:
            self.notify(
                f"read-only store: {title.lower()} is disabled (opened with --read-only)",
                severity="warning",
            )
        else:
            self.notify(f"{title.lower()} does not apply here", severity="warning")

    def textual_commands(self) -> list[tuple[str, str, Callable[[], object]]]:
        """What the console keeps of Textual's own palette commands."""
        return [
            ("Theme", "Change the colours (remembered for the next run)", self.action_change_theme),
            ("Quit", "Leave the console", self.action_quit),
        ]

    def screen_commands(
        self, screen: Screen[object]
    ) -> Iterable[tuple[str, str, Callable[[], object]]]:
        """Screens the palette can open from `screen`."""
        from memory_console.tui.screens.main import MainScreen

        yield "Help", "Every key and what the console's words mean", self.action_help
        if isinstance(screen, MainScreen) and screen.table.current is not None:
            record = screen.table.current
            yield (
                "Open story",
                f"The whole story of memory #{record.id}",
                lambda: screen.post_message(screen.table.Opened(screen.table, record)),
            )
        if not isinstance(screen, MainScreen) and len(self.screen_stack) > 1:
            yield "Back", "Back to the memory list", self.pop_screen


def make_app(
    settings: Settings,
    store: Store,
    *,
    now: float | None = None,
    search: SearchEngine | None = None,
    semantic: bool = True,
) -> MemoryConsoleApp:
    """The console over an open store. `now` freezes time (tests, screenshots, --now);
    `semantic=False` skips loading the embedder in the background."""
    context = ConsoleContext(
        settings=settings,
        store=store,
        search=search or SearchEngine(store, settings.model_manifest),
        frozen_now=now,
    )
    return MemoryConsoleApp(context, semantic=semantic)
