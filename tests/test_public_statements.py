"""The public statement set is what its README says: single user sentences or turns from named
public sources under licences that let them be kept here, each labelled fact, chatter or refers,
with about a third of each label set aside."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

SET = Path(__file__).resolve().parent / "data" / "public_statements" / "statements.jsonl"
LABELS = ("fact", "chatter", "refers")
SPLITS = {"dev", "held"}
KEPT_LICENCES = {
    "Apache-2.0",
    "MIT",
    "BSD-2-Clause",
    "BSD-3-Clause",
    "MPL-2.0",
    "CC BY 3.0",
    "CC BY 4.0",
    "CC0-1.0",
}
REQUIRED = {"id", "text", "label", "split", "source", "licence"}
OPTIONAL = {"prev", "prev_speaker"}
MINIMUM = {"fact": 120, "chatter": 120, "refers": 15}
CLINC = "clinc/oos-eval"


@pytest.fixture(scope="module")
def rows() -> list[dict]:
    lines = SET.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def test_every_row_has_the_fields_and_values_the_readme_names(rows: list[dict]) -> None:
    for row in rows:
        assert REQUIRED <= set(row) <= REQUIRED | OPTIONAL, row.get("id")
        assert all(isinstance(row[k], str) for k in row), row["id"]
        assert row["label"] in LABELS and row["split"] in SPLITS, row["id"]
        assert row["id"].startswith(row["label"] + "-"), row["id"]
        assert row["text"] == row["text"].strip() and row["text"], row["id"]
        assert row["source"].strip(), row["id"]
        assert row["licence"] in KEPT_LICENCES, row["id"]
        if "prev" in row:
            assert row["label"] == "refers" and row["prev"].strip(), row["id"]
            assert row["prev"].casefold() != row["text"].casefold(), row["id"]
        if "prev_speaker" in row:
            assert row["prev_speaker"] == "assistant" and "prev" in row, row["id"]


def test_ids_and_texts_are_unique(rows: list[dict]) -> None:
    ids = Counter(row["id"] for row in rows)
    texts = Counter(row["text"].casefold() for row in rows)
    assert not [i for i, n in ids.items() if n > 1]
    assert not [t for t, n in texts.items() if n > 1]


def test_the_set_is_large_enough_and_clinc_is_at_most_half_the_chatter(
    rows: list[dict],
) -> None:
    assert len(rows) >= 300
    count = Counter(row["label"] for row in rows)
    for label, least in MINIMUM.items():
        assert count[label] >= least, label
    chatter = [row for row in rows if row["label"] == "chatter"]
    assert sum(row["source"].startswith(CLINC) for row in chatter) * 2 <= len(chatter)
    assert len({row["source"].split(" ")[0] for row in chatter}) >= 3


def test_about_a_third_of_each_label_is_held(rows: list[dict]) -> None:
    for label in LABELS:
        group = [row for row in rows if row["label"] == label]
        held = sum(row["split"] == "held" for row in group)
        assert abs(held - len(group) / 3) <= 2, (label, held, len(group))
