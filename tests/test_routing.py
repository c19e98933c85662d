"""The routing document as its design writes it: UPDATE and DELETE without an id, entry types."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memory_console.agent.rules.describe import extract_keywords, make_title
from memory_console.agent.rules.remember import UPDATE_THRESHOLD
from memory_console.api import MemoryAPI
from memory_console.embed.embedder import Embedder, embedding_text
from tests.helpers import NOW

PAIRS = Path(__file__).resolve().parent / "data" / "update_pairs.jsonl"


def action(bank: str, kind: str, content: str | None = None, **more: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {"target_memory_bank": bank, "action_type": kind, **more}
    if content is not None:
        entry["content"] = content
    return entry


def stored(
    api: MemoryAPI, bank: str, *contents: str, session: str | None = None, **more: Any
) -> list[int]:
    """Memories written as an agent writes them (keywords extracted), in one bank."""
    result = api.apply_actions(
        {"memory_actions": [action(bank, "STORE", content, **more) for content in contents]},
        session_id=session,
        now=NOW,
    )
    assert result.ok and all(o.action == "stored" for o in result.outcomes), result
    return [o.id or 0 for o in result.outcomes]


def apply(api: MemoryAPI, *actions: dict[str, Any], **options: Any) -> Any:
    result = api.apply_actions({"memory_actions": list(actions)}, now=NOW, **options)
    assert result.ok, result.reason
    return result


def test_the_update_threshold_separates_the_labelled_pairs(embedder: Embedder) -> None:
    pairs = [json.loads(line) for line in PAIRS.read_text(encoding="utf-8").splitlines()]
    assert len(pairs) >= 30 and {p["same_slot"] for p in pairs} == {True, False}

    def vector(text: str) -> np.ndarray:
        return embedder.embed_query(embedding_text(make_title(text), text, extract_keywords(text)))

    cosine = np.array([float(vector(p["existing"]) @ vector(p["new"])) for p in pairs])
    same = np.array([p["same_slot"] for p in pairs])

    def accuracy(threshold: float) -> float:
        return float(((cosine >= threshold) == same).mean())

    chosen = cosine >= UPDATE_THRESHOLD
    precision = (chosen & same).sum() / chosen.sum()
    recall = (chosen & same).sum() / same.sum()
    assert precision == 1.0 and recall >= 0.95
    assert accuracy(UPDATE_THRESHOLD) == max(accuracy(t) for t in np.arange(0.3, 0.95, 0.01))
    austin = pairs[0]
    assert "Austin" in austin["existing"] and "Denver" in austin["new"]
    assert UPDATE_THRESHOLD < cosine[0] < 0.92  # consolidation's threshold would miss it


def test_update_without_an_id_changes_the_most_similar_memory_of_the_bank(
    api: MemoryAPI,
) -> None:
    austin, google = stored(api, "LTM", "The user lives in Austin.", "The user works at Google.")
    api.apply_actions(
        {"memory_actions": [action("LTM", "STORE", "The user lives in Austin.")]}, "bob", now=NOW
    )
    result = apply(api, action("LTM", "UPDATE", "The user lives in Denver."))
    (outcome,) = result.outcomes
    assert (outcome.action, outcome.id) == ("updated", austin)
    # Between the threshold and consolidation's 0.92: found as the same slot, not a duplicate.
    found = re.search(r"cosine (\d\.\d+)", outcome.reason)
    assert found is not None and UPDATE_THRESHOLD <= float(found.group(1)) < 0.92
    assert api.store.require(austin).content == "The user lives in Denver."
    assert api.store.require(google).content == "The user works at Google."
    assert [e.kind for e in api.store.history(austin)] == ["created", "edited"]


def test_an_explicit_memory_id_wins(api: MemoryAPI) -> None:
    austin, google = stored(api, "LTM", "The user lives in Austin.", "The user works at Google.")
    result = apply(api, action("LTM", "UPDATE", "The user lives in Denver.", memory_id=google))
    assert [(o.action, o.id) for o in result.outcomes] == [("updated", google)]
    assert api.store.require(austin).content == "The user lives in Austin."


def test_without_a_match_update_stores_and_delete_changes_nothing(api: MemoryAPI) -> None:
    (austin,) = stored(api, "EPISODIC", "The user lives in Austin.")
    stored(api, "LTM", "Has a dog named Biscuit.")
    result = apply(
        api,
        action("LTM", "UPDATE", "The user lives in Denver."),  # Austin is in another bank
        action("LTM", "DELETE", "The user drives a Toyota Corolla."),
    )
    added, deleted = result.outcomes
    assert added.action == "stored" and added.id not in (None, austin)
    assert added.reason.startswith(
        f"no memory of the LTM bank at cosine >= {UPDATE_THRESHOLD:g}; the closest, "
    )
    assert "stored as a new memory" in added.reason
    assert (deleted.action, deleted.id) == ("skipped", None)
    assert deleted.reason.endswith("nothing deleted")
    assert api.store.count() == 3 and api.store.require(austin).content.endswith("Austin.")


def test_a_protected_memory_is_never_changed_without_its_id(api: MemoryAPI) -> None:
    (allergy,) = stored(api, "LTM", "The user is allergic to peanuts.", user_requested=True)
    api.store.protect([allergy], now=NOW)
    result = apply(
        api,
        action("LTM", "UPDATE", "The user is allergic to tree nuts."),
        action("LTM", "DELETE", "The user is allergic to peanuts."),
    )
    assert [(o.action, o.id) for o in result.outcomes] == [
        ("skipped", allergy),
        ("skipped", allergy),
    ]
    updated, deleted = result.outcomes
    assert f"memory {allergy} (cosine" in updated.reason and "is protected: not updated" in (
        updated.reason
    )
    assert f"memory {allergy} (same text) is protected: not deleted" in deleted.reason
    record = api.store.require(allergy)
    assert record.status == "active" and record.content.endswith("peanuts.")
    assert [e.kind for e in api.store.history(allergy)] == ["created", "protected"]


def test_session_banks_resolve_within_their_session(api: MemoryAPI) -> None:
    (mine,) = stored(api, "WORKING", "Currently editing the release checklist.", session="s1")
    (theirs,) = stored(api, "WORKING", "Currently editing the release checklist.", session="s2")
    result = apply(
        api, action("WORKING", "UPDATE", "Currently editing the onboarding guide."), session_id="s2"
    )
    assert [(o.action, o.id) for o in result.outcomes] == [("updated", theirs)]
    assert api.store.require(mine).content == "Currently editing the release checklist."
    refused = api.apply_actions(
        {"memory_actions": [action("WORKING", "DELETE", "Currently editing")]}, now=NOW
    )
    assert not refused.ok and "belongs to a session; pass the session_id" in refused.reason


def test_without_the_embedder_only_the_same_text_finds_a_memory(
    db_path: Path, tmp_path: Path
) -> None:
    with MemoryAPI(db_path, owner="alice", manifest=str(tmp_path / "missing.json")) as api:
        austin = api.store.add({"content": "The user lives in Austin.", "owner": "alice"}, now=NOW)
        refused = api.apply_actions(
            {"memory_actions": [action("LTM", "UPDATE", "The user lives in Denver.")]}, now=NOW
        )
        assert not refused.ok and refused.reason.startswith(
            "rejected: memory_actions[0]: no memory of the LTM bank has this text, and finding "
            "one by meaning needs the embedder ("
        )
        assert "name the memory with memory_id" in refused.reason
        result = apply(api, action("LTM", "DELETE", "the user lives in austin"))
        assert [(o.action, o.id) for o in result.outcomes] == [("deleted", austin)]


@pytest.mark.parametrize(
    ("entry_type", "memory_type", "topic"),
    [
        ("FACT", "semantic", "user_info"),
        ("ENTITY_UPDATE", "semantic", "user_info"),
        ("Entity update", "semantic", "user_info"),
        ("PREFERENCE", "semantic", "preferences"),
        ("PROCEDURE", "procedural", "user_info"),
        ("EVENT", "episodic", "user_info"),
        (None, "episodic", "user_info"),
    ],
)
def test_entry_types_map_to_memory_types(
    api: MemoryAPI, entry_type: str | None, memory_type: str, topic: str
) -> None:
    extra = {} if entry_type is None else {"entry_type": entry_type}
    result = apply(api, action("LTM", "STORE", "My name is Ali and I work at Acme", **extra))
    record = api.store.require(result.outcomes[0].id)
    assert (record.memory_type, record.topic) == (memory_type, topic)


def test_an_update_sets_the_type_its_entry_type_names(api: MemoryAPI) -> None:
    (ident,) = stored(api, "LTM", "To deploy, run make release.")
    assert api.store.require(ident).memory_type == "episodic"
    result = apply(
        api,
        action(
            "LTM", "UPDATE", "To deploy, run the tests, then make release.", entry_type="PROCEDURE"
        ),
    )
    assert [(o.action, o.id) for o in result.outcomes] == [("updated", ident)]
    assert api.store.require(ident).memory_type == "procedural"
