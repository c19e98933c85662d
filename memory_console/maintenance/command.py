"""Running the operator's merge command: a JSON question on stdin, a JSON answer on stdout,
each call under its own timeout, every call of a run under one budget, the answer read up
to a cap; and what its answer's words may hold."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any

from memory_console.literal import CONTROL_EXCEPT_LAYOUT, escape
from memory_console.sensitive import credential_kinds, has_health_data, with_article

if TYPE_CHECKING:
    from memory_console.store import MemoryRecord

CALL_TIMEOUT_S = 60.0  # one question
RUN_BUDGET_S = 600.0  # every question of one apply, or of one review
OUTPUT_LIMIT = 64 * 1024  # bytes of an answer; a longer one is refused, not read
# Calls in a row that gave no answer in time after which the run asks no more: a command
# that hangs costs the run three timeouts, not its whole budget.
TIMEOUTS_IN_A_ROW = 3
READ_SIZE = 16 * 1024


@dataclass(frozen=True)
class MergeFailure:
    """Why the command's answer was not used: a code and its detail."""

    # did_not_run, timed_out, not_asked, too_long, exited, invalid_json, incomplete, refused
    code: str
    exit_code: int | None = None
    error: str | None = None

    def values(self) -> dict[str, Any]:
        """The failure as a reason's values."""
        found = {"merge_command_failure": self.code, "exit_code": self.exit_code}
        return {k: v for k, v in {**found, "error": self.error}.items() if v is not None}


class Budget:
    """The merge command's time in one run (an apply, a review): the seconds its calls may
    take together. Each call waits at most its own timeout and never past what the run has
    left; once that is spent, or after TIMEOUTS_IN_A_ROW calls in a row gave no answer in
    time, no call is made and the caller keeps its extractive merge. Only the calls' time
    counts, so a review the operator reads slowly spends nothing meanwhile. Thread-safe: a
    review asks from its worker threads."""

    def __init__(
        self,
        seconds: float = RUN_BUDGET_S,
        call_timeout: float = CALL_TIMEOUT_S,
        output_limit: int = OUTPUT_LIMIT,
    ) -> None:
        self.seconds = seconds
        self.call_timeout = call_timeout
        self.output_limit = output_limit
        self._spent = 0.0
        self._timeouts = 0
        self._lock = threading.Lock()

    def left(self) -> float:
        with self._lock:
            return max(0.0, self.seconds - self._spent)

    def refusal(self) -> MergeFailure | None:
        """Why no call may be made now, or None."""
        with self._lock:
            if self._timeouts >= TIMEOUTS_IN_A_ROW:
                why = f"it gave no answer {TIMEOUTS_IN_A_ROW} times in a row"
                return MergeFailure("not_asked", error=why)
        if self.left() <= 0:
            why = f"its {self.seconds:g} s for this run were spent"
            return MergeFailure("not_asked", error=why)
        return None

    def record(self, seconds: float, failure: MergeFailure | None) -> None:
        """Count a call: its time, and timeouts in a row (reset by any other outcome)."""
        with self._lock:
            self._spent += seconds
            self._timeouts = self._timeouts + 1 if failure and failure.code == "timed_out" else 0


def ask(command: str, payload: dict[str, Any], budget: Budget) -> tuple[Any, MergeFailure | None]:
    """The command's answer to `payload`, parsed from its output as JSON, or why there is
    none: not asked (the run's budget), it did not run, gave no answer in time (it is
    ended, with every process it started), answered more than the budget's output limit,
    exited non-zero, or wrote no JSON. Whether the answer says what was asked is the
    caller's to check."""
    refused = budget.refusal()
    if refused is not None:
        return None, refused
    seconds = min(budget.call_timeout, budget.left())
    started = time.monotonic()
    output, failure = run(command, json.dumps(payload).encode("utf-8"), seconds, budget)
    budget.record(time.monotonic() - started, failure)
    if failure is not None:
        return None, failure
    try:
        return json.loads(output.decode("utf-8")), None
    except (ValueError, RecursionError):  # not UTF-8, not JSON, or nested too deep to read
        return None, MergeFailure("invalid_json")


