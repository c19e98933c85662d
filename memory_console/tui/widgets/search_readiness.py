"""Search readiness: prepares semantic search in the background and shows how far it got."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from rich.text import Text
from textual import on, work
from textual.widgets import Static
from textual.worker import Worker, WorkerState, get_current_worker

from memory_console.tui.messages import SemanticFinished, SemanticProgress

if TYPE_CHECKING:
    from memory_console.tui.context import ConsoleContext

BAR_CELLS = 10
RETRY_SECONDS = 5.0  # after a busy store, wait this long (times the attempt) and try again
MAX_RETRIES = 6
READY_TEXT = "semantic search ready: / by meaning"  # 34 cells: fits the label's 36
READY_SECONDS = 4.0


def progress_bar(done: int, total: int) -> str:
    filled = 0 if total <= 0 else min(BAR_CELLS, round(BAR_CELLS * done / total))
    return "▰" * filled + "▱" * (BAR_CELLS - filled)


class SearchReadiness(Static):
    """`keyword search`, `embedding ▰▰▱▱ 120/2,000`, then `hybrid search` (or why not).

    The embedder loads in a thread worker, started once the first screen is complete; any
    failure leaves keyword search working and says why.
    """

    DEFAULT_CSS = """
    SearchReadiness { width: 38; height: 1; padding: 0 1; background: $panel;
                      color: $text-muted; text-align: right; }
    SearchReadiness.-ready { color: $text; background: $success-muted; text-style: bold; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.started = False
        self.retries = 0

    @property
    def context(self) -> ConsoleContext:
        return cast(Any, self.app).context

    def on_mount(self) -> None:
        self.update(Text(self.context.semantic_state, no_wrap=True))

    def start(self) -> None:
        """Begin preparing semantic search (once)."""
        if not self.started:
            self.started = True
            self.prepare()

    @work(thread=True, exclusive=True, exit_on_error=False, group="semantic")
    def prepare(self) -> None:
        engine: Any = self.context.search
        worker = get_current_worker()
        if not hasattr(engine, "prepare_semantic"):
            self.post_message(SemanticFinished(False, "keyword search only"))
            return
        ready = engine.prepare_semantic(
            lambda done, total: self.post_message(SemanticProgress(done, total)),
            lambda: worker.is_cancelled,
        )
        if not worker.is_cancelled:
            self.post_message(SemanticFinished(bool(ready), "" if ready else "not ready"))

    def show(self, state: str) -> None:
        self.context.semantic_state = state
        self.update(Text(state, no_wrap=True), layout=False)  # a fixed width: no new layout

    @on(SemanticProgress)
    def _progress(self, message: SemanticProgress) -> None:
        message.stop()
        self.show(
            f"embedding {progress_bar(message.done, message.total)} "
            f"{message.done:,}/{message.total:,}"
        )

    @on(SemanticFinished)
    def _finished(self, message: SemanticFinished) -> None:
        message.stop()
        if message.ready:
            # Said in the label itself, lit for a few seconds: a notice in the corner would
            # cover this very label.
            self.show(READY_TEXT)
            self.add_class("-ready")
            self.set_timer(READY_SECONDS, self.settle_ready)
        else:
            self.show("keyword search only")
            if message.detail != "keyword search only":
                self.notify(
                    f"semantic search unavailable: {message.detail}", severity="warning", timeout=6
                )

    def settle_ready(self) -> None:
        self.remove_class("-ready")
        if self.context.semantic_state == READY_TEXT:
            self.show("hybrid search")

    @on(Worker.StateChanged)
    def _failed(self, event: Worker.StateChanged) -> None:
        """Any failure of the embedder (missing model, bad file) leaves keyword search; a
        lock another process held too long is tried again, not taken as final."""
        if event.state == WorkerState.ERROR:
            from memory_console.store import StoreBusyError
            from memory_console.tui.screens.base import error_text

            if isinstance(event.worker.error, StoreBusyError) and self.retries < MAX_RETRIES:
                self.retries += 1
                self.show(f"keyword search (store busy: retry {self.retries})")
                self.set_timer(RETRY_SECONDS * self.retries, self.prepare)
                return

            detail = error_text(event.worker.error)
            self.post_message(SemanticFinished(False, detail))
