"""The public development set is what its README says: dialogues of the four kinds, each from a
named source under a licence that lets it be kept here, about a third of each kind set aside."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from tests.harness.dialogues import KINDS, load

SET = Path(__file__).resolve().parent / "data" / "public_dialogues" / "dialogues.jsonl"
KEPT_LICENCES = {"Apache-2.0", "MIT", "MPL-2.0", "CC BY 3.0", "CC BY 4.0"}


def test_every_dialogue_names_its_source_and_a_licence_we_may_keep() -> None:
    rows = [json.loads(line) for line in SET.read_text(encoding="utf-8").splitlines() if line]
    dialogues = load(SET)
    assert len(dialogues) == len(rows) >= 60
    assert len({d.id for d in dialogues}) == len(dialogues)
    assert {d.kind for d in dialogues} == set(KINDS)
    for row in rows:
        assert row["source"].strip() and row["licence"] in KEPT_LICENCES, row["id"]
        assert row["turns"] and all(turn.strip() for turn in row["turns"]), row["id"]
    split = Counter((d.kind, d.split) for d in dialogues)
    for kind in KINDS:
        held, total = split[(kind, "held")], split[(kind, "held")] + split[(kind, "dev")]
        assert total == sum(d.kind == kind for d in dialogues)  # every one has a split
        assert held >= 1 and abs(held - total / 3) <= 1, kind


def test_every_forget_dialogue_has_a_sub_kind_and_each_sub_kind_a_third_set_aside() -> None:
    rows = [json.loads(line) for line in SET.read_text(encoding="utf-8").splitlines() if line]
    forget = [row for row in rows if row["kind"] == "forget"]
    assert {row["subkind"] for row in forget} == {
        "targeted", "clear_all", "never_said", "not_a_request"
    }  # fmt: skip
    for subkind in {row["subkind"] for row in forget}:
        part = [row for row in forget if row["subkind"] == subkind]
        held = sum(row["split"] == "held" for row in part)
        assert abs(held - len(part) / 3) <= 1, subkind
        for row in part:
            assert row["kept"] or subkind == "clear_all", row["id"]
            assert (not row["absent"]) == (subkind in ("never_said", "not_a_request")), row["id"]
