"""The labelled dialogues through the agent API: changed facts, similar subjects, no secrets kept.

Each dialogue of tests/data/dialogues/ is replayed in a fresh store with the real embedder
(every turn to remember, then recall(query, k=3)); the figures per kind are printed by
benchmarks/dialogues.py.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from memory_console.embed.embedder import Embedder
from tests.harness.dialogues import KINDS, Outcome, figures, load, replay_all


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> list[Outcome]:
    folder: Path = tmp_path_factory.mktemp("dialogues")
    return replay_all(load(), Embedder.load(), folder)


def wrong(outcomes: list[Outcome]) -> list[str]:
    return [f"{o.dialogue.id}: {o.why}" for o in outcomes if not o.right]


def test_the_set_has_forty_dialogues_of_four_kinds_with_secrets_in_prose() -> None:
    dialogues = load()
    kinds = Counter(d.kind for d in dialogues)
    assert len(dialogues) >= 40 and set(kinds) == set(KINDS)
    assert min(kinds.values()) >= 8
    assert len({d.id for d in dialogues}) == len(dialogues)
    assert sum(d.slot for d in dialogues) >= 10 and sum(d.multi_fact for d in dialogues) >= 6
    assert sum(len(d.secrets) for d in dialogues) >= 6
    for dialogue in dialogues:
        said = " ".join(dialogue.turns)
        assert all(secret in said for secret in dialogue.secrets), dialogue.id
        assert dialogue.expect == "none" or dialogue.expect.casefold() in said.casefold()


def test_every_slot_case_recalls_the_current_value_first(outcomes: list[Outcome]) -> None:
    slot_cases = [o for o in outcomes if o.dialogue.slot]
    assert wrong(slot_cases) == []


def test_every_multi_fact_message_answers_about_the_right_subject(
    outcomes: list[Outcome],
) -> None:
    multi = [o for o in outcomes if o.dialogue.multi_fact]
    assert wrong(multi) == []


def test_no_secret_said_in_prose_reaches_the_store(outcomes: list[Outcome]) -> None:
    assert {o.dialogue.id: o.leaked for o in outcomes if o.leaked} == {}


def test_forget_requests_and_questions_about_nothing_said_stay_right(
    outcomes: list[Outcome],
) -> None:
    found = figures(outcomes)
    # Every one right on the build before this set existed; they must stay so.
    assert found["forget"][0] == found["forget"][1], wrong(outcomes)
    assert found["unknown"][0] == found["unknown"][1], wrong(outcomes)
