"""The agent API's public entry point: MemoryAPI and what its calls answer.

See docs/ARCHITECTURE.md, "The agent API"; the agent side lives in memory_console/agent/.

    from memory_console.api import MemoryAPI, find_directive
"""

from __future__ import annotations

from memory_console.agent.api import MemoryAPI
from memory_console.agent.forgetting import ClearResult, ForgetResult
from memory_console.agent.results import (
    ActionOutcome,
    ActionsResult,
    Recalled,
    RememberResult,
    ScanResult,
)
from memory_console.agent.rules.remember import find_directive

__all__ = [
    "ActionOutcome",
    "ActionsResult",
    "ClearResult",
    "ForgetResult",
    "MemoryAPI",
    "RememberResult",
    "Recalled",
    "ScanResult",
    "find_directive",
]