def run(
    command: str, question: bytes, seconds: float, budget: Budget
) -> tuple[bytes, MergeFailure | None]:
    """The command's output, read up to the budget's limit within `seconds`. The command
    runs in a session of its own, so that ending it ends what it started too."""
    try:
        process = subprocess.Popen(
            shlex.split(command),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
    except (OSError, ValueError) as error:
        return b"", MergeFailure("did_not_run", error=str(error))
    assert process.stdin is not None and process.stdout is not None
    limit = budget.output_limit
    output = bytearray()
    started = time.monotonic()
    writer = threading.Thread(target=feed, args=(process.stdin, question), daemon=True)
    reader = threading.Thread(target=collect, args=(process.stdout, output, limit), daemon=True)
    writer.start()
    reader.start()
    try:
        reader.join(seconds)
        if reader.is_alive():
            return b"", MergeFailure("timed_out", error=f"{seconds:g} s")
        if len(output) > limit:
            return b"", MergeFailure("too_long", error=f"{limit:,} bytes")
        try:
            code = process.wait(max(0.0, seconds - (time.monotonic() - started)))
        except subprocess.TimeoutExpired:
            return b"", MergeFailure("timed_out", error=f"{seconds:g} s")
        if code != 0:
            return b"", MergeFailure("exited", exit_code=code)
        return bytes(output), None
    finally:
        end(process, writer, reader)


def feed(pipe: IO[bytes], question: bytes) -> None:
    """Write the question and close the command's input; a command that exits or stops
    reading first is no error (its answer, or its silence, says what happened)."""
    try:
        pipe.write(question)
        pipe.close()
    except OSError:
        pass


def collect(pipe: IO[bytes], output: bytearray, limit: int) -> None:
    """Read the command's output until it ends or passes `limit` (one byte past it is how
    the caller knows), never holding more than a read beyond the limit."""
    descriptor = pipe.fileno()
    try:
        while len(output) <= limit:
            chunk = os.read(descriptor, READ_SIZE)
            if not chunk:
                return
            output.extend(chunk)
    except OSError:
        return


def end(process: subprocess.Popen[bytes], *threads: threading.Thread) -> None:
    """Kill the command's session: it, if it still runs, and whatever it started and left
    behind; then close its pipes. The session's id stays reserved while any process of it
    is left, so the kill reaches no other process."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except OSError:
        pass
    process.wait()
    for thread in threads:
        thread.join(1.0)
    if process.stdin is not None:
        try:
            process.stdin.close()
        except OSError:
            pass
    # A reader still waiting (a process that left the session holds the output open) keeps
    # its pipe: closing it under the read would free the descriptor for another file.
    if process.stdout is not None and not any(thread.is_alive() for thread in threads):
        process.stdout.close()


# -- what an answer may hold ------------------------------------------------------------------


def text_problem(fields: Mapping[str, str | list[str]]) -> str | None:
    """The first control character (other than newline and tab) in the answer's fields, as
    `its title holds a control character (\x1b)`: the command words stored text, and the
    characters literal.py makes visible are none a rewording needs."""
    for name, value in fields.items():
        for text in [value] if isinstance(value, str) else value:
            found = CONTROL_EXCEPT_LAYOUT.search(text)
            if found is not None:
                return f"its {name} holds a control character ({escape(found.group())})"
    return None


def sensitive_problem(texts: list[str], group: Sequence[MemoryRecord]) -> str | None:
    """What an agent's write would be refused for: a credential, always; health data, unless
    a member already holds some (the members were let in; the command may say it again)."""
    kinds = credential_kinds(texts)
    if kinds:
        return "holds " + " and ".join(with_article(kind) for kind in kinds)
    if has_health_data(*texts):
        members = [text for c in group for text in (c.title, c.content, *c.keywords)]
        if not has_health_data(*members):
            return "holds health data its members do not"
    return None
