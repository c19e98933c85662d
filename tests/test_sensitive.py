"""The sensitive scan on a labelled set: credentials and identifiers found, ordinary text left."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any

import pytest

from memory_console.sensitive import (
    ASCII_FOLDS,
    HEALTH_PATTERN,
    MASK,
    credential_kinds,
    find_sensitive,
    folded,
    has_health_data,
    mask,
    mask_record,
    may_hold_credential,
    strings_of,
)
from memory_console.store import MemoryFilter, Store
from memory_console.store.wire import export_record, json_line
from tests.helpers import (
    CLEAN_TEXTS,
    HEALTH_TEXTS,
    NOT_HEALTH_TEXTS,
    PROSE_CLEAN_TEXTS,
    PROSE_SECRET_TEXTS,
    SECRET_TEXTS,
    invoke,
    reference_find,
    reference_mask,
    reference_mask_record,
)

LABELLED = [
    *SECRET_TEXTS,
    *CLEAN_TEXTS,
    *PROSE_SECRET_TEXTS,
    *PROSE_CLEAN_TEXTS,
    *HEALTH_TEXTS,
    *NOT_HEALTH_TEXTS,
]
# Texts that only ignoring case, Unicode case folding or odd spacing bring to a pattern.
AWKWARD = [
    "paſſword = hunter2",
    "PAſSWORD is Xk9#pq!",
    "api \u212aey: abcdefgh12345678",
    "Password\tis Xk9#pq!",
    "pass\nphrase of my wallet: purple monkey dishwasher",
    "é the PIN for my card is 4821",
    "café card 4111 1111 1111 1111 and SSN 123-45-6789",
]


def test_labelled_set_precision_and_recall() -> None:
    assert len(SECRET_TEXTS) >= 40 and len(CLEAN_TEXTS) >= 40
    found_positive = [text for text in SECRET_TEXTS if find_sensitive(text, health=False)]
    found_negative = [text for text in CLEAN_TEXTS if find_sensitive(text, health=False)]
    true_positive, false_positive = len(found_positive), len(found_negative)
    precision = true_positive / max(1, true_positive + false_positive)
    recall = true_positive / len(SECRET_TEXTS)
    print(
        f"\nsensitive scan: precision {precision:.3f}, recall {recall:.3f} "
        f"({len(SECRET_TEXTS)} positive, {len(CLEAN_TEXTS)} negative examples)"
    )
    missed = sorted(set(SECRET_TEXTS) - set(found_positive))
    assert recall >= 0.95, f"missed: {missed}"
    assert precision >= 0.95, f"false alarms: {found_negative}"


def test_health_labelled_set_precision_and_recall() -> None:
    found_positive = [text for text in HEALTH_TEXTS if has_health_data(text)]
    found_negative = [text for text in NOT_HEALTH_TEXTS if has_health_data(text)]
    true_positive, false_positive = len(found_positive), len(found_negative)
    precision = true_positive / max(1, true_positive + false_positive)
    recall = true_positive / len(HEALTH_TEXTS)
    print(
        f"\nhealth screen: precision {precision:.3f}, recall {recall:.3f} "
        f"({len(HEALTH_TEXTS)} positive, {len(NOT_HEALTH_TEXTS)} negative examples)"
    )
    missed = sorted(set(HEALTH_TEXTS) - set(found_positive))
    assert recall >= 0.95, f"missed: {missed}"
    assert precision >= 0.95, f"false alarms: {found_negative}"


@pytest.mark.parametrize(
    ("text", "masked"),
    [
        ("My password = hunter2 for the router", f"My password = {MASK} for the router"),
        ("SSN 123-45-6789", f"SSN {MASK}"),
        ("Card 4111 1111 1111 1111.", f"Card {MASK}."),
        ("Prefers dark mode.", "Prefers dark mode."),
        (
            "-----BEGIN OPENSSH PRIVATE KEY----- b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n"
            "AAAAAAAAAAEAAAAzAAAAC3NzaC1lZDI1NTE5 (cut short)",
            f"{MASK} (cut short)",
        ),
        (f"password = {MASK}", f"password = {MASK}"),
    ],
)
def test_mask_hides_only_the_secret(text: str, masked: str) -> None:
    assert mask(text) == masked


def test_health_terms_are_found_only_when_asked() -> None:
    text = "Was diagnosed with asthma and takes medication daily."
    kinds = {f.kind for f in find_sensitive(text)}
    assert kinds == {"health data"}
    assert find_sensitive(text, health=False) == []
    assert mask(text) == text  # health data is flagged, not masked


def test_card_numbers_need_a_valid_checksum() -> None:
    assert find_sensitive("4111 1111 1111 1111", health=False)
    assert not find_sensitive("1234 5678 1234 5678", health=False)


def test_secrets_in_prose_precision_and_recall() -> None:
    assert len(PROSE_SECRET_TEXTS) >= 30 and len(PROSE_CLEAN_TEXTS) >= 30
    found = [text for text in PROSE_SECRET_TEXTS if find_sensitive(text, health=False)]
    false_alarms = [text for text in PROSE_CLEAN_TEXTS if find_sensitive(text, health=False)]
    precision = len(found) / max(1, len(found) + len(false_alarms))
    print(
        f"\nsecrets in prose: precision {precision:.3f}, "
        f"recall {len(found) / len(PROSE_SECRET_TEXTS):.3f} "
        f"({len(PROSE_SECRET_TEXTS)} positive, {len(PROSE_CLEAN_TEXTS)} look-alike examples)"
    )
    assert sorted(set(PROSE_SECRET_TEXTS) - set(found)) == []
    assert false_alarms == []


@pytest.mark.parametrize(
    ("text", "masked", "kind"),
    [
        (
            "My password for the office Wi-Fi is Tr0ub4dor&3",
            f"My password for the office Wi-Fi is {MASK}",
            "password",
        ),
        (
            "The password I use for the bank is Xk9#pq!",
            f"The password I use for the bank is {MASK}",
            "password",
        ),
        (
            "passphrase of my wallet: purple monkey dishwasher seven",
            f"passphrase of my wallet: {MASK}",
            "password",
        ),
        ("the PIN for my card is 4821", f"the PIN for my card is {MASK}", "PIN"),
        ("My PIN is still 4407, he said.", f"My PIN is still {MASK}, he said.", "PIN"),
        ("the code to the gate is 1234.", f"the code to the gate is {MASK}.", "passcode"),
        (
            "The access code for the lab is X7F2-9K",
            f"The access code for the lab is {MASK}",
            "passcode",
        ),
    ],
)
def test_mask_hides_the_value_of_a_secret_in_prose(text: str, masked: str, kind: str) -> None:
    assert [f.kind for f in find_sensitive(text, health=False)] == [kind]
    assert mask(text) == masked
    assert find_sensitive(mask(text), health=False) == []


def variants(text: str) -> list[str]:
    """The text as written, in other cases, with line breaks and with a non-ASCII start."""
    return [
        text,
        text.upper(),
        text.lower(),
        text.swapcase(),
        text.replace(" ", "\n"),
        "é " + text,
        text.replace("s", "ſ"),
    ]


@pytest.mark.parametrize("text", [*LABELLED, *AWKWARD])
def test_the_hint_changes_no_finding_and_no_mask(text: str) -> None:
    """find_sensitive skips the patterns when CREDENTIAL_HINT finds nothing: the findings and
    the masks are those of every pattern run on every text."""
    for variant in variants(text):
        assert find_sensitive(variant, health=False) == reference_find(variant), variant
        assert mask(variant) == reference_mask(variant), variant
        if reference_find(variant):
            assert may_hold_credential(variant)


def test_mask_record_equals_masking_every_field_pass() -> None:
    """Odd values too: a tuple becomes a list, a key that is not a string is masked as one."""
    record = {
        "title": "The PIN for my card is 4821",
        "content": "My password for the office Wi-Fi is Tr0ub4dor&3; card 4111 1111 1111 1111",
        "keywords": ["Tr0ub4dor&3", "wifi", 4821],
        "metadata": {7: "api_key=sk-live_abcdefghijklmnop1234", "tags": ("a", "b")},
        "history": [{"before": {"content": "nothing here"}, "after": {"n": 1.5}}],
    }
    assert mask_record(record) == reference_mask_record(record)
    clean = {"title": "Likes tea", "content": "Likes tea", "keywords": ["tea"], "metadata": {}}
    masked = mask_record(clean)
    assert masked == reference_mask_record(clean) and masked is not clean


def test_export_with_history_equals_masking_as_before(demo_file: Path, tmp_path: Path) -> None:
    """The demo store (secrets among its memories) exported with --history: every line is the
    record masked field by field with every pattern, as exports were masked before."""
    out = tmp_path / "export.jsonl"
    result = invoke(["export", "--all", "--history", "--out", str(out), "--db", str(demo_file)])
    assert result.code == 0, result.err
    with Store(demo_file, read_only=True) as store:
        expected = [
            json_line(reference_mask_record(export_record(record, store.history(record.id))))
            for record in store.iter_memories(MemoryFilter())
        ]
    lines = out.read_text(encoding="utf-8").splitlines(keepends=True)
    assert lines == expected
    assert any(MASK in json.loads(line)["content"] for line in lines)


def test_folded_turns_every_character_taken_for_an_ascii_letter_into_it() -> None:
    """The literal search lower-cases text and folds ASCII_FOLDS: a character beyond ASCII
    that a pattern ignoring case takes for an ASCII letter, and that folded() left as it
    is, would let "paſſword" through."""
    letter = re.compile("(?i)[a-z]")
    taken = {
        chr(code): next(
            a for a in "abcdefghijklmnopqrstuvwxyz" if re.fullmatch(f"(?i){a}", chr(code))
        )
        for code in range(0x80, 0x110000)
        if letter.fullmatch(chr(code))
    }
    assert len(taken) == 4
    assert {char: folded(char) for char in taken} == taken
    assert set(dict(ASCII_FOLDS)) == set(taken)


def reference_kinds(value: Any) -> list[str]:
    """credential_kinds as it was: every pattern run on every string of the value, one by one."""
    kinds: dict[str, None] = {}
    for text in strings_of(value):
        kinds.update((f.kind, None) for f in reference_find(text))
    return list(kinds)


def screen_corpus(demo_file: Path) -> list[list[str]]:
    """Groups of texts as an import screens them (a memory's strings together): the demo
    store's memories and their histories, every line of the JSONL files in tests/data, the
    labelled and awkward texts in all their variants, and generated ones that put a secret,
    a health term or digits among clean words, beside non-ASCII text, in every position."""
    groups: list[list[str]] = []
    with Store(demo_file, read_only=True) as store:
        for record in store.iter_memories(MemoryFilter()):
            groups.append(list(strings_of(export_record(record, store.history(record.id)))))
    data = Path(__file__).parent / "data"
    for path in sorted(data.rglob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                groups.append(list(strings_of(json.loads(line))))
    singles = [variant for text in [*LABELLED, *AWKWARD] for variant in variants(text)]
    groups += [[text] for text in singles]
    rng = random.Random(7)
    clean = [*CLEAN_TEXTS, *PROSE_CLEAN_TEXTS, *NOT_HEALTH_TEXTS, "café au lait…", "s-960779"]
    odd = ["١٢٣٤ ٥٦٧٨ ١٢٣٤ ٥٦٧٨", "4111 1111 1111 1111", "pass phrase: a b c", "Ｐｉｎ 1234"]
    for _ in range(3000):
        group = rng.sample(clean, rng.randint(1, 5))
        inserted = rng.choice([*singles, *odd])
        position = rng.randint(0, len(group))
        if rng.random() < 0.5:
            group.insert(position, inserted)
        else:  # inside a clean text, where a word ends or in the middle of one
            text = group[position % len(group)]
            cut = rng.randint(0, len(text))
            group[position % len(group)] = text[:cut] + rng.choice(("", " ", "é")) + inserted
        groups.append(group)
    return groups


def test_the_import_screen_gives_the_verdicts_of_every_pattern_on_every_text(
    demo_file: Path,
) -> None:
    """credential_kinds and has_health_data search a memory's strings at once for literals and
    run the patterns only where one is found: the verdicts (kinds, in order) are those of every
    pattern run on every string, on a corpus where both verdicts occur."""
    groups = screen_corpus(demo_file)
    with_credentials = with_health = 0
    for group in groups:
        expected = reference_kinds(group)
        assert credential_kinds(group) == expected, group
        health = any(HEALTH_PATTERN.search(text) for text in group)
        assert has_health_data(*group) == health, group
        with_credentials += bool(expected)
        with_health += health
    assert len(groups) > 3000 and 500 < with_credentials < len(groups) - 500
    assert 100 < with_health < len(groups) - 500
