"""Running the operator's merge command: a JSON question on stdin, a JSON answer on stdout."""

from __future__ import annotations

import json
import shlex
import subprocess
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class MergeFailure:
    """Why the command's answer was not used: a code and its detail."""

    code: str  # did_not_run, exited, invalid_json, incomplete
    exit_code: int | None = None
    error: str | None = None

    def values(self) -> dict[str, Any]:
        """The failure as a reason's values."""
        found = {"merge_command_failure": self.code, "exit_code": self.exit_code}
        return {k: v for k, v in {**found, "error": self.error}.items() if v is not None}


def ask(command: str, payload: dict[str, Any], timeout: float) -> tuple[Any, MergeFailure | None]:
    """The command's answer to `payload`, parsed from its output as JSON, or why there is
    none: it did not run (or ran out of time), exited non-zero, or wrote no JSON. Whether the
    answer says what was asked is the caller's to check."""
    try:
        done = subprocess.run(
            shlex.split(command),
            input=json.dumps(payload),
            text=True,
            capture_output=True,
            timeout=timeout,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired, ValueError) as error:
        return None, MergeFailure("did_not_run", error=str(error))
    if done.returncode != 0:
        return None, MergeFailure("exited", exit_code=done.returncode)
    try:
        return json.loads(done.stdout), None
    except json.JSONDecodeError:
        return None, MergeFailure("invalid_json")
