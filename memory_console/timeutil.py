"""UTC time helpers: the store keeps unix seconds, people read and type ISO 8601."""

from __future__ import annotations

import time
from datetime import UTC, datetime

DAY = 86400.0


def now_ts() -> float:
    """The current time in unix seconds."""
    return time.time()


def parse_iso(text: str) -> float:
    """Unix seconds of an ISO 8601 time; a time without zone is taken as UTC."""
    value = text.strip()
    if value.endswith(("Z", "z")):
        value = value[:-1] + "+00:00"
    try:
        moment = datetime.fromisoformat(value)
    except ValueError as error:
        raise ValueError(f"not an ISO 8601 time: {text!r}") from error
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    try:
        return moment.timestamp()
    except (OverflowError, OSError, ValueError) as error:
        raise ValueError(f"time out of range: {text!r}") from error


def to_iso(ts: float | None) -> str | None:
    """ISO 8601 (UTC, with Z) of unix seconds, or None; microseconds only when there are any."""
    if ts is None:
        return None
    moment = datetime.fromtimestamp(ts, UTC)
    if moment.microsecond:
        return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def to_date(ts: float | None) -> str:
    """The UTC date of unix seconds, or an empty string."""
    if ts is None:
        return ""
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d")


def days_between(earlier: float, later: float) -> float:
    """Elapsed days (fractional) from one time to another."""
    return (later - earlier) / DAY
