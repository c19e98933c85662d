"""What remember keeps of a message: no small talk from an inferred one, a sentence that points
back stays with the one it points to, and a request to the memory is recognised however it is
worded, in the user's own words only."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory_console.agent.rules.chatter import is_chatter
from memory_console.agent.rules.requests import CLEAR, FORGET, find_request, is_broad
from memory_console.agent.rules.statements import split_statements
from memory_console.api import MemoryAPI


@pytest.mark.parametrize(
    "text",
    [
        "Thanks!",
        "hello, what's up",
        "you have been a big help, thank you so much",
        "i owe you one",
        "Nice to meet you.",
        "Can you tell me your name?",
        "Do you have any good book recommendations for me?",
        "Actually, I have some news.",
    ],
)
def test_small_talk_holds_no_fact(text: str) -> None:
    assert is_chatter(text)


@pytest.mark.parametrize(
    "text",
    [
        "I have a dog.",
        "I'm 30.",
        "My name is Emily.",
        "We moved to Lisbon.",
        "Today I went for a run in the nearby park for an hour.",
        "Thanks to my brother I found a job at Acme.",
    ],
)
def test_a_statement_of_the_users_own_is_a_fact(text: str) -> None:
    assert not is_chatter(text)


def test_a_short_subjectless_sentence_that_points_back_stays_with_the_one_before() -> None:
    text = "Actually I got a new phone number. It's 555-0202 now. Please update it."
    assert split_statements(text) == [text]
    assert split_statements("I moved to Porto last month. Love it here!") == [
        "I moved to Porto last month. Love it here!"
    ]
    assert split_statements("My sister lives in Oslo. My brother lives in Rome.") == [
        "My sister lives in Oslo.",
        "My brother lives in Rome.",
    ]


def test_remember_leaves_small_talk_out_of_an_inferred_message(tmp_path: Path) -> None:
    with MemoryAPI(tmp_path / "m.db", owner="u", semantic=False) as api:
        assert api.remember("Thanks!").action == "skipped"
        said = api.remember("Hello, my name is Emily. Nice to meet you.")
        assert [m.content for m in api.list_memories()] == ["Hello, my name is Emily."]
        assert said.action == "stored"
        # Asked for in so many words, it is kept: the user decides what is worth keeping.
        assert api.remember("Remember that thanks a lot").action == "stored"


@pytest.mark.parametrize(
    ("text", "kind", "subject"),
    [
        ("For privacy reasons, please remove my home address from your memory.", FORGET,
         "my home address"),
        ("Remove all existing memories of me.", CLEAR, None),
        ("Completely clear the DB.", CLEAR, None),
        ("I don't want to talk about Alex anymore. Please forget everything about that "
         "relationship.", FORGET, "Alex"),
        ("To be safe, could you delete my passport number?", FORGET, "my passport number"),
    ],
)  # fmt: skip
def test_a_request_is_recognised_with_a_reason_a_polite_form_or_a_pointer(
    text: str, kind: str, subject: str | None
) -> None:
    request = find_request(text)
    assert request is not None and (request.kind, request.subject) == (kind, subject)


@pytest.mark.parametrize(
    "text",
    [
        "I always forget my keys.",
        "My friend told me to forget about the party.",
        "I want to forget my ex's birthday party.",
    ],
)
def test_forget_words_that_ask_nothing_of_the_memory_are_no_request(text: str) -> None:
    assert find_request(text) is None


def test_forget_everything_about_a_subject_archives_what_names_it_and_only_that(
    tmp_path: Path,
) -> None:
    with MemoryAPI(tmp_path / "m.db", owner="u", semantic=False) as api:
        for said in ["I've been dating Alex for two years.", "Alex loves sushi.", "I like sushi."]:
            api.remember(said)
        assert is_broad("Please forget everything about Alex.")
        done = api.remember("Please forget everything about Alex.")
        assert done.action == "forgot" and done.forgotten is not None
        assert sorted(m.content for m in done.forgotten.archived) == [
            "Alex loves sushi.",
            "I've been dating Alex for two years.",
        ]
        assert [m.content for m in api.list_memories()] == ["I like sushi."]
        nothing = api.remember("Please forget everything about Rome.")
        assert nothing.forgotten is not None and not nothing.forgotten.archived
        assert [m.content for m in api.list_memories()] == ["I like sushi."]


def test_on_public_turns_no_fact_is_taken_for_small_talk_and_most_small_talk_is() -> None:
    """tests/data/public_statements: turns others wrote, labelled fact, chatter or refers."""
    import json

    set_path = Path(__file__).parent / "data" / "public_statements" / "statements.jsonl"
    rows = [json.loads(line) for line in set_path.read_text(encoding="utf-8").splitlines()]

    def small_talk(text: str) -> bool:
        return all(is_chatter(part) for part in split_statements(text))

    facts = [r["text"] for r in rows if r["label"] == "fact"]
    chatter = [r["text"] for r in rows if r["label"] == "chatter"]
    assert [text for text in facts if small_talk(text)] == []
    assert sum(map(small_talk, chatter)) / len(chatter) >= 0.55
    pointing = [r for r in rows if r["label"] == "refers" and r.get("prev_speaker") != "assistant"]
    kept = sum(len(split_statements(f"{r['prev']} {r['text']}")) == 1 for r in pointing)
    assert kept / len(pointing) >= 0.6


def test_forget_that_i_say_one_thing_never_archives_a_memory_stating_another(
    tmp_path: Path,
) -> None:
    """However near by cosine (the threshold set low here so that only the judgement stands
    between them), "forget that I'm allergic to shellfish" does not archive the peanuts."""
    with MemoryAPI(tmp_path / "m.db", owner="u", forget_threshold=0.2) as api:
        api.remember("Remember that I'm allergic to peanuts.")  # health data: asked for
        api.remember("Acme's office is in Berlin.")
        for said in ("Forget that I'm allergic to shellfish.", "Forget that I live in Berlin."):
            done = api.remember(said)
            assert done.action == "forgot" and done.forgotten is not None
            assert done.forgotten.archived == [], done.reason
        assert len(api.list_memories()) == 2
        done = api.remember("Forget that I'm allergic to peanuts.")
        assert done.forgotten is not None
        assert [m.content for m in done.forgotten.archived] == ["I'm allergic to peanuts."]
