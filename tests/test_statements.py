"""One memory, one fact: a message of statements about different subjects is split, each
statement goes through the decision rules, and a message of one statement stays one memory."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memory_console.agent.rules.statements import split_statements
from memory_console.api import MemoryAPI
from memory_console.store import MemoryFilter
from tests.helpers import NOW

PETS = "Rex is a beagle and is 4. Bella is a collie and is 9."


@pytest.mark.parametrize(
    ("message", "statements"),
    [
        (PETS, ["Rex is a beagle and is 4.", "Bella is a collie and is 9."]),
        (
            "My sister lives in Oslo and my brother lives in Rome.",
            ["My sister lives in Oslo.", "My brother lives in Rome."],
        ),
        ("I like tea and coffee", ["I like tea and coffee"]),
        ("I moved to Porto and started at Acme", ["I moved to Porto and started at Acme"]),
        # the same subject twice is one statement; only different subjects are cut apart
        ("I moved to Porto and I started at Acme", ["I moved to Porto and I started at Acme"]),
        (
            "I live in Oslo and my wife works at Acme.",
            ["I live in Oslo.", "My wife works at Acme."],
        ),
        ("I'm a nurse and my husband is a teacher.", ["I'm a nurse.", "My husband is a teacher."]),
        (
            "My phone number is 555-0141; my email is ann@example.com.",
            ["My phone number is 555-0141.", "My email is ann@example.com."],
        ),
        ("My name is Ann. I live in Lyon.", ["My name is Ann.", "I live in Lyon."]),
        # what refers back stays with what it refers to
        (
            "Rex is a beagle. He is 4. Bella is a collie. She is 9.",
            ["Rex is a beagle. He is 4.", "Bella is a collie. She is 9."],
        ),
        (
            "My sister lives in Oslo and she works at a hospital.",
            ["My sister lives in Oslo and she works at a hospital."],
        ),
        ("The build takes 4 minutes. It is slow.", ["The build takes 4 minutes. It is slow."]),
        # greetings, questions and lists of things are not statements of their own
        ("Hi! I just moved to Lyon.", ["Hi! I just moved to Lyon."]),
        (
            "Can you help me? My sister lives in Oslo.",
            ["Can you help me? My sister lives in Oslo."],
        ),
        ("I like tea and green apples.", ["I like tea and green apples."]),
        ("Tom and Anna live in Rome.", ["Tom and Anna live in Rome."]),
        ("The user and Mia are co-writing a paper.", ["The user and Mia are co-writing a paper."]),
        (
            "The user uses Linux at home and a Mac at work.",
            ["The user uses Linux at home and a Mac at work."],
        ),
        ("My name is Tomás and I'm from Lisbon.", ["My name is Tomás.", "I'm from Lisbon."]),
        (
            "My flight is at 7:45 a.m. and my hotel is the Hilton.",
            ["My flight is at 7:45 a.m.", "My hotel is the Hilton."],
        ),
        # abbreviations, initials and versions do not end a sentence
        (
            "Dr. Smith is my dentist. Mr. J. Brown is my boss.",
            ["Dr. Smith is my dentist.", "Mr. J. Brown is my boss."],
        ),
        ("Version 3.11.7 of Python is installed.", ["Version 3.11.7 of Python is installed."]),
        ("", []),
    ],
)
def test_split_statements(message: str, statements: list[str]) -> None:
    assert split_statements(message) == statements


@pytest.fixture(params=["semantic", "keyword"])
def api(request: pytest.FixtureRequest, db_path: Path) -> Iterator[MemoryAPI]:
    if request.param == "semantic":
        opened = MemoryAPI(db_path, owner="ann", embedder=request.getfixturevalue("embedder"))
    else:
        opened = MemoryAPI(db_path, owner="ann", semantic=False)
    with opened:
        yield opened


def active(api: MemoryAPI) -> list[dict[str, object]]:
    return [record.as_dict() for record in api.store.page(MemoryFilter(status="active")).rows]


def test_a_message_of_two_subjects_is_two_memories_and_recall_answers_about_the_right_one(
    api: MemoryAPI,
) -> None:
    result = api.remember(PETS, now=NOW)
    assert [(part.action, part.content) for part in result.parts] == [
        ("stored", "Rex is a beagle and is 4."),
        ("stored", "Bella is a collie and is 9."),
    ]
    assert (result.action, result.id) == ("stored", result.parts[0].id)
    memories = active(api)
    assert sorted(str(memory["content"]) for memory in memories) == sorted(
        part.content or "" for part in result.parts
    )
    splits = [memory["metadata"]["split"] for memory in memories]  # type: ignore[index]
    assert {split["message_id"] for split in splits} == {splits[0]["message_id"]}
    assert sorted((split["part"], split["of"]) for split in splits) == [(1, 2), (2, 2)]
    for memory in memories:
        assert memory["metadata"]["original_message"] == PETS  # type: ignore[index]
    (rex,) = api.recall("how old is Rex?", k=1, now=NOW + 60)
    assert rex.content == "Rex is a beagle and is 4."
    (bella,) = api.recall("how old is Bella?", k=1, now=NOW + 60)
    assert bella.content == "Bella is a collie and is 9."


def test_each_statement_goes_through_the_decision_rules(api: MemoryAPI) -> None:
    first = api.remember("Remember that my sister lives in Oslo and my brother lives in Rome.")
    assert [part.action for part in first.parts] == ["stored", "stored"]
    for memory in active(api):  # a directive's statements are all directives
        assert (memory["importance"], memory["source"]) == (1.0, "user_directive")
    again = api.remember("My brother lives in Rome. My aunt lives in Porto.", now=NOW)
    assert [part.action for part in again.parts] == ["reinforced", "stored"]
    assert again.parts[0].id == first.parts[1].id
    assert len(active(api)) == 3


def test_a_secret_in_one_statement_refuses_the_whole_message(api: MemoryAPI) -> None:
    result = api.remember("My name is Ann. The PIN for my card is 4821.", now=NOW)
    assert (result.action, result.reason, result.parts) == ("refused", "holds a PIN", ())
    assert active(api) == []


@pytest.mark.parametrize(
    "message",
    [
        "Remember that I prefer dark mode",
        "I moved to Porto and started at Acme.",
        "Rex is a beagle and is 4.",
        "Hi! I just moved to Lyon.",
    ],
)
def test_a_message_of_one_statement_stays_one_memory(api: MemoryAPI, message: str) -> None:
    result = api.remember(message, now=NOW)
    assert (result.action, result.parts) == ("stored", ())
    (memory,) = active(api)
    assert "split" not in memory["metadata"]  # type: ignore[operator]
    assert memory["metadata"]["original_message"] == message  # type: ignore[index]


def test_scan_turn_splits_a_directive_into_its_statements(api: MemoryAPI) -> None:
    said = "Please remember that my sister lives in Oslo and my brother lives in Rome."
    found = api.scan_turn(said, now=NOW)
    assert [(scan.candidate.content, scan.result.action) for scan in found] == [
        ("My sister lives in Oslo.", "stored"),
        ("My brother lives in Rome.", "stored"),
    ]
    memories = active(api)
    assert len({memory["metadata"]["split"]["message_id"] for memory in memories}) == 1  # type: ignore[index]
    refused = api.scan_turn("Remember that my aunt lives in Porto and my PIN is 4821.", now=NOW)
    assert [scan.candidate.content for scan in refused] == [
        "My aunt lives in Porto.",
        "My PIN is 4821.",
    ]
    assert (refused[0].result.action, refused[0].result.reason) == ("refused", "holds a PIN")
    assert "stored" not in [scan.result.action for scan in refused]
    assert len(active(api)) == 2
