"""What every console screen shares: worker failures as notifications, read-only gating and
the memory actions (protect, archive, forget, purge, edit, undo) with their bindings."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from textual import events, on, work
from textual.binding import Binding
from textual.screen import Screen
from textual.worker import Worker, WorkerState, get_current_worker

from memory_console.settings import data_dir
from memory_console.store import CommittedError, MemoryRecord, ValidationError
from memory_console.tui.actions import (
    ACTIONS,
    DoneAction,
    describe_result,
    describe_undo,
    run_action,
    undo_action,
)
from memory_console.tui.messages import (
    ActionDone,
    EditRefused,
    PurgeAsked,
    Purged,
    RemovalAsked,
)

if TYPE_CHECKING:
    from memory_console.tui.app import MemoryConsoleApp
    from memory_console.tui.context import ConsoleContext

WRITE_ACTIONS = frozenset(
    {"protect", "unprotect", "archive", "restore", "forget", "purge", "edit", "undo"}
)

MEMORY_ACTION_BINDINGS = [
    Binding(
        "p",
        "protect",
        "Protect",
        id="memory.protect",
        tooltip="Protect the selected memories: no pass decays, expires or merges them",
    ),
    Binding(
        "P",
        "unprotect",
        "Unprotect",
        show=False,
        id="memory.unprotect",
        tooltip="Take the protection off the selected memories",
    ),
    Binding(
        "a",
        "archive",
        "Archive",
        id="memory.archive",
        tooltip="Archive the selected memories (restorable with r)",
    ),
    Binding(
        "r",
        "restore",
        "Restore",
        show=False,
        id="memory.restore",
        tooltip="Bring archived or consolidated memories back to active",
    ),
    Binding(
        "f",
        "forget",
        "Forget",
        id="memory.forget",
        tooltip="Forget the selected memories (asks first; archived with a reason)",
    ),
    Binding(
        "X",
        "purge",
        "Purge",
        show=False,
        id="memory.purge",
        tooltip="Erase the selected memories for good (asks first; written to a purge file "
        "beside the store, which restores them; u cannot)",
    ),
    Binding(
        "e",
        "edit",
        "Edit",
        id="memory.edit",
        tooltip="Edit the title, content, topic or type of this memory",
    ),
    Binding(
        "u",
        "undo",
        "Undo",
        id="memory.undo",
        tooltip="Take back the last action made in this console",
    ),
    Binding(
        "v",
        "reveal",
        "Reveal",
        show=False,
        id="memory.reveal",
        tooltip="Show or mask secrets (passwords, keys, card numbers) in the text",
    ),
]


def error_text(error: BaseException | None) -> str:
    """One line for a person: store errors already are (a damaged store's names `check`);
    anything else gets its type."""
    from memory_console.store import StoreError

    if error is None:
        return "unknown error"
    if isinstance(error, StoreError):
        return str(error)
    message = str(error).strip().splitlines()[0] if str(error).strip() else ""
    return f"{type(error).__name__}: {message}" if message else type(error).__name__


class ConsoleScreen(Screen[None]):
    """A screen of the console: it runs its database work in workers and says what failed."""

    seen_outside: int | None = None  # the context's `outside` count this screen has shown

    @property
    def console_app(self) -> MemoryConsoleApp:
        return cast("MemoryConsoleApp", self.app)

    @property
    def context(self) -> ConsoleContext:
        return self.console_app.context

    @on(Worker.StateChanged)
    def _worker_failed(self, event: Worker.StateChanged) -> None:
        """The one place where a worker's failure becomes a notification, never a traceback."""
        if event.state == WorkerState.ERROR:
            self.notify(
                error_text(event.worker.error),
                title="could not finish",
                severity="error",
                timeout=8,
            )
            self.worker_failed(event.worker)

    def worker_failed(self, worker: Worker[Any]) -> None:
        """Screens may restore their state after a failed worker."""

    def on_screen_resume(self) -> None:
        self.catch_up()

    def catch_up(self) -> bool:
        """Refresh when another process changed the store since this screen last showed it
        (the app counts those changes while the screen is hidden); True when it did."""
        seen, self.seen_outside = self.seen_outside, self.context.outside
        if seen is None or seen == self.context.outside:
            return False
        self.store_changed()
        return True

    def store_changed(self) -> None:
        """Another process changed the store: show it as it is now, keeping the place
        (the cursor, the selection). Screens whose figures are slow to read say so instead."""


class MemoryActionsScreen(ConsoleScreen):
    """A screen whose memories can be protected, archived, forgotten, edited and undone."""

    undoing: DoneAction | None = None  # an undo on its way to the store

    def action_targets(self) -> list[int]:
        """The memory ids an action applies to (the selection, else the current memory)."""
        raise NotImplementedError

    def current_record(self) -> MemoryRecord | None:
        raise NotImplementedError

    def after_change(self, done: DoneAction, undo: bool) -> None:
        """Reload what the change touched."""

    # -- gating ---------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in WRITE_ACTIONS and self.context.read_only:
            return None  # shown dimmed in the footer
        if action == "undo" and not self.context.done:
            return None
        return True

    def on_key(self, event: events.Key) -> None:
        """A key of a dimmed write action still says why nothing happened; a key that
        changes memories acts only when pressed on its own (tui/typing.py)."""
        guard = self.console_app.typing
        typed = guard.typed(event)
        # Any key within the window: the write key waiting was not pressed on its own (a
        # word's next letter, or a move that would change which memories it acts on).
        ignored = guard.cancel_pending()
        for active in self.active_bindings.values():
            action = active.binding.action
            if event.key != active.binding.key or action not in WRITE_ACTIONS:
                continue
            what = active.binding.description.lower()
            if self.context.read_only:
                self.notify_read_only(what)
                event.stop()
            elif action == "undo" and not self.context.done:
                self.say_nothing_to_undo()
                event.stop()
            elif guard.window > 0 and typed.printable:
                event.stop()
                event.prevent_default()
                if typed.in_burst:
                    ignored = ignored or (event.key, what)
                else:
                    guard.defer(self, partial(self.run_write_action, action), event.key, what)
            break
        if ignored:
            self.say_typing_ignored(*ignored)

    def run_write_action(self, action: str) -> None:
        """A write key pressed on its own, once the typing window passed without another."""
        self.call_later(self.run_action, action)

    def say_typing_ignored(self, key: str, what: str) -> None:
        if self.console_app.typing.should_say():
            self.notify(
                f"typing is not a command: `{key}` ({what}) was not done, another key came "
                "right with it; press a key that changes memories on its own",
                severity="warning",
            )

    def say_nothing_to_undo(self) -> None:
        self.notify(
            "nothing to undo: no action of this console is left to take back "
            "(maintenance runs are undone from the runs screen, R)",
            severity="warning",
        )

    def notify_read_only(self, what: str) -> None:
        self.notify(
            f"read-only store: {what} is disabled (opened with --read-only)", severity="warning"
        )

    # -- actions --------------------------------------------------------------------------

    def start(self, name: str, ids: list[int], **options: Any) -> None:
        if not ids:
            self.notify("no memory here to act on", severity="warning")
            return
        self.change_memories(name, ids, self.context.action_moment(), options)

    def action_protect(self) -> None:
        self.start("protect", self.action_targets())

    def action_unprotect(self) -> None:
        self.start("unprotect", self.action_targets())

    def action_archive(self) -> None:
        self.ask_removal("archive", self.action_targets())

    def action_restore(self) -> None:
        self.start("restore", self.action_targets())

    def action_forget(self) -> None:
        self.ask_removal("forget", self.action_targets())

    def ask_removal(self, name: str, ids: list[int]) -> None:
        if not ids:
            self.notify(f"no memory here to {name}", severity="warning")
            return
        self.read_protected(name, ids)

    @work(thread=True, exclusive=True, exit_on_error=False, group="removal")
    def read_protected(self, name: str, ids: list[int]) -> None:
        """Which of the memories are protected (their titles), before the question."""
        records = self.context.store.get_many(ids)
        protected = {i: records[i].title for i in ids if i in records and records[i].is_protected}
        title = records[ids[0]].title if len(ids) == 1 and ids[0] in records else None
        if not get_current_worker().is_cancelled:
            self.post_message(RemovalAsked(name, ids, protected, title))

    @on(RemovalAsked)
    def _removal_asked(self, message: RemovalAsked) -> None:
        from memory_console.tui.screens.forget import ForgetAnswer, ForgetScreen, protected_choice

        ids, protected = message.ids, message.protected
        if message.name == "forget":

            def forget(answer: ForgetAnswer | None) -> None:
                if answer is None:
                    return
                if not answer.ids:
                    self.notify("nothing forgotten: the protected memories were skipped")
                    return
                self.start("forget", answer.ids, reason=answer.reason)

            titles = [message.title] if message.title is not None else []
            self.app.push_screen(ForgetScreen(ids, titles, protected), forget)
            return
        if not protected:
            self.start("archive", ids)
            return

        def archive(choice: str | None) -> None:
            chosen = ids if choice == "all" else [i for i in ids if i not in protected]
            if choice is None:
                return
            if not chosen:
                self.notify("nothing archived: the protected memories were skipped")
                return
            self.start("archive", chosen)

        self.app.push_screen(protected_choice("archive", ids, protected), archive)

    def action_purge(self) -> None:
        ids = self.action_targets()
        if not ids:
            self.notify("no memory here to purge", severity="warning")
            return
        self.scope_purge(ids, self.context.action_moment())

    @work(thread=True, exclusive=True, exit_on_error=False, group="purge-scope")
    def scope_purge(self, ids: list[int], moment: float) -> None:
        """What the purge would take in (read-only), then the question."""
        store = self.context.store
        scope = store.erasure_scope(ids)
        # Beside an SQLite store; a PostgreSQL store's in the user's data directory, as the
        # CLI's purge writes it.
        out = store.purge_file(moment, data_dir())
        if out is None:
            raise ValidationError(f"{store.location}: too many purge files named for this second")
        if not get_current_worker().is_cancelled:
            self.post_message(PurgeAsked(scope, out, moment))

    @on(PurgeAsked)
    def _purge_asked(self, message: PurgeAsked) -> None:
        from memory_console.tui.screens.confirm import ConfirmScreen
        from memory_console.tui.screens.purge import purge_body, purge_title

        scope = message.scope
        if not scope.ids:
            self.notify("these memories are no longer in the store", severity="warning")
            return

        def answered(yes: bool | None) -> None:
            if yes:
                self.purge_memories(scope.selected, message.out, message.moment)

        dialog = ConfirmScreen(
            purge_title(scope), purge_body(scope, message.out), "Purge", variant="error"
        )
        self.app.push_screen(dialog, answered)

    @work(thread=True, exclusive=False, exit_on_error=False, group="change")
    def purge_memories(self, ids: list[int], out: Path, moment: float) -> None:
        result = self.context.store.purge(ids, out, now=moment, selection="ids")
        self.post_message(Purged(result, out, moment))

    @on(Purged)
    def _purged(self, message: Purged) -> None:
        from memory_console.tui.screens.purge import describe_purge

        result = message.result
        if result.changed:
            self.context.revision += 1
        self.notify(
            describe_purge(result, message.out),
            title="purged" if result.changed else "no change",
            timeout=10,
        )
        done = DoneAction("purge", message.moment, (), tuple(result.changed))
        self.after_purge(done)
        self.refresh_bindings()

    def after_purge(self, done: DoneAction) -> None:
        """Reload what the purge removed (it is not undoable, so nothing joins the undo list)."""
        self.after_change(done, False)

    def action_edit(self, fields: dict[str, Any] | None = None, reason: str = "") -> None:
        from memory_console.tui.screens.edit import EditScreen

        record = self.current_record()
        if record is None:
            self.notify("no memory here to edit", severity="warning")
            return

        def answered(changes: dict[str, Any] | None) -> None:
            if changes:
                self.start("edit", [record.id], fields=changes)
            elif changes is not None:
                self.notify("nothing to save: no field changed")

        self.app.push_screen(EditScreen(record, fields or {}, reason), answered)

    def action_undo(self) -> None:
        if not self.context.done:
            self.say_nothing_to_undo()
            return
        self.undoing = self.context.done.pop()
        self.undo_memories(self.undoing, self.context.action_moment())

    def worker_failed(self, worker: Worker[Any]) -> None:
        if worker.name == "undo" and self.undoing is not None:
            if isinstance(worker.error, CommittedError):
                # Written: the undo leaves the stack, or a retry would write it again.
                self.context.revision += 1
                self.catch_up()
            else:
                self.context.done.append(self.undoing)  # nothing written: it can be tried again
        self.undoing = None

    @work(thread=True, exclusive=False, exit_on_error=False, group="change")
    def change_memories(
        self, name: str, ids: list[int], moment: float, options: dict[str, Any]
    ) -> None:
        store = self.context.store
        try:
            result = run_action(store, name, ids, moment, **options)
        except ValidationError as error:
            if name == "edit":
                self.post_message(EditRefused(ids[0], options.get("fields", {}), str(error)))
                return
            raise
        done = DoneAction(name, moment, ACTIONS[name].kinds, tuple(result.changed))
        self.post_message(ActionDone(done, result, describe_result(name, result)))

    @work(thread=True, exclusive=False, exit_on_error=False, group="change", name="undo")
    def undo_memories(self, done: DoneAction, moment: float) -> None:
        result = undo_action(self.context.store, done, moment)
        undo = DoneAction(done.action, moment, done.kinds, tuple(result.changed))
        if not get_current_worker().is_cancelled:
            self.post_message(ActionDone(undo, result, describe_undo(done, result), undo=True))

    @on(ActionDone)
    def _action_done(self, message: ActionDone) -> None:
        if message.undo:
            self.undoing = None
        if message.result.changed:
            self.context.revision += 1
            if not message.undo:
                self.context.done.append(message.done)
        text = message.text
        if message.result.changed and not message.undo:
            text += " · u to undo"
        self.notify(text, title="done" if message.result.changed else "no change")
        self.after_change(message.done, message.undo)
        self.refresh_bindings()

    @on(EditRefused)
    def _edit_refused(self, message: EditRefused) -> None:
        self.notify(message.reason, title="edit not saved", severity="error")
        self.action_edit(message.fields, message.reason)
