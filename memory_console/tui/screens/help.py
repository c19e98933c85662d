"""The help screen: every key, where it works, and what the console's words mean."""

from __future__ import annotations

from collections.abc import Sequence

from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.dom import DOMNode
from textual.screen import Screen
from textual.widgets import Header, Static

from memory_console.confidence_words import LABEL_EDGES, LABELS, VERY_HIGH
from memory_console.tui.formatting import PROTECTED_MARK, SHORT_LABELS
from memory_console.tui.widgets.footer import FittedFooter

INTRODUCTION = (
    "Browse an agent's long-term memories, see why it believes each one and how sure it is, "
    "and act: protect, archive, forget, purge, edit, and undo. Every change goes through the "
    "store and is written to the memory's history.\n\n"
    "The table shows one page at a time: moving past the last row reads the next page, past "
    "the first row the previous one, so a store of a million memories opens as fast as a "
    "small one."
)
PANES = (
    ("Topics", "left, t", "every owner and topic with its count; Enter narrows the table to it"),
    ("Filter bar", "top, ctrl+f", "words, status, type, tier, owner and a confidence range"),
    (
        "Memories",
        "middle",
        "click a header or press s to sort; space marks memories for a bulk "
        "action; actions apply to the marked memories, else to the one under the cursor",
    ),
    (
        "Detail",
        "beside or below",
        "the memory at a glance; Enter opens its whole story: "
        "history, confidence chart and forecast",
    ),
    (
        "Status line",
        "bottom",
        "what the table shows, and whether search is keyword only or "
        "hybrid (the embedder loads in the background after start-up)",
    ),
    ("--read-only", "", "actions are dimmed in the footer and refused with a notification"),
)
WORDS = (
    (f"protected {PROTECTED_MARK}", "no decay, expiry, quota or merge pass ever touches it"),
    ("archive", "set aside: agents stop recalling it; restore brings it back"),
    ("forget", "archive with a reason kept in the history"),
    (
        "purge",
        "erase for good (X): written first to a purge file beside the store, which import "
        "restores; no history is kept, and u cannot undo it",
    ),
    ("undo", "takes back the console's last action (memories changed since stay as they are)"),
    (
        "0.85→0.33",
        "the confidence stored (as of the last decay run), then as of now: what a decay run "
        "now would set; the colour and words are the second's",
    ),
    ("forecast", "the confidence in the coming months if the memory is not recalled"),
    ("floor", "the lowest confidence decay reaches; at the floor a memory gets flagged"),
    ("search", "keyword (FTS5) at first; hybrid (keyword + meaning) once the embedder is ready"),
    ("plan", "what maintenance passes would change, made without writing anything (m)"),
    ("left out", "a memory you excluded from a plan: this run does not change it"),
    ("run", "an applied plan, written in one transaction; the runs screen (R) undoes it"),
    ("out of date", "a plan whose memories changed since it was made: apply refuses it"),
)
KEY_NAMES = {"slash": "/", "question_mark": "?", "asterisk": "*", "backspace": "⌫"}
KeyRow = tuple[str, str, str]  # keys, action, what it does


def key_names(binding: Binding) -> str:
    """`/`, `j / down`: how a person types the binding's keys."""
    return " / ".join(KEY_NAMES.get(key.strip(), key.strip()) for key in binding.key.split(","))


def rows_of(bindings: list[Binding]) -> list[KeyRow]:
    return [(key_names(b), b.description, b.tooltip) for b in bindings]


