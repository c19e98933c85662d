"""The agent-side API with the real embedder: directives, refusals, scanning, recall, actions."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from memory_console.agent.rules.remember import Candidate, score_candidate
from memory_console.api import MemoryAPI
from memory_console.cli import main
from memory_console.store import MemoryFilter, StoreError
from tests.helpers import NOW

DAY = 86400.0
README = Path(__file__).resolve().parent.parent / "README.md"


@pytest.fixture
def api(backend_api: MemoryAPI) -> MemoryAPI:
    """remember, recall, forget and the actions run on SQLite and on PostgreSQL."""
    return backend_api


def only_memory(api: MemoryAPI) -> dict[str, object]:
    (record,) = api.store.page(MemoryFilter()).rows
    return record.as_dict()


@pytest.mark.parametrize(
    ("message", "content", "topic"),
    [
        ("Remember that I prefer dark mode", "I prefer dark mode", "preferences"),
        (
            "Don't forget my meeting with John is at 3pm",
            "My meeting with John is at 3pm",
            "general",
        ),
        ("Note: the API endpoint is /v2/users", "The API endpoint is /v2/users", "projects"),
        ("Keep in mind that my name is Ali", "My name is Ali", "user_info"),
        ("please note that Maria's email is maria@example.com", None, "contacts"),
        ("We decided on Postgres, please remember that.", "We decided on Postgres.", "decisions"),
    ],
)
def test_directives_are_stored_at_full_importance_with_their_topic(
    api: MemoryAPI, message: str, content: str | None, topic: str
) -> None:
    result = api.remember(message, now=NOW)
    assert result.action == "stored" and result.topic == topic
    memory = only_memory(api)
    assert memory["importance"] == 1.0 and memory["confidence"] == 1.0
    assert (memory["source"], memory["topic"], memory["owner"]) == (
        "user_directive",
        topic,
        "alice",
    )
    if content is not None:
        assert memory["content"] == content
    assert memory["metadata"]["user_requested"] is True  # type: ignore[index]
    assert memory["metadata"]["original_message"] == message  # type: ignore[index]
    (created,) = api.store.history(result.id or 0)
    assert (created.kind, created.actor) == ("created", "api")


def test_text_without_directive_is_an_inferred_memory(api: MemoryAPI) -> None:
    result = api.remember("The user seems to enjoy long hikes", now=NOW)
    memory = only_memory(api)
    assert result.action == "stored"
    assert (memory["importance"], memory["source"]) == (0.5, "session_review")
    assert memory["keywords"] == ["user", "seems", "enjoy", "long", "hikes"]
    assert memory["title"] == "The user seems to enjoy long hikes"


@pytest.mark.parametrize(
    ("message", "reason"),
    [
        ("Remember that my password is hunter22", "holds a password"),
        ("Note that the api key is sk-live_abcdefghijklmnop1234", "holds an api key"),
        ("Don't forget my card 4111 1111 1111 1111 expires soon", "holds a card number"),
    ],
)
def test_secrets_in_a_directive_are_refused_with_the_reason(
    api: MemoryAPI, message: str, reason: str
) -> None:
    result = api.remember(message, now=NOW)
    assert (result.action, result.id, result.reason) == ("refused", None, reason)
    assert api.store.count() == 0


def test_health_data_is_kept_only_when_the_user_asked(api: MemoryAPI) -> None:
    text = "Was diagnosed with asthma last year and uses an inhaler"
    refused = api.remember(text, now=NOW)
    assert refused.action == "refused" and "health data" in refused.reason
    assert api.store.count() == 0
    stored = api.remember(text, user_requested=True, now=NOW)
    assert stored.action == "stored"
    assert only_memory(api)["metadata"]["user_requested"] is True  # type: ignore[index]
    # Saying "keep in mind" is the user asking: a peanut allergy (health data) is stored.
    assert api.remember("Keep in mind I have a peanut allergy", now=NOW).action == "stored"


def test_a_repeated_memory_is_reinforced_not_added(api: MemoryAPI) -> None:
    first = api.remember("I prefer dark mode in my code editor", now=NOW)
    same = api.remember("i prefer dark mode in my code editor.", now=NOW + DAY)
    near = api.remember("I prefer a dark mode in my code editor", now=NOW + 2 * DAY)
    other = api.remember("I like a dark theme when coding", now=NOW + 3 * DAY)
    assert [same.action, near.action, other.action] == ["reinforced", "reinforced", "stored"]
    assert same.id == near.id == first.id and same.similarity is None
    assert near.similarity is not None and near.similarity >= 0.92
    record = api.store.require(first.id or 0)
    assert record.retrieval_count == 2 and record.last_accessed_at == NOW + 2 * DAY
    accesses = api.store.accesses(record.id)
    assert accesses[0].query == "I prefer a dark mode in my code editor"
    assert accesses[0].scores == {"reason": "remembered again", "cosine": near.similarity}
    directive = api.remember("Remember that I prefer dark mode in my code editor", now=NOW)
    assert directive.action == "reinforced"
    assert api.store.require(record.id).importance == 1.0  # the directive raised it
    bob = api.remember("I prefer dark mode in my code editor", owner="bob", now=NOW)
    assert bob.action == "stored" and bob.id != first.id  # duplicates are per owner


def test_without_the_embedder_only_exact_repeats_are_duplicates(db_path: Path) -> None:
    with MemoryAPI(db_path, owner="alice", semantic=False) as api:
        api.remember("I prefer dark mode in my code editor", now=NOW)
        assert api.remember("I PREFER dark mode in my code editor", now=NOW).action == "reinforced"
        assert api.remember("I prefer a dark mode in my code editor", now=NOW).action == "stored"
        assert not api.semantic_ready and api.semantic_error is None


def test_scan_turn_scores_with_the_spec_weights(api: MemoryAPI) -> None:
    message = "Hi, my name is Alice and I work at Acme Robotics. Remember that I prefer tea."
    results = {
        r.candidate.kind: r
        for r in api.scan_turn(
            message,
            history=["Alice here, from Lisbon"],
            task="Onboarding checklist for Acme Robotics",
            now=NOW,
        )
    }
    assert {kind: r.candidate.score for kind, r in results.items()} == {
        "explicit": 0.7,  # explicit request 0.4 + personal (a preference) 0.3
        "name": 0.5,  # personal 0.3 + repeated mention ("Alice" in two messages) 0.2
        "employer": 0.4,  # personal 0.3 + task relevance ("acme", "robotics") 0.1
        "preference": 0.3,  # personal only
    }
    assert results["employer"].candidate.reasons == (
        "personal information +0.3",
        "task relevance +0.1",
    )
    assert [results[k].result.action for k in ("explicit", "name", "employer", "preference")] == [
        "stored",
        "stored",
        "skipped",
        "skipped",
    ]
    name = api.store.require(results["name"].result.id or 0)
    assert (name.content, name.topic, name.importance) == (
        "The user's name is Alice.",
        "user_info",
        0.5,
    )
    assert (name.source, name.confidence) == ("background_scan", 0.9)
    assert api.store.count() == 2


def test_score_candidate_adds_every_weight_and_caps_at_one() -> None:
    candidate = Candidate("explicit", "tea with Alice", "Tea with Alice.", "contacts", True)
    scored = score_candidate(candidate, ["tea with alice?", "Tea with Alice"], "tea with alice")
    assert scored.score == 1.0 and len(scored.reasons) == 4
    plain = Candidate("phone", "+351 912", "x", "general", False)
    assert score_candidate(plain, ["+351 912"]).score == 0.0


def test_recall_ranks_reinforces_per_type_and_logs_each_access(api: MemoryAPI) -> None:
    facts = [
        ("Uses a standing desk at the office", "semantic", 0.8),
        ("To deploy: run the tests first, then make release", "procedural", 0.8),
        ("Moved the standing desk to the new office on Monday", "episodic", 0.8),
        ("Loves a sit-stand desk setup", "semantic", 0.98),
    ]
    ids = api.store.add_many(
        [
            {"content": c, "memory_type": t, "confidence": k, "owner": "alice", "importance": 0.8}
            for c, t, k in facts
        ],
        now=NOW - 10 * DAY,
    )
    api.store.add({"content": "Uses a standing desk at home", "owner": "bob"}, now=NOW)
    query = "what kind of desk does she use"
    recalled = api.recall(query, k=3, now=NOW)
    assert len(recalled) == 3 and all(r.record.owner == "alice" for r in recalled)
    effective = [r.scores["effective"] for r in recalled]
    assert effective == sorted(effective, reverse=True)
    expected = {ids[0]: 0.85, ids[1]: 0.84, ids[2]: 0.83, ids[3]: 0.99}  # boosts and cap
    for hit in recalled:
        assert hit.record.confidence == pytest.approx(expected[hit.id])
        assert (hit.record.retrieval_count, hit.record.last_accessed_at) == (1, NOW)
        (access,) = api.store.accesses(hit.id)
        assert (access.query, access.actor) == (query, "api")
        assert access.scores == hit.scores and access.scores["mode"] == "hybrid"
        assert {"cosine", "fused", "effective", "keyword_rank"} <= set(access.scores)
    untouched = set(ids) - {r.id for r in recalled}
    assert all(api.store.require(i).retrieval_count == 0 for i in untouched)


def test_recall_falls_back_to_keywords_when_the_model_cannot_load(
    db_path: Path, tmp_path: Path
) -> None:
    with MemoryAPI(db_path, owner="alice", manifest=str(tmp_path / "missing.json")) as api:
        api.store.add_many(
            [{"content": "Uses a standing desk", "owner": "alice"}, {"content": "Likes tea"}],
            now=NOW,
        )
        (hit,) = api.recall("standing desk", now=NOW)
        assert api.semantic_error is not None and "manifest" in api.semantic_error
        assert hit.content == "Uses a standing desk" and hit.scores["mode"] == "keyword"
        assert hit.scores["bm25"] is not None and hit.scores["effective"] > 0
        assert api.store.require(hit.id).retrieval_count == 1


def test_show_accesses_tells_when_which_query_and_which_scores(
    api: MemoryAPI, db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    db_path = db
    ident = api.store.add({"content": "Prefers aisle seats", "owner": "alice"}, now=NOW)
    api.recall("which seat on the plane", now=NOW + DAY)
    api.store.close()
    assert main(["show", str(ident), "--accesses", "--json", "--db", str(db_path)]) == 0
    (access,) = json.loads(capsys.readouterr().out)["accesses"]
    assert access["at"] == "2026-11-19T11:06:40Z" and access["actor"] == "api"
    assert access["query"] == "which seat on the plane" and access["scores"]["cosine"] > 0.2
    assert main(["show", str(ident), "--accesses", "--db", str(db_path)]) == 0
    text = capsys.readouterr().out
    assert "accesses" in text and "which seat on the plane" in text and "cosine" in text


SPEC_DOCUMENT = {
    "analysis": "The user stated a lasting preference and finished a debugging session.",
    "salience_score": 0.8,
    "memory_actions": [
        {
            "target_memory_bank": "LTM",
            "action_type": "STORE",
            "content": "Prefers concise answers with a code example.",
            "entry_type": "preference",
            "confidence_score": 0.9,
            "reasoning": "Stated explicitly; holds across sessions.",
        },
        {
            "target_memory_bank": "EPISODIC",
            "action_type": "STORE",
            "content": "Debugged the flaky CI job with the user on Tuesday.",
            "entry_type": "event",
            "confidence_score": 0.7,
            "reasoning": "A finished episode worth recalling.",
        },
        {
            "target_memory_bank": "WORKING",
            "action_type": "STORE",
            "content": "Currently editing the release checklist.",
            "entry_type": "context",
            "confidence_score": 0.6,
            "reasoning": "Only relevant to this session.",
        },
        {
            "target_memory_bank": "STM",
            "action_type": "STORE",
            "content": "Waiting for the user's reply about the staging deploy.",
            "entry_type": "procedural",
            "confidence_score": 0.5,
            "reasoning": "Open question for the next turns.",
        },
    ],
}


def test_apply_actions_accepts_the_spec_document(api: MemoryAPI) -> None:
    result = api.apply_actions(json.dumps(SPEC_DOCUMENT), session_id="s1", now=NOW)
    assert result.ok and result.salience_score == 0.8
    assert [o.action for o in result.outcomes] == ["stored"] * 4
    records = api.store.get_many([o.id or 0 for o in result.outcomes])
    rows = [records[o.id or 0] for o in result.outcomes]
    assert [r.tier for r in rows] == ["long_term", "episodic", "working", "short_term"]
    # entry_type preference -> semantic, procedural -> procedural, others (event, context)
    # are events: episodic.
    assert [r.memory_type for r in rows] == ["semantic", "episodic", "episodic", "procedural"]
    assert rows[0].topic == "preferences"
    assert [r.metadata.get("session_id") for r in rows] == [None, None, "s1", "s1"]
    assert [r.confidence for r in rows] == [0.9, 0.7, 0.6, 0.5]
    assert {r.importance for r in rows} == {0.8} and {r.source for r in rows} == {"session_review"}
    assert rows[0].metadata["reasoning"] == "Stated explicitly; holds across sessions."
    assert rows[1].metadata == {
        "memory_bank": "EPISODIC",
        "entry_type": "event",
        "reasoning": "A finished episode worth recalling.",
    }
    follow_up = {
        "memory_actions": [
            {
                "target_memory_bank": "LTM",
                "action_type": "UPDATE",
                "memory_id": rows[0].id,
                "content": "Prefers concise answers, with a code example and a test.",
                "confidence_score": 0.95,
            },
            {
                "target_memory_bank": "WORKING",
                "action_type": "DELETE",
                "content": "currently editing the release checklist",
                "reasoning": "The session ended.",
            },
            {"target_memory_bank": "LTM", "action_type": "STORE", "content": "Likes Rust."},
            {"target_memory_bank": "LTM", "action_type": "STORE", "content": "likes rust"},
        ]
    }
    second = api.apply_actions(follow_up, session_id="s1", now=NOW + DAY)
    assert second.ok
    assert [o.action for o in second.outcomes] == ["updated", "deleted", "stored", "skipped"]
    updated = api.store.require(rows[0].id)
    assert updated.content.endswith("and a test.") and updated.confidence == 0.95
    assert updated.keywords[:2] == ["prefers", "concise"]
    deleted = api.store.require(rows[2].id)
    assert (
        deleted.status == "archived" and deleted.metadata["forget_reason"] == "The session ended."
    )
    kinds = [e.kind for e in api.store.history(rows[0].id)]
    assert kinds == ["created", "edited"]


@pytest.mark.parametrize(
    ("document", "reason"),
    [
        ("{not json", "invalid JSON: Expecting property name enclosed in double quotes"),
        ("[]", "the document must be a JSON object"),
        ('{"memory_actions": {}}', "memory_actions must be a list"),
        ('{"salience_score": 2, "memory_actions": []}', "salience_score must be between 0 and 1"),
        (
            '{"memory_actions": [{"target_memory_bank": "XTM", "action_type": "STORE"}]}',
            "memory_actions[0].target_memory_bank must be one of WORKING, STM, LTM, EPISODIC",
        ),
        (
            '{"memory_actions": [{"target_memory_bank": "LTM", "action_type": "MOVE"}]}',
            "memory_actions[0].action_type must be one of STORE, UPDATE, DELETE",
        ),
        (
            '{"memory_actions": [{"target_memory_bank": "LTM", "action_type": "STORE"}]}',
            "memory_actions[0]: STORE needs a non-empty content",
        ),
        (
            '{"memory_actions": [{"target_memory_bank": "WORKING", "action_type": "STORE",'
            ' "content": "x"}]}',
            "memory_actions[0]: a WORKING memory belongs to a session; pass the session_id",
        ),
        (
            '{"memory_actions": [{"target_memory_bank": "LTM", "action_type": "DELETE",'
            ' "memory_id": 999}]}',
            "memory_actions[0]: memory 999: no memory of this owner has this id",
        ),
        (
            '{"memory_actions": [{"target_memory_bank": "LTM", "action_type": "STORE",'
            ' "content": "x", "confidence_score": 1.5}]}',
            "memory_actions[0].confidence_score must be between 0 and 1",
        ),
    ],
)
def test_malformed_documents_are_rejected_whole(api: MemoryAPI, document: str, reason: str) -> None:
    result = api.apply_actions(document, now=NOW)
    assert not result.ok and result.outcomes == []
    assert result.reason.startswith(f"rejected: {reason}")
    assert result.reason.endswith("nothing was applied")


def test_one_bad_action_rejects_the_actions_before_it(api: MemoryAPI) -> None:
    bob = api.store.add({"content": "Bob's note", "owner": "bob"}, now=NOW)
    store = {"target_memory_bank": "LTM", "action_type": "STORE"}
    for bad, reason in (
        ({**store, "content": "The wifi password is hunter22"}, "holds a password"),
        ({**store, "content": "Takes insulin twice a day"}, "holds health data"),
        (
            {"target_memory_bank": "LTM", "action_type": "DELETE", "memory_id": bob},
            f"memory {bob}: no memory of this owner has this id",  # as an absent one
        ),
    ):
        document = {
            "memory_actions": [
                {**store, "content": "Likes tea."},
                {**store, "content": "Likes jazz."},
                bad,
            ]
        }
        result = api.apply_actions(document, now=NOW)
        assert not result.ok and f"memory_actions[2]: {reason}" in result.reason
        assert api.store.count() == 1  # only Bob's memory


def test_a_failure_while_applying_rolls_everything_back(
    api: MemoryAPI, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = api.store.add({"content": "Old plan", "owner": "alice"}, now=NOW)
    api.recall("old plan", now=NOW)  # loads the index, which must not keep ghosts

    def broken(*args: object, **kwargs: object) -> None:
        raise StoreError("disk full")

    monkeypatch.setattr(api.store, "forget", broken)
    document = {
        "memory_actions": [
            {"target_memory_bank": "LTM", "action_type": "STORE", "content": "New plan A"},
            {"target_memory_bank": "LTM", "action_type": "DELETE", "memory_id": target},
        ]
    }
    with pytest.raises(StoreError, match="disk full"):
        api.apply_actions(document, now=NOW)
    assert api.store.count() == 1 and api.store.require(target).status == "active"
    assert [r.id for r in api.recall("new plan", now=NOW)] == [target]


def test_the_api_imports_without_textual_or_the_model() -> None:
    code = (
        "import sys, memory_console.api; "
        "print(sorted(m for m in ('textual', 'onnxruntime', 'tokenizers') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_readme_agent_loop_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    section = README.read_text(encoding="utf-8").split("\n## Agent side\n", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert code is not None
    monkeypatch.chdir(tmp_path)
    exec(compile(code.group(1), "README.md", "exec"), {"__name__": "readme"})
    with MemoryAPI(tmp_path / "agent.db", semantic=False) as api:
        memories = api.store.page(MemoryFilter(owner="sam"), limit=100).rows
    contents = {m.content: m for m in memories}
    assert contents["I prefer aisle seats on long flights."].importance == 1.0
    assert not any("hunter22" in c for c in contents)
    assert any(m.retrieval_count > 0 for m in memories)
