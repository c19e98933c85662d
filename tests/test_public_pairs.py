"""The public pair set is what its README says: pairs of short statements from named public
sources under licences that let them be kept here, each labelled the same fact, a newer value
or different facts, with about a third of each relation set aside and under a third of the
pairs holding a side written here."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

SET = Path(__file__).resolve().parent / "data" / "public_pairs" / "pairs.jsonl"
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
TAGS = {
    "same": {"paraphrase", "symmetric-swap"},
    "newer": {"value-change", "role-swap", "reversed-preference", "negation"},
    "different": {"other-subject", "other-attribute", "both-hold"},
}
REQUIRED = {"id", "a", "b", "relation", "tag", "split", "source", "licence"}
OPTIONAL = {"written"}
MINIMUM = {"same": 30, "newer": 60, "different": 80}
MINIMUM_TAG = {
    ("same", "symmetric-swap"): 8,
    ("newer", "role-swap"): 15,
    ("newer", "reversed-preference"): 15,
}


@pytest.fixture(scope="module")
def rows() -> list[dict]:
    lines = SET.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def fold(text: str) -> str:
    return " ".join(text.casefold().split())


def test_every_row_has_the_fields_and_values_the_readme_names(rows: list[dict]) -> None:
    for row in rows:
        assert REQUIRED <= set(row) <= REQUIRED | OPTIONAL, row.get("id")
        assert all(isinstance(row[k], str) for k in row), row["id"]
        assert row["relation"] in TAGS, row["id"]
        assert row["tag"] in TAGS[row["relation"]], row["id"]
        assert row["split"] in SPLITS, row["id"]
        assert row["id"].startswith(row["relation"] + "-"), row["id"]
        for side in ("a", "b"):
            assert row[side] == row[side].strip() and row[side], row["id"]
        assert row["source"].strip(), row["id"]
        assert row.get("written", "b") in {"a", "b"}, row["id"]


def test_every_licence_lets_the_pairs_be_kept(rows: list[dict]) -> None:
    assert {row["licence"] for row in rows} <= KEPT_LICENCES


def test_ids_and_pairs_are_unique_and_no_pair_repeats_a_statement(rows: list[dict]) -> None:
    ids = Counter(row["id"] for row in rows)
    assert not [i for i, n in ids.items() if n > 1]
    pairs = Counter((fold(row["a"]), fold(row["b"])) for row in rows)
    assert not [p for p, n in pairs.items() if n > 1]
    assert not [row["id"] for row in rows if fold(row["a"]) == fold(row["b"])]


def test_the_set_is_large_enough_in_each_relation_and_kind(rows: list[dict]) -> None:
    assert len(rows) >= 240
    relations = Counter(row["relation"] for row in rows)
    for relation, least in MINIMUM.items():
        assert relations[relation] >= least, relation
    tags = Counter((row["relation"], row["tag"]) for row in rows)
    for kind, least in MINIMUM_TAG.items():
        assert tags[kind] >= least, kind


def test_about_a_third_of_each_relation_is_held(rows: list[dict]) -> None:
    for relation in TAGS:
        group = [row for row in rows if row["relation"] == relation]
        held = sum(row["split"] == "held" for row in group)
        assert abs(held - len(group) / 3) <= 2, (relation, held, len(group))


def test_pairs_with_a_side_written_here_are_under_a_third(rows: list[dict]) -> None:
    written = [row for row in rows if "written" in row]
    assert len(written) * 3 < len(rows)
    assert all("written here" in row["source"] for row in written)
