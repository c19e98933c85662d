"""The relation judgement's rules (agent/rules/relation.py): the same fact, a newer value, or
different facts, word order included."""

from __future__ import annotations

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from memory_console.agent.rules.relation import (
    DIFFERENT,
    NEWER,
    SAME,
    relate,
    same_fact,
    without_opening,
)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("Joana is Sam's sister.", "Sam's sister is Joana."),
        ("Ana and Ben co-host a podcast.", "Ben and Ana co-host a podcast."),
        ("I work at Google.", "I'm working at Google."),
        ("I really love tea.", "I like tea."),
        ("The user lives in Porto.", "I live in Porto."),
    ],
)
def test_a_rewording_or_a_turn_around_a_word_that_reads_both_ways_is_the_same_fact(
    old: str, new: str
) -> None:
    assert relate(old, new).kind == SAME
    assert same_fact(old, new) and same_fact(new, old)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("Ana reports to Ben.", "Ben reports to Ana."),
        ("Prefers pytest over unittest.", "Prefers unittest over pytest."),
        ("Joana is Sam's sister.", "Sam is Joana's sister."),
        ("I like tea more than coffee.", "I like coffee more than tea."),
    ],
)
def test_the_same_words_with_roles_swapped_are_a_newer_value_never_the_same_fact(
    old: str, new: str
) -> None:
    judged = relate(old, new)
    assert (judged.kind, judged.confident) == (NEWER, True)
    assert judged.blocks_merge and not same_fact(old, new)


def test_one_value_changed_in_a_long_frame_is_a_newer_value() -> None:
    judged = relate(
        "Paulo Smithe is a professor at the University of Lisbon.",
        "Paulo Smithe is a professor at the University of Barcelona.",
    )
    assert (judged.kind, judged.confident, judged.nearest_only) == (NEWER, True, False)
    assert judged.why == "name Lisbon vs Barcelona"
    judged = relate(
        "Courtney hikes in the mountains in summer.", "Courtney hikes in the mountains in winter."
    )
    assert (judged.kind, judged.why) == (NEWER, "summer -> winter")


def test_in_a_short_frame_only_words_of_change_make_a_newer_value() -> None:
    assert relate("I like bananas.", "I like apples.").kind == DIFFERENT  # both may hold
    judged = relate("I like bananas.", "Actually, sorry, I meant I like apples.")
    assert (judged.kind, judged.confident, judged.nearest_only) == (NEWER, True, True)


def test_a_negation_added_is_a_newer_value() -> None:
    assert relate("I live in Porto.", "I no longer live in Porto.").kind == NEWER


def test_another_subject_is_another_fact_unless_the_frame_names_something_particular() -> None:
    pianist = "{} is an accomplished pianist who has performed in several competitions."
    judged = relate(pianist.format("Jonan Butley"), pianist.format("Jessa Lann"))
    assert (judged.kind, judged.confident) == (DIFFERENT, True)
    assert relate("I like hiking.", "Sam likes hiking.").kind == DIFFERENT
    website = "{} developed a website to showcase Megan Lamberly's research findings."
    assert relate(website.format("Micah Kahnell"), website.format("Jeffren Willard")).kind == NEWER


def test_a_number_or_date_only_one_holds_is_never_the_same_fact() -> None:
    judged = relate("My phone number is 555-0141.", "My phone number is 555-0187.")
    assert judged.kind == NEWER and "555-0141 vs 555-0187" in judged.why
    assert not same_fact("Dentist on March 3.", "Dentist on March 4.")


def test_the_newer_saying_part_of_the_older_repeats_it_without_certainty() -> None:
    judged = relate("I like hiking and swimming.", "I like hiking.")
    assert (judged.kind, judged.confident) == (SAME, False)
    assert not judged.blocks_merge
    assert relate("Loves cheese pizza.", "Loves cheese and chicken pizza.").kind == NEWER


