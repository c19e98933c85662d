"""The expire-banks pass: archive working and short-term memories idle past their bank's TTL.

Working memory lasts a task and short-term memory a session (docs/ARCHITECTURE.md, "Memory
banks"); `end_session` archives a session's memories when the agent says it ended, and this
pass catches the sessions that never did. Idle time runs from the last access, or from
creation when never accessed, so a long task that keeps using its notes keeps them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from memory_console.maintenance.changes import PassResult
from memory_console.maintenance.frame import Frame
from memory_console.maintenance.params import MaintenanceParams
from memory_console.maintenance.passes.archive import archived_set
from memory_console.maintenance.reasons import grouped_reasons
from memory_console.maintenance.registry import PassSpec
from memory_console.policies.params import PolicyParams
from memory_console.store.vocab import SESSION_TIERS

HOUR = 3600.0
BANK_NAMES = {"working": "working memory", "short_term": "short-term memory"}


@dataclass(frozen=True)
class ExpireBanksParams(PolicyParams):
    """How long a working or short-term memory may sit idle before it is archived."""

    name: ClassVar[str] = "expire_banks"

    working_ttl_hours: float = 1.0
    short_term_ttl_hours: float = 24.0

    def _validate(self) -> None:
        self._check("working_ttl_hours", 0.0, low_open=True)
        self._check("short_term_ttl_hours", 0.0, low_open=True)

    def ttl_hours(self, tier: str) -> float:
        return self.working_ttl_hours if tier == "working" else self.short_term_ttl_hours


def last_activity(frame: Frame) -> np.ndarray:
    """Each row's last access, or its creation when it was never accessed."""
    created = frame.column("created_at")
    accessed = frame.column("last_accessed_at")
    return np.where(np.isnan(accessed), created, np.maximum(accessed, created))


def idle_text(hours: int) -> str:
    return f"{hours // 24} d" if hours >= 48 else f"{hours} h"


def plan_expire_banks(frame: Frame, params: MaintenanceParams, now: float) -> PassResult:
    p = params.of(ExpireBanksParams)
    tier = frame.column("tier")
    idle = (now - last_activity(frame)) / HOUR
    expired = np.zeros(len(frame), dtype=np.bool_)
    for bank in SESSION_TIERS:
        expired |= (tier == bank) & (idle > p.ttl_hours(bank))
    rows = np.flatnonzero(frame.maintainable() & expired)
    banks = tier[rows].astype(str)
    hours = np.floor(idle[rows]).astype(np.int64)

    def texts(first: np.ndarray) -> list[str]:
        return [
            f"{BANK_NAMES[banks[i]]} idle for {idle_text(int(hours[i]))}, past its TTL of "
            f"{p.ttl_hours(banks[i]):g} h (its session never ended)"
            for i in first.tolist()
        ]

    reasons = grouped_reasons([banks, hours], texts)
    change = archived_set(frame, "expire-banks", rows, reasons)
    figures = {f"expired_{bank}": int((banks == bank).sum()) for bank in SESSION_TIERS}
    return PassResult([change], figures=figures)


def narrow_expire_banks(params: MaintenanceParams, now: float) -> tuple[str, dict[str, Any]]:
    """Only working and short-term memories created before the shorter TTL can expire."""
    p = params.of(ExpireBanksParams)
    shortest = min(p.working_ttl_hours, p.short_term_ttl_hours)
    banks = ", ".join(f"'{bank}'" for bank in SESSION_TIERS)
    return (
        f"tier IN ({banks}) AND created_at < :expire_banks_before",
        {"expire_banks_before": now - shortest * HOUR},
    )


PASS = PassSpec(
    name="expire-banks",
    plan=plan_expire_banks,
    summary="archive working memories idle past working_ttl_hours and short-term ones past "
    "short_term_ttl_hours",
    order=3,
    scope="maintainable",
    columns=("tier",),
    params_class=ExpireBanksParams,
    narrow=narrow_expire_banks,
)
