"""Base class for policy parameters: validated, frozen, and round-tripped through plain dicts."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any, ClassVar, Self


@dataclass(frozen=True)
class PolicyParams:
    """Frozen parameter set; runs record `to_dict()` and the CLI/TUI override via `from_dict()`.

    Field types come from the defaults: int fields accept integral values only, float fields
    any finite number; strings are parsed so `--param rate=0.9` works unchanged.
    """

    name: ClassVar[str] = "policy"

    def __post_init__(self) -> None:
        for field in fields(self):
            value = _coerce(self.name, field.name, getattr(self, field.name), type(field.default))
            object.__setattr__(self, field.name, value)
        self._validate()

    def _validate(self) -> None:
        """Subclasses raise ValueError for out-of-range values."""

    def to_dict(self) -> dict[str, Any]:
        """All parameters by name, JSON-ready."""
        return {field.name: getattr(self, field.name) for field in fields(self)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Self:
        """Defaults overridden by `d`; unknown names and invalid values raise ValueError."""
        known = [field.name for field in fields(cls)]
        unknown = sorted(set(d) - set(known))
        if unknown:
            raise ValueError(
                f"unknown {cls.name} parameter(s): {', '.join(map(str, unknown))}; "
                f"known: {', '.join(known)}"
            )
        return cls(**dict(d))

    def with_overrides(self, overrides: Mapping[str, Any]) -> Self:
        """A copy with some parameters replaced, validated like `from_dict`."""
        return self.from_dict({**self.to_dict(), **overrides})

    def _check(
        self,
        field_name: str,
        low: float | None = None,
        high: float | None = None,
        *,
        low_open: bool = False,
        high_open: bool = False,
    ) -> None:
        """Raise ValueError unless the field lies in the given (half-)open or closed interval."""
        value = getattr(self, field_name)
        ok = True
        if low is not None:
            ok = ok and (value > low if low_open else value >= low)
        if high is not None:
            ok = ok and (value < high if high_open else value <= high)
        if not ok:
            left = "(" if low_open else "["
            right = ")" if high_open else "]"
            low_text = "-inf" if low is None else f"{low:g}"
            high_text = "inf" if high is None else f"{high:g}"
            raise ValueError(
                f"{self.name} parameter {field_name}={value!r} must be in "
                f"{left}{low_text}, {high_text}{right}"
            )


def _coerce(policy: str, field_name: str, value: Any, kind: type) -> int | float:
    """Turn `value` into the field's type (int or float), rejecting bools, NaN and infinities."""
    where = f"{policy} parameter {field_name}"
    if isinstance(value, bool):
        raise ValueError(f"{where} must be a number, not {value!r}")
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            raise ValueError(f"{where} must be a number, got {value!r}") from None
    if not isinstance(value, int | float):
        try:
            value = float(value)
        except (TypeError, ValueError):
            raise ValueError(f"{where} must be a number, got {value!r}") from None
    if not math.isfinite(value):
        raise ValueError(f"{where} must be finite, got {value!r}")
    if kind is int:
        if float(value) != int(value):
            raise ValueError(f"{where} must be a whole number, got {value!r}")
        return int(value)
    return float(value)