def test_the_words_that_open_a_correction_are_set_aside() -> None:
    assert without_opening("Actually, sorry, I meant I like apples.") == "I like apples."
    assert without_opening("Correction: the meeting moved to 3pm.") == "The meeting moved to 3pm."
    assert without_opening("I like apples.") == "I like apples."


NAMES = st.sampled_from(["Ana", "Ben", "Joana", "Sam", "Priya", "Omar"])
VERBS = st.sampled_from(["reports to", "mentors", "hired", "replaced", "interviewed"])


@given(st.text(alphabet="abcdefghij ,.'", min_size=1, max_size=60))
def test_a_statement_is_the_same_fact_as_itself(text: str) -> None:
    assert relate(text, text).kind == SAME


@given(NAMES, NAMES, VERBS)
def test_swapping_who_does_what_to_whom_is_never_the_same_fact(
    one: str, other: str, verb: str
) -> None:
    assume(one != other)
    first, second = f"{one} {verb} {other}.", f"{other} {verb} {one}."
    assert relate(first, second).kind == NEWER and relate(first, second).blocks_merge
    assert not same_fact(first, second)


@given(NAMES, NAMES, st.sampled_from(["sister", "manager", "neighbour"]))
def test_a_turn_around_is_turns_both_ways_and_same_fact_is_symmetric(
    one: str, other: str, role: str
) -> None:
    assume(one != other)
    first, second = f"{one} is {other}'s {role}.", f"{other}'s {role} is {one}."
    assert same_fact(first, second) and same_fact(second, first)
    assert not same_fact(first, f"{other} is {one}'s {role}.")


@pytest.mark.parametrize(
    ("one", "other"),
    [
        ("Works at Hooli as a staff engineer.", "The user works at Hooli as a staff engineer."),
        ("The user's dog is named Rex.", "The user has a dog named Rex."),
        ("Uses dark mode when coding (One Dark).", "Likes a dark editor theme, usually One Dark."),
        ("Prefers answers in bullet points.", "Wants answers in bullet points."),
    ],
)
def test_a_stored_fact_without_its_subject_is_not_another_subject(one: str, other: str) -> None:
    """A memory often leaves its subject, the user, unsaid, or opens with its verb: that is
    no change of subject, and never keeps a paraphrase from a merge."""
    assert not relate(one, other).blocks_merge and not relate(other, one).blocks_merge


def test_the_same_names_in_other_places_are_roles_swapped_even_with_a_word_changed() -> None:
    judged = relate(
        "Joselito Jonson has published a book featuring portraits of Alek Stenford and Antario "
        "Florez.",
        "Alek Stenford published a book featuring portraits of Joselito Jonson and Antario Florez.",
    )
    assert (judged.kind, judged.confident) == (NEWER, True) and judged.blocks_merge
    # Names that only trade places around "and" are one group: no swap of roles.
    assert relate("Kara and Lori plan a podcast.", "Lori and Kara plan a podcast.").kind == SAME


def test_two_people_described_alike_are_two_facts_whatever_the_frame_names() -> None:
    for one, other in [
        ("Lina Bowden is an accomplished violinist.", "Lina Turrell is an accomplished violinist."),
        (
            "Stefan Waltris is a marine biologist who has conducted research in the Pacific Ocean.",
            "Alen Jansen is a marine biologist who has conducted research in the Pacific Ocean.",
        ),
    ]:
        judged = relate(one, other)
        assert (judged.kind, judged.confident) == (DIFFERENT, True), judged


def test_the_words_of_a_directive_are_no_part_of_the_fact() -> None:
    judged = relate("Please remember that I like bananas.", "Please remember that I like grapes.")
    assert judged.kind == DIFFERENT and not judged.confident  # both may hold
    judged = relate(
        "Please remember that I like bananas.", "Actually, sorry, I meant I like kiwis."
    )
    assert judged.kind == NEWER
