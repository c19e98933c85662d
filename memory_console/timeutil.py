"""UTC time helpers: the store keeps unix seconds, people read and type ISO 8601."""

from __future__ import annotations

import time
from datetime import UTC, datetime

DAY = 86400.0
# The times the store keeps and `--now` may name: from the epoch (no negative ages) to the
# year 9000, which leaves a thousand years for forecasts and dates before `datetime` ends.
EARLIEST = 0.0  # 1970-01-01T00:00:00Z
LATEST = 221845392000.0  # 9000-01-01T00:00:00Z
TIME_RANGE = "1970-01-01T00:00:00Z .. 8999-12-31T23:59:59Z"
# The calendar's words, lower case, in calendar order: the one list that the fact rules, the
# type rules, consolidation's guards and the demo's texts all read.
MONTHS = tuple(
    "january february march april may june july august september october november december".split()
)
MONTH_ABBREVIATIONS = tuple("jan feb mar apr jun jul aug sep sept oct nov dec".split())
WEEKDAYS = tuple("monday tuesday wednesday thursday friday saturday sunday".split())


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


def in_range(ts: float) -> bool:
    """Whether unix seconds fall in the range of times the store keeps."""
    return EARLIEST <= ts < LATEST


def parse_moment(text: str) -> float:
    """parse_iso, refusing a time outside the store's range (TIME_RANGE)."""
    moment = parse_iso(text)
    if not in_range(moment):
        raise ValueError(f"{text.strip()!r} is outside {TIME_RANGE}")
    return moment


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


def add_months(ts: float, months: int) -> float:
    """The same UTC day and time `months` calendar months later (the 31st becomes the last day
    of a shorter month): 12 months after 2026-11-28 is 2027-11-28, 365 days on."""
    moment = datetime.fromtimestamp(ts, UTC)
    index = moment.month - 1 + months
    year, month = moment.year + index // 12, index % 12 + 1
    following = datetime(year + month // 12, month % 12 + 1, 1, tzinfo=UTC)
    last_day = (following - datetime(year, month, 1, tzinfo=UTC)).days
    return moment.replace(year=year, month=month, day=min(moment.day, last_day)).timestamp()


def days_between(earlier: float, later: float) -> float:
    """Elapsed days (fractional) from one time to another."""
    return (later - earlier) / DAY
