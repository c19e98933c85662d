"""Secrets: import and the agent refuse them, exports and every output mask them unless
revealed, the sensitive pass forgets them, and masked text never matches again."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memory_console.api import MemoryAPI
from memory_console.sensitive import MASK, find_sensitive, mask, mask_record
from memory_console.store import MemoryFilter, Store
from tests.helpers import (
    CLEAN_TEXTS,
    ISO_NOW,
    SECRET_TEXTS,
    Outcome,
    console,
    count,
    invoke,
    one_error_line,
    open_on,
    settle,
)

NOW_TS = 1_795_305_600.0  # 2026-11-22, days after the import at ISO_NOW
SECRET = "hunter22x"
CLEAN = [
    {
        "content": "Prefers dark mode in the editor.",
        "owner": "alice",
        "keywords": ["editor"],
        "created_at": "2026-01-01T00:00:00Z",
        "session": "s-1",
    },
    {
        "content": "Weekly sync with Bob on Tuesdays.",
        "memory_type": "episodic",
        "created_at": "2026-03-01T00:00:00Z",
        "retrieval_count": 3,
        "confidence": 0.8,
    },
]
WITH_SECRET = {
    "content": f"The router password = {SECRET} for guests",
    "owner": "bob",
    "keywords": ["router", SECRET],
    "created_at": "2026-02-01T00:00:00Z",
    "original_message": f"remember the router password = {SECRET}",
}


def write_jsonl(path: Path, lines: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def run(*argv: str) -> Outcome:
    return invoke(list(argv))


@pytest.fixture
def secret_store(tmp_path: Path) -> Path:
    """A store with two plain memories and one holding a password (imported on purpose)."""
    path = tmp_path / "store.db"
    source = write_jsonl(tmp_path / "in.jsonl", [*CLEAN, WITH_SECRET])
    result = run("import", str(source), "--db", str(path), "--now", ISO_NOW, "--allow-secrets")
    assert result.code == 0, result.err
    return path


# -- import ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("wifi password: correct-horse", "a password"),
        ("Her API key is sk-live-1234567890abcdefghij", "an api key"),
        ("-----BEGIN OPENSSH PRIVATE KEY----- b3BlbnNzaC1rZXktdjEAAAAA", "a private key"),
        ("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGx2example me@laptop", "an ssh key"),
        ("Visa 4012888888881881 on file", "a card number"),
        ("SSN 123-45-6789", "a US SSN"),
        ("Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0", "a bearer token"),
    ],
)
def test_import_refuses_a_credential_naming_file_and_line(
    tmp_path: Path, text: str, kind: str
) -> None:
    store = tmp_path / "store.db"
    source = write_jsonl(tmp_path / "in.jsonl", [*CLEAN, {"content": text}, CLEAN[0]])
    line = one_error_line(run("import", str(source), "--db", str(store)))
    assert line == (
        f"memory-console: error: {source}:3: holds {kind} (import with --allow-secrets to keep it)"
    )
    assert not store.exists(), "a failed import leaves no store behind"
    assert run("import", str(source), "--db", str(store), "--allow-secrets").code == 0
    assert count(store) == 4


@pytest.mark.parametrize(
    "line",
    [
        {"content": "Likes tea", "title": "password = hunter22x"},
        {"content": "Likes tea", "keywords": ["api_key = a8f5f167f44f4964e6c9"]},
        {"content": "Likes tea", "metadata": {"note": "pwd: Tr0ub4dor&3"}},
        {"content": "Likes tea", "original": {"deep": ["SSN 078-05-1120"]}},
        {
            "content": "Likes tea",
            "history": [
                {
                    "at": "2026-01-01T00:00:00Z",
                    "kind": "edited",
                    "actor": "cli",
                    "before": {"content": "card 4111 1111 1111 1111"},
                    "after": {"content": "x"},
                }
            ],
        },
    ],
    ids=["title", "keywords", "metadata", "unknown-field", "history"],
)
def test_import_finds_a_credential_anywhere_in_a_line(tmp_path: Path, line: dict[str, Any]) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", [line])
    error = one_error_line(run("import", str(source), "--db", str(tmp_path / "store.db")))
    assert error.startswith(f"memory-console: error: {source}:1: holds ")


def test_a_peer_format_line_with_a_credential_is_refused(tmp_path: Path) -> None:
    source = tmp_path / "mem0.jsonl"
    source.write_text(
        '{"id": "m-1", "memory": "Likes jazz", "user_id": "ann"}\n'
        '{"id": "m-2", "memory": "Door code password: 4471-open", "user_id": "ann"}\n'
    )
    store = tmp_path / "store.db"
    line = one_error_line(run("import", str(source), "--db", str(store)))
    assert line.startswith(f"memory-console: error: {source}:2: holds a password")
    assert run("import", str(source), "--db", str(store), "--allow-secrets").code == 0


def test_health_data_is_imported_only_when_the_user_asked(tmp_path: Path) -> None:
    store = tmp_path / "store.db"
    asked = {"content": "Takes insulin before dinner", "metadata": {"user_requested": True}}
    unasked = {"content": "Was diagnosed with asthma last spring"}
    source = write_jsonl(tmp_path / "in.jsonl", [asked, unasked])
    line = one_error_line(run("import", str(source), "--db", str(store)))
    assert line == (
        f"memory-console: error: {source}:2: holds health data and its "
        "metadata.user_requested is not true (import with --allow-health to keep it)"
    )
    write_jsonl(source, [asked, {**unasked, "user_requested": True}])  # unknown -> metadata
    assert run("import", str(source), "--db", str(store), "--json").code == 0
    write_jsonl(source, [unasked])
    assert run("import", str(source), "--db", str(store), "--allow-health").code == 0
    with Store(store, read_only=True) as opened:
        assert opened.count() == 3


# -- export and every output -------------------------------------------------------------------


def test_export_masks_credentials_unless_revealed(secret_store: Path, tmp_path: Path) -> None:
    run("forget", "3", "--reason", f"held password = {SECRET}", "--db", str(secret_store))
    for file_format in ("jsonl", "mem0"):
        masked = tmp_path / f"masked.{file_format}"
        argv = ["export", "--all", "--history", "--format", file_format, "--db", str(secret_store)]
        assert run(*argv, "--out", str(masked)).code == 0
        text = masked.read_text()
        assert SECRET not in text and MASK in text, file_format
        shown = run(*argv)
        assert shown.code == 0 and SECRET not in shown.out
        revealed = tmp_path / f"revealed.{file_format}"
        assert run(*argv, "--reveal", "--out", str(revealed)).code == 0
        assert SECRET in revealed.read_text()
        assert oct(masked.stat().st_mode & 0o777) == "0o600"


def test_a_masked_export_imports_again_and_stays_masked(secret_store: Path, tmp_path: Path) -> None:
    out = tmp_path / "masked.jsonl"
    assert run("export", "--history", "--out", str(out), "--db", str(secret_store)).code == 0
    copy = tmp_path / "copy.db"
    result = run("import", str(out), "--db", str(copy))  # no --allow-secrets needed
    assert result.code == 0, result.err
    with Store(copy, read_only=True) as opened:
        record = opened.require(3)
    assert record.content == f"The router password = {MASK} for guests"
    assert record.keywords == ["router", MASK]
    assert SECRET not in json.dumps(record.metadata)


def test_a_store_without_secrets_round_trips_exactly_through_a_masked_export(
    tmp_path: Path,
) -> None:
    store = tmp_path / "store.db"
    source = write_jsonl(tmp_path / "in.jsonl", CLEAN)
    assert run("import", str(source), "--db", str(store), "--now", ISO_NOW).code == 0
    assert run("protect", "1", "--db", str(store)).code == 0
    first, second = tmp_path / "first.jsonl", tmp_path / "second.jsonl"
    assert run("export", "--all", "--history", "--out", str(first), "--db", str(store)).code == 0
    copy = tmp_path / "copy.db"
    assert run("import", str(first), "--db", str(copy)).code == 0
    assert run("export", "--all", "--history", "--out", str(second), "--db", str(copy)).code == 0
    assert first.read_text() == second.read_text()


def test_list_show_and_search_mask_unless_revealed(secret_store: Path) -> None:
    db = ["--db", str(secret_store)]
    for argv in (
        ["list"],
        ["list", "--json"],
        ["show", "3"],
        ["show", "3", "--json"],
        ["search", "router", "--mode", "keyword"],
        ["search", "router", "--mode", "keyword", "--json"],
    ):
        hidden, revealed = run(*argv, *db), run(*argv, *db, "--reveal")
        assert hidden.code == 0 and revealed.code == 0, argv
        assert SECRET not in hidden.out and MASK in hidden.out, argv
        assert SECRET in revealed.out, argv
    shown = json.loads(run("show", "3", "--json", *db).out)
    assert shown["keywords"] == ["router", MASK]
    assert SECRET not in shown["metadata"]["original_message"]


NAMES = ("Wi-Fi", "PIN", "gate")


def test_secrets_in_prose_are_masked_in_list_and_show(tmp_path: Path) -> None:
    prose = [
        ("My password for the office Wi-Fi is Tr0ub4dor&3", "Tr0ub4dor&3"),
        ("The PIN for my card is 4821.", "4821"),
        ("The code to the gate is 1234.", "1234"),
    ]
    source = write_jsonl(tmp_path / "in.jsonl", [{"content": text} for text, _ in prose])
    db = ["--db", str(tmp_path / "store.db")]
    assert run("import", str(source), *db, "--allow-secrets").code == 0
    for argv in (["list"], ["list", "--json"], ["show", "2"], ["show", "3", "--json"]):
        hidden, revealed = run(*argv, *db), run(*argv, *db, "--reveal")
        # Only the lines naming the secrets: ids and times elsewhere may hold the same digits.
        named = [line for line in hidden.out.splitlines() if any(w in line for w in NAMES)]
        assert named, argv
        for _, value in prose:
            assert not any(value in line for line in named), argv
        assert MASK in hidden.out and any(value in revealed.out for _, value in prose), argv
    shown = json.loads(run("show", "2", "--json", *db).out)
    assert shown["content"] == f"The PIN for my card is {MASK}."


def test_an_edits_history_is_masked_in_show(secret_store: Path) -> None:
    with Store(secret_store, actor="test") as store:
        store.edit(1, {"content": f"Prefers dark mode; admin password: {SECRET}"}, now=NOW_TS)
        store.edit(1, {"content": "Prefers dark mode."}, now=NOW_TS + 60)
    for argv in (["show", "1"], ["show", "1", "--json"]):
        shown = run(*argv, "--db", str(secret_store), "--now", ISO_NOW)
        assert shown.code == 0 and SECRET not in shown.out, argv
    revealed = run("show", "1", "--json", "--reveal", "--db", str(secret_store))
    assert SECRET in revealed.out


def screen_text(app: Any) -> str:
    """What the console shows, as plain text (the SVG screenshot without its markup)."""
    svg = app.export_screenshot()
    return html.unescape(re.sub(r"<[^>]+>", "", svg)).replace("\xa0", " ")


async def test_the_console_masks_until_v_reveals(secret_store: Path) -> None:
    from memory_console.tui.screens.story import StoryScreen

    with Store(secret_store, actor="tui") as store:
        app = console(store)
        async with app.run_test(size=(120, 60)) as pilot:
            await open_on(app, pilot, [3])  # the list and its detail pane
            screen = screen_text(app)
            assert SECRET not in screen and "keywords: router, ••••••" in screen
            await pilot.press("v")
            await settle(pilot)
            assert SECRET in screen_text(app)
            await pilot.press("v")
            await app.push_screen(StoryScreen(3, reveal=False))  # the whole story
            await settle(pilot)
            screen = screen_text(app)
            assert SECRET not in screen and "metadata" in screen
            await pilot.press("v")
            await settle(pilot)
            assert SECRET in screen_text(app)


# -- the sensitive pass -----------------------------------------------------------------------


def test_the_sensitive_pass_plans_then_forgets(secret_store: Path, tmp_path: Path) -> None:
    health = write_jsonl(
        tmp_path / "health.jsonl",
        [
            {"content": "Is allergic to peanuts", "metadata": {"user_requested": True}},
            {"content": "Takes medication for migraines"},
        ],
    )
    assert run("import", str(health), "--db", str(secret_store), "--allow-health").code == 0
    db = ["--db", str(secret_store), "--now", ISO_NOW]
    plan = json.loads(run("maintain", "--passes", "sensitive", "--dry-run", "--json", *db).out)
    reasons = {change["id"]: change["reason"] for change in plan["changes"]}
    assert reasons == {3: "holds a password", 5: "holds health data"}
    with Store(secret_store, read_only=True) as store:
        assert store.count(MemoryFilter(status="active")) == 5
    applied = run("maintain", "--passes", "sensitive", "--apply", "--json", *db)
    assert applied.code == 0 and json.loads(applied.out)["run_id"] >= 1
    with Store(secret_store, read_only=True) as store:
        archived = {r.id for r in store.page(MemoryFilter(status="archived"), limit=10).rows}
    assert archived == {3, 5}


# -- the agent's write path -------------------------------------------------------------------


def test_the_agent_api_refuses_secrets_with_the_reason(tmp_path: Path) -> None:
    with MemoryAPI(tmp_path / "agent.db", owner="ann", semantic=False) as memory:
        refused = memory.remember(f"My bank password is {SECRET}", now=NOW_TS)
        assert (refused.action, refused.reason) == ("refused", "holds a password")
        hidden = memory.remember("Likes tea", metadata={"note": f"pwd: {SECRET}"}, now=NOW_TS)
        assert (hidden.action, hidden.reason) == ("refused", "its metadata holds a password")
        health = memory.remember("Takes insulin twice a day", now=NOW_TS)
        assert health.action == "refused" and "health data" in health.reason
        asked = memory.remember(
            "Takes insulin twice a day", metadata={"user_requested": True}, now=NOW_TS
        )
        assert asked.action == "stored"
        document = {
            "memory_actions": [
                {"target_memory_bank": "LTM", "action_type": "STORE", "content": "Likes jazz"},
                {
                    "target_memory_bank": "LTM",
                    "action_type": "UPDATE",
                    "memory_id": asked.id,
                    "content": "Takes insulin",
                    "reasoning": f"token: Bearer {SECRET}-0123456789",
                },
            ]
        }
        result = memory.apply_actions(json.dumps(document), now=NOW_TS)
        assert not result.ok and "its reasoning holds a bearer token" in result.reason
        assert memory.store.count() == 1, "nothing of a refused document is applied"


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("My password for the office Wi-Fi is Tr0ub4dor&3", "a password"),
        ("Remember that the PIN for my card is 4821", "a PIN"),
        ("The code to the gate is 1234, note that", "a passcode"),
    ],
)
def test_secrets_in_prose_are_refused_by_the_agent_and_by_import(
    tmp_path: Path, text: str, kind: str
) -> None:
    with MemoryAPI(tmp_path / "agent.db", owner="ann", semantic=False) as memory:
        refused = memory.remember(text, now=NOW_TS)
        assert (refused.action, refused.reason) == ("refused", f"holds {kind}")
        scanned = memory.scan_turn(text, now=NOW_TS)
        assert "stored" not in [found.result.action for found in scanned]
        assert memory.store.count() == 0
    source = write_jsonl(tmp_path / "in.jsonl", [{"content": text}])
    line = one_error_line(run("import", str(source), "--db", str(tmp_path / "store.db")))
    assert line == (
        f"memory-console: error: {source}:1: holds {kind} (import with --allow-secrets to keep it)"
    )


# -- masking itself -----------------------------------------------------------------------------

pieces = st.sampled_from(
    SECRET_TEXTS
    + CLEAN_TEXTS
    + [
        "password",
        " is ",
        "=",
        ":",
        " ",
        "\n",
        "bearer ",
        "api key ",
        "4111",
        " 1111",
        "-",
        "123-45-6789",
        MASK,
        "ssh-rsa ",
        "AAAA",
        "sk-",
        "-----BEGIN RSA PRIVATE KEY-----",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(pieces, st.text(max_size=10)), max_size=10))
def test_masked_text_holds_no_credential(parts: list[str]) -> None:
    text = "".join(parts)
    masked = mask(text)
    assert find_sensitive(masked, health=False) == []
    assert mask(masked) == masked
    if not find_sensitive(text, health=False):
        assert masked == text


def test_every_labelled_secret_is_gone_from_a_masked_record() -> None:
    for text in SECRET_TEXTS:
        record = mask_record(
            {
                "content": text,
                "title": text[:50],
                "keywords": text.split(),
                "metadata": {"original": text},
            }
        )
        assert find_sensitive(json.dumps(record, ensure_ascii=False), health=False) == [], text