def key_sections() -> list[tuple[str, list[KeyRow]]]:
    """Every key of the console by where it works, read from the bindings themselves."""
    from memory_console.tui.app import MemoryConsoleApp
    from memory_console.tui.screens.health import HealthScreen
    from memory_console.tui.screens.main import MainScreen
    from memory_console.tui.screens.maintenance import MaintenanceScreen
    from memory_console.tui.screens.preview import PreviewScreen
    from memory_console.tui.screens.review import ReviewScreen
    from memory_console.tui.screens.runs import RunsScreen
    from memory_console.tui.screens.settings import SettingsScreen
    from memory_console.tui.screens.story import StoryScreen
    from memory_console.tui.widgets.change_table import ChangeTable
    from memory_console.tui.widgets.memory_table import MemoryTable

    def bindings(owner: type[DOMNode]) -> list[Binding]:
        return [b for b in owner.BINDINGS if isinstance(b, Binding)]

    moves: list[KeyRow] = [
        ("up / down", "Move", "Previous / next memory; the neighbouring page at the edges"),
        ("pageup / pagedown", "Page", "A screenful up / down, then the neighbouring page"),
    ]
    story = [b for b in bindings(StoryScreen) if b.id and b.id.startswith("story.")]
    everywhere = rows_of(bindings(MemoryConsoleApp))
    everywhere.append(("ctrl+p", "Commands", "The command palette: every action and screen"))
    return [
        ("Memory list", moves + rows_of(bindings(MemoryTable))),
        ("Main screen", rows_of(bindings(MainScreen))),
        ("A memory's story (and the memory actions above)", rows_of(story)),
        ("Maintenance (m): passes, policy, parameters, date", rows_of(bindings(MaintenanceScreen))),
        ("Maintenance preview", rows_of(bindings(ChangeTable) + bindings(PreviewScreen))),
        ("Merge review", rows_of(bindings(ReviewScreen))),
        ("Runs (R)", rows_of(bindings(RunsScreen))),
        ("Health (H): Enter on a number lists its memories", rows_of(bindings(HealthScreen))),
        ("Store settings (,)", rows_of(bindings(SettingsScreen))),
        ("Everywhere", everywhere),
    ]


def table(headers: tuple[str, ...], rows: Sequence[tuple[str, ...]]) -> Table:
    grid = Table(
        box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, expand=True, header_style="bold"
    )
    last = len(headers) - 1
    for position, header in enumerate(headers):
        grid.add_column(
            header,
            style="bold" if position == 0 else None,
            no_wrap=position < last,
            ratio=1 if position == last else None,
        )
    for row in rows:
        grid.add_row(*row)
    return grid


def heading(text: str) -> Text:
    return Text(f"\n{text}", style="bold underline")


def with_short(label: str) -> str:
    """`high confidence (high)`: the words and, where the table shortens them, its word."""
    short = SHORT_LABELS[label]
    return label if short == label else f"{label} ({short})"


def confidence_rows() -> list[tuple[str, str]]:
    """Each tier's span and its words, with the one word the table shows; the top tier reads
    "stated" only for what a person said, as the table does."""
    rows = []
    upper = None
    for edge, label in zip([*LABEL_EDGES, 0.0], LABELS, strict=True):
        if upper is None:
            span = f"≥ {edge:.1f}"
        elif edge:
            span = f"{edge:.1f} to {upper:.1f}"
        else:
            span = f"below {upper:.1f}"
        words = with_short(label)
        if label == LABELS[0]:
            words += f" if a person said it, else {with_short(VERY_HIGH)}"
        rows.append((span, words))
        upper = edge
    return rows


def help_body() -> RenderableType:
    parts: list[RenderableType] = [Text("memory-console", style="bold"), Text(INTRODUCTION)]
    parts += [heading("Panes"), table(("pane", "where", "what"), list(PANES))]
    for title, rows in key_sections():
        parts += [heading(title), table(("key", "action", "what it does"), rows)]
    parts += [heading("Confidence"), table(("confidence", "said as"), confidence_rows())]
    parts += [heading("Words"), table(("word", "meaning"), list(WORDS))]
    return Group(*parts)


class HelpScreen(Screen[None]):
    """Keys and words, built from the bindings themselves so it never drifts from them."""

    BINDINGS = [
        Binding(
            "escape,q,question_mark",
            "close",
            "Close",
            id="help.close",
            tooltip="Back to where you were",
        ),
    ]

    def compose(self) -> ComposeResult:
        yield Header()
        with VerticalScroll(id="help"):
            yield Static(help_body())
        yield FittedFooter()

    def on_mount(self) -> None:
        self.sub_title = "help"
        self.query_one("#help", VerticalScroll).focus()

    def action_close(self) -> None:
        self.app.pop_screen()
