"""The help screen: every key, where it works, and what the console's words mean."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Header, Markdown

from memory_console.policies.confidence import LABEL_EDGES, LABELS

INTRODUCTION = """\
# memory-console

Browse an agent's long-term memories, see why it believes each one and how sure it is, and act:
protect, archive, forget, edit, and undo. Every change goes through the store and is written to
the memory's history.

The table shows one page at a time: moving past the last row reads the next page, past the first
row the previous one, so a store of a million memories opens as fast as a small one.

- **Topics** (left, `t`): every owner and topic with its count; Enter narrows the table to it.
- **Filter bar** (top, `ctrl+f`): words, status, type, tier, owner and a confidence range.
- **Memories** (middle): click a header or press `s` to sort; `space` marks memories for a bulk
  action; actions apply to the marked memories, else to the one under the cursor.
- **Detail** (beside or below): the memory at a glance; Enter opens its whole story, with its
  history, its confidence chart and forecast.
- **Status line**: what the table shows, and whether search is keyword only or hybrid (the
  embedder loads in the background after start-up).
- `--read-only`: actions are dimmed in the footer and refused with a notification.
"""

WORDS = """\
## Words

| word | meaning |
|---|---|
| protected 🔒 | no decay, expiry, quota or merge pass ever touches the memory |
| archive | set aside: agents stop recalling it; restore brings it back |
| forget | archive with a reason kept in the history |
| undo | takes back the console's last action (memories changed since are left alone) |
| forecast | the confidence in the coming months if the memory is not recalled |
| floor | the lowest confidence decay reaches; at the floor a memory gets flagged |
| search | keyword (FTS5) at first; hybrid (keyword + meaning) once the embedder is ready |
"""


KEY_NAMES = {"slash": "/", "question_mark": "?", "asterisk": "*", "backspace": "⌫"}


def key_names(binding: Binding) -> str:
    """`/`, `j / down`: how a person types the binding's keys."""
    return " / ".join(KEY_NAMES.get(key.strip(), key.strip()) for key in binding.key.split(","))


def key_table(title: str, bindings: list[Binding]) -> str:
    rows = [f"## {title}", "", "| key | action | what it does |", "|---|---|---|"]
    for binding in bindings:
        rows.append(f"| `{key_names(binding)}` | {binding.description} | {binding.tooltip} |")
    return "\n".join(rows) + "\n"


def confidence_words() -> str:
    rows = ["## Confidence", "", "| confidence | said as |", "|---|---|"]
    edges = [*LABEL_EDGES, 0.0]
    previous = None
    for edge, label in zip(edges, LABELS, strict=True):
        span = f"≥ {edge:.1f}" if previous is None else f"{edge:.1f} to {previous:.1f}"
        rows.append(f"| {span if edge else f'below {previous:.1f}'} | {label} |")
        previous = edge
    return "\n".join(rows) + "\n"


def help_markdown() -> str:
    from memory_console.tui.app import MemoryConsoleApp
    from memory_console.tui.screens.main import MainScreen
    from memory_console.tui.screens.story import StoryScreen
    from memory_console.tui.widgets.memory_table import MemoryTable

    table_keys = [
        Binding("up,down", "", "Move", tooltip="Previous / next memory; pages at the edges"),
        Binding("pageup,pagedown", "", "Page", tooltip="A screenful up / down, then the "
                "previous / next page"),
        *MemoryTable.BINDINGS,
    ]
    return "\n".join([
        INTRODUCTION,
        key_table("Memory list", [b for b in table_keys if isinstance(b, Binding)]),
        key_table("Main screen", [b for b in MainScreen.BINDINGS if isinstance(b, Binding)]),
        key_table("A memory's story", [b for b in StoryScreen.BINDINGS
                                      if isinstance(b, Binding)
                                      and b.id and b.id.startswith("story.")]),
        key_table("Everywhere", [b for b in MemoryConsoleApp.BINDINGS if isinstance(b, Binding)]
                  + [Binding("ctrl+p", "", "Commands",
                             tooltip="The command palette: every action and screen by name")]),
        confidence_words(),
        WORDS,
    ])


class HelpScreen(Screen[None]):
    """Keys and words, built from the bindings themselves so it never drifts from them."""

    BINDINGS = [
        Binding("escape,q,question_mark", "close", "Close", id="help.close",
                tooltip="Back to where you were"),
    ]

    def compose(self) -> ComposeResult:
        yield Header()
        with VerticalScroll(id="help"):
            yield Markdown(help_markdown())
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.sub_title = "help"
        self.query_one("#help", VerticalScroll).focus()

    def action_close(self) -> None:
        self.app.pop_screen()
