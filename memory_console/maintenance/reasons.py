"""Why a plan changes a memory, as data: codes and numbers, made into text only when shown.

Reasons of many rows are stored once per distinct case (a million decayed rows share a few
hundred combinations of periods, rate and anchor). A reason is either a `Reason` (a code
with its values, which edits and plan files read as data) or, for passes whose policies
word their reasons themselves, that text.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

Scalar = str | int | float | bool | None


@dataclass(frozen=True)
class Reason:
    """One reason as data: `code` names its wording, `values` fill it in (hashable, so
    equal reasons of many rows are stored once)."""

    code: str
    values: tuple[tuple[str, Scalar], ...] = ()

    @classmethod
    def of(cls, code: str, **values: Scalar) -> Reason:
        if code not in TEXTS:
            raise ValueError(f"unknown reason code {code!r}")
        return cls(code, tuple(sorted(values.items())))

    def get(self, name: str, default: Scalar = None) -> Scalar:
        return dict(self.values).get(name, default)

    def with_values(self, **values: Scalar) -> Reason:
        return Reason.of(self.code, **{**dict(self.values), **values})

    @property
    def text(self) -> str:
        return TEXTS[self.code](dict(self.values))

    def to_json(self) -> dict[str, Scalar]:
        return {"code": self.code, **dict(self.values)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Reason:
        values = {k: v for k, v in data.items() if k != "code"}
        if not all(v is None or isinstance(v, str | int | float | bool) for v in values.values()):
            raise ValueError("a reason's values are numbers, words or booleans")
        return cls.of(str(data.get("code")), **values)


ReasonItem = Reason | str


def reason_text(item: ReasonItem) -> str:
    return item if isinstance(item, str) else item.text


def similarity_text(values: Mapping[str, Any]) -> str:
    """`cosine >= 0.92`: the measure a merge grouped by and its threshold (or `same text`)."""
    if values["measure"] == "same text":
        return "same text"
    return f"{values['measure']} >= {float(values['threshold']):g}"


def merged_member_text(values: Mapping[str, Any]) -> str:
    regrouped = "; regrouped in review" if values.get("regrouped") else ""
    others = int(values["others"])
    return (
        f"merged into the new memory with {others} {'other' if others == 1 else 'others'} "
        f"({similarity_text(values)}{regrouped})"
    )


def merge_group_text(values: Mapping[str, Any]) -> str:
    text = (
        f"{int(values['size'])} near-duplicates ({similarity_text(values)}) of "
        f"{values['owner']}/{values['topic']}"
    )
    if values.get("regrouped"):
        text += "; regrouped in review"
    failure = values.get("merge_command_failure")
    if failure:
        text += f"; {merge_failure_text(str(failure), values)}, merged extractively"
    return text


def merge_failure_text(code: str, values: Mapping[str, Any]) -> str:
    """Why the merge command's answer was not used, from its failure code."""
    if code == "exited":
        return f"merge command exited with {values.get('exit_code')}"
    if code == "invalid_json":
        return "merge command answered with invalid JSON"
    if code == "incomplete":
        return "merge command answered without title, content and keywords"
    if code == "timed_out":
        return f"merge command gave no answer in {values.get('error')}"
    if code == "not_asked":
        return f"merge command not asked ({values.get('error')})"
    if code == "too_long":
        return f"merge command answered more than {values.get('error')}"
    if code == "refused":
        return f"merge command's answer refused: {values.get('error')}"
    return f"merge command failed ({values.get('error')})"


def superseded_text(values: Mapping[str, Any]) -> str:
    """`superseded by #12: phone 555-0141 vs 555-0187 (cosine 0.97 >= 0.8)`."""
    text = f"superseded by #{values['by']}: {values.get('differences') or 'a newer value'}"
    if values.get("found_by") == "cosine":
        text += f" (cosine {float(values['cosine']):.2f} >= {float(values['threshold']):g})"
    else:
        text += " (same slot)"
    if values.get("protected"):
        text += "; protected"
    proposal = values.get("proposed")
    if proposal:
        text += f"; merge command proposes {proposal}"
        if values.get("proposal_reason"):
            text += f" ({values['proposal_reason']})"
    failure = values.get("merge_command_failure")
    if failure == "incomplete":
        text += "; merge command answered without a decision (supersede or keep)"
    elif failure:
        text += f"; {merge_failure_text(str(failure), values)}"
    return text


# code -> its wording; a reason code a plan file holds must be one of these.
TEXTS: dict[str, Callable[[Mapping[str, Any]], str]] = {
    "merged_into": merged_member_text,
    "merge_group": merge_group_text,
    "superseded": superseded_text,
}


@dataclass(frozen=True)
class Reasons:
    """Reasons of many rows stored once each: row i has items[index[i]]."""

    items: Sequence[ReasonItem]
    index: np.ndarray

    @classmethod
    def same(cls, item: ReasonItem, count: int) -> Reasons:
        return cls([item], np.zeros(count, dtype=np.int64))

    @classmethod
    def each(cls, items: Sequence[ReasonItem]) -> Reasons:
        unique = list(dict.fromkeys(items))
        position = {item: i for i, item in enumerate(unique)}
        return cls(unique, np.array([position[t] for t in items], dtype=np.int64))

    @cached_property
    def texts(self) -> list[str]:
        """Each distinct reason as a person reads it."""
        return [reason_text(item) for item in self.items]

    def __len__(self) -> int:
        return int(self.index.shape[0])

    def __getitem__(self, row: int) -> str:
        return self.texts[int(self.index[row])]

    def item(self, row: int) -> ReasonItem:
        """Row `row`'s reason as data (a Reason) or as the text its pass gave."""
        return self.items[int(self.index[row])]

    def take(self, rows: np.ndarray) -> Reasons:
        return Reasons(self.items, self.index[rows])

    def tolist(self) -> list[str]:
        texts = self.texts
        return [texts[i] for i in self.index.tolist()]


def grouped_reasons(
    keys: Sequence[np.ndarray], build: Callable[[np.ndarray], list[str]]
) -> Reasons:
    """Reasons of rows whose text depends only on `keys` (arrays aligned with the rows).

    `build(rows)` returns the texts of the given representative rows.
    """
    n = int(keys[0].shape[0]) if keys else 0
    if n == 0:
        return Reasons([], np.zeros(0, dtype=np.int64))
    combined = np.zeros(n, dtype=np.int64)
    for key in keys:
        codes = key_codes(key)
        span = int(codes.max()) + 1
        if int(combined.max()) >= (1 << 62) // span:  # keep the product within int64
            _, combined = np.unique(combined, return_inverse=True)
            combined = combined.reshape(-1).astype(np.int64)
        combined = combined * span + codes
    _, first, inverse = np.unique(combined, return_index=True, return_inverse=True)
    return Reasons(build(first), inverse.reshape(-1).astype(np.int64))


def key_codes(key: np.ndarray) -> np.ndarray:
    """Small non-negative integers standing for the key's values (no sort for ints)."""
    if key.dtype.kind == "b":
        return key.astype(np.int64)
    if key.dtype.kind in "iu" and int(key.max()) - int(key.min()) < (1 << 20):
        return key.astype(np.int64) - int(key.min())
    _, codes = np.unique(key, return_inverse=True)
    return codes.reshape(-1).astype(np.int64)
