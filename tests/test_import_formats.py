"""Peer formats: each sample imports, round-trips, and a bad record imports nothing."""

from __future__ import annotations

import gzip
import io
import json
import re
import zipfile
from pathlib import Path
from typing import Any

import pytest

from memory_console.cli import main
from memory_console.ingest.formats import import_file
from memory_console.ingest.formats.detect import detect_format
from memory_console.ingest.formats.mem0 import export_mem0, memory_hash
from memory_console.ingest.jsonl import ImportFileError, export_jsonl
from memory_console.ingest.secrets_policy import SecretsPolicy
from memory_console.store import MemoryFilter, MemoryRecord, Store
from memory_console.timeutil import parse_iso
from tests.helpers import NOW

SAMPLES = Path(__file__).resolve().parent / "data" / "formats"
OPENMEMORY = SAMPLES / "openmemory"
DELETED_IN_MEM0 = "5d1e0f9a-7777-4a2b-9c3d-4e5f6a7b8c9d"  # only history rows in the sample
KEEP_HEALTH = SecretsPolicy(allow_health=True)  # the mem0 sample holds an allergy


def openmemory_zip(folder: Path, *, manifest: bool = True, edit: Any = None) -> Path:
    """An OpenMemory export zip built from the readable sample (memories.jsonl gzipped)."""
    data = json.loads((OPENMEMORY / "memories.json").read_text())
    if edit is not None:
        edit(data)
    path = folder / "export.zip"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        if manifest:
            archive.writestr("memories.json", json.dumps(data, indent=2))
        archive.writestr(
            "memories.jsonl.gz", gzip.compress((OPENMEMORY / "memories.jsonl").read_bytes())
        )
    return path


def mem0_view(item: dict[str, Any]) -> dict[str, Any]:
    """What a mem0 round trip keeps: records without their search score and our own
    metadata.memory_console, history rows by event and contents; times as instants."""
    if "memory" not in item:
        view = {k: item[k] for k in ("memory_id", "event", "old_memory", "new_memory")}
        view["at"] = parse_iso(item["updated_at"] or item["created_at"])
        return view
    view = {k: v for k, v in item.items() if k != "score"}
    view["metadata"] = {k: v for k, v in item["metadata"].items() if k != "memory_console"}
    for name in ("created_at", "updated_at"):
        view[name] = parse_iso(item[name]) if item.get(name) else None
    return view


def records(store: Store) -> dict[str, MemoryRecord]:
    """All memories by content."""
    return {r.content: r for r in store.page(MemoryFilter(), limit=1000).rows}


def reimported(store: Store, folder: Path) -> list[dict[str, Any]]:
    """Export as our JSONL with history, import into an empty store, export again: the two
    exports must be equal (our format round-trips whatever a peer format brought in)."""
    first = io.StringIO()
    export_jsonl(store, first, include_all=True, history=True)
    path = folder / "ours.jsonl"
    path.write_text(first.getvalue())
    with Store(folder / "copy.db", actor="import") as copy:
        assert import_file(copy, path, now=NOW, policy=KEEP_HEALTH).format == "jsonl"
        second = io.StringIO()
        export_jsonl(copy, second, include_all=True, history=True)
    assert second.getvalue() == first.getvalue()
    return [json.loads(line) for line in first.getvalue().splitlines()]


def test_each_sample_is_detected(tmp_path: Path) -> None:
    ours = tmp_path / "ours.jsonl"
    ours.write_text('{"content": "Likes tea", "status": "active"}\n')
    expected = {
        SAMPLES / "mem0.jsonl": "mem0",
        SAMPLES / "mem0_results.json": "mem0",
        openmemory_zip(tmp_path): "openmemory",
        OPENMEMORY / "memories.json": "openmemory",
        OPENMEMORY / "memories.jsonl": "openmemory",
        SAMPLES / "letta_agent.af": "letta",
        SAMPLES / "letta_passages.json": "letta",
        SAMPLES / "mcp_memory.jsonl": "mcp",
        ours: "jsonl",
    }
    assert {path: detect_format(path) for path in expected} == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"content": "a"}\n{"memory": "b"}\n', "different formats: jsonl (line 1), mem0 (line 2)"),
        ('{"memory": "a"}\n{"type": "entity"}\n', "different formats: mem0 (line 1), mcp (line 2)"),
        ('{\n  "something": []\n}\n', "cannot tell the format of this JSON document"),
    ],
)
def test_auto_refuses_to_guess(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "unknown.jsonl"
    path.write_text(text)
    with pytest.raises(ImportFileError) as raised:
        detect_format(path)
    assert str(raised.value).startswith(f"{path}: ") and message in str(raised.value)
    assert str(raised.value).endswith("give --format jsonl, mem0, openmemory, letta or mcp")


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ('{"memory": "a"}\nnot json\n', ":2: invalid JSON"),
        ('{"note": "a"}\n', ":1: content is required"),
        ("hello\n", ":1: invalid JSON"),
    ],
)
def test_unclear_lines_are_left_to_the_reader(
    store: Store, tmp_path: Path, text: str, error: str
) -> None:
    path = tmp_path / "some.jsonl"
    path.write_text(text)
    with pytest.raises(ImportFileError, match=re.escape(f"{path}{error}")):
        import_file(store, path, now=NOW)
    assert store.count() == 0


def test_mem0_records_and_history_round_trip(store: Store, tmp_path: Path) -> None:
    report = import_file(store, SAMPLES / "mem0.jsonl", now=NOW, policy=KEEP_HEALTH)
    assert (report.format, report.imported) == ("mem0", 3)
    assert report.skipped == {"history rows of memories not in the file (deleted in mem0)": 1}
    found = records(store)
    vegetarian = found["Is a vegetarian and allergic to nuts"]
    assert (vegetarian.owner, vegetarian.external_id) == (
        "alice",
        "3c90c3cc-0d44-4b50-8888-8dd25736052a",
    )
    assert vegetarian.metadata["category"] == "food"
    assert vegetarian.metadata["mem0"]["role"] == "user"
    assert vegetarian.created_at == parse_iso("2025-03-14T09:21:07.412345-07:00")
    events = store.history(vegetarian.id)
    assert [(e.kind, e.actor) for e in events] == [("created", "mem0"), ("edited", "mem0")]
    assert events[1].before == {"content": "Is a vegetarian"}
    support = found["Answers support tickets in a friendly, concise tone"]
    assert (support.owner, support.memory_type) == ("support-bot", "procedural")

    out = io.StringIO()
    assert export_mem0(store, out, history=True) == 3
    exported = [json.loads(line) for line in out.getvalue().splitlines()]
    original = [json.loads(line) for line in (SAMPLES / "mem0.jsonl").read_text().splitlines()]

    kept = [item for item in original if item.get("memory_id") != DELETED_IN_MEM0]
    wanted = [mem0_view(item) for item in kept]
    for item in wanted:  # mem0 leaves updated_at empty until an update; ours is created_at
        if "memory" in item and item["updated_at"] is None:
            item["updated_at"] = item["created_at"]
    support_id = "f47ac10b-58cc-4372-a567-0e02b2c3d479"  # no history in the file: its creation
    wanted.append(
        {
            "memory_id": support_id,
            "event": "ADD",
            "old_memory": None,
            "new_memory": "Answers support tickets in a friendly, concise tone",
            "at": parse_iso("2025-06-10T16:45:30+00:00"),
        }
    )
    assert [mem0_view(item) for item in exported] == wanted
    assert all(r["hash"] == memory_hash(r["memory"]) for r in exported if "memory" in r)


def test_our_fields_survive_a_trip_through_mem0(store: Store, tmp_path: Path) -> None:
    ident = store.add(
        {
            "content": "Prefers the 7:10 train",
            "owner": "bob",
            "topic": "preferences",
            "tier": "short_term",
            "memory_type": "episodic",
            "importance": 0.9,
            "confidence": 0.6,
            "retrieval_count": 4,
            "is_protected": True,
            "status": "archived",
            "metadata": {"session": "s-12"},
        },
        now=NOW,
    )
    path = tmp_path / "out.jsonl"
    with path.open("w") as handle:
        export_mem0(store, handle, include_all=True)
    with Store(tmp_path / "copy.db") as copy:
        import_file(copy, path, now=NOW, policy=KEEP_HEALTH)
        (back,) = copy.page(MemoryFilter()).rows
    before = store.require(ident)
    for name in ("content", "owner", "topic", "tier", "memory_type", "importance", "confidence"):
        assert getattr(back, name) == getattr(before, name)
    assert (back.retrieval_count, back.is_protected, back.status) == (4, True, "archived")
    assert back.metadata["session"] == "s-12" and "memory_console" not in back.metadata
    assert back.external_id is not None and back.created_at == before.created_at


def test_mem0_json_document(store: Store) -> None:
    report = import_file(store, SAMPLES / "mem0_results.json", now=NOW, policy=KEEP_HEALTH)
    assert (report.format, report.imported) == ("mem0", 2)
    assert {r.owner for r in records(store).values()} == {"alice"}


def test_a_second_import_of_the_same_memories_is_refused(store: Store) -> None:
    import_file(store, SAMPLES / "mem0.jsonl", now=NOW, policy=KEEP_HEALTH)
    with pytest.raises(ImportFileError, match=r"mem0\.jsonl:1: id 3c90c3cc.* was imported before"):
        import_file(store, SAMPLES / "mem0.jsonl", now=NOW, policy=KEEP_HEALTH)
    assert store.count() == 3
    again = import_file(store, SAMPLES / "mem0.jsonl", now=NOW, policy=KEEP_HEALTH, keep_ids=False)
    assert again.imported == 3


def test_openmemory_zip_maps_states_and_round_trips(store: Store, tmp_path: Path) -> None:
    report = import_file(store, openmemory_zip(tmp_path), now=NOW)
    assert (report.format, report.imported) == ("openmemory", 4)
    found = records(store)
    assert {r.owner for r in found.values()} == {"dana"}
    states = {r.metadata["openmemory"]["state"]: r.status for r in found.values()}
    assert states == {
        "active": "active",
        "paused": "archived",
        "archived": "archived",
        "deleted": "archived",
    }
    neovim = found["Uses Neovim with the Solarized Dark theme"]
    assert (neovim.topic, neovim.keywords[0], neovim.metadata["source_app"]) == (
        "preferences",
        "preferences",
        "cursor",
    )
    assert neovim.metadata["openmemory"]["app"] == "cursor"
    billing = found["Is migrating the billing service to PostgreSQL 16"]
    assert billing.topic == "projects"
    events = store.history(billing.id)
    assert [(e.kind, e.actor) for e in events] == [
        ("created", "openmemory"),
        ("archived", "openmemory"),
    ]
    assert events[1].after == {"status": "archived", "state": "paused"}
    assert events[1].at == parse_iso("2025-05-01T12:00:00+00:00")
    lines = reimported(store, tmp_path)
    assert len(lines) == 4 and all(line["history"] for line in lines)


def test_openmemory_logical_records_alone(store: Store, tmp_path: Path) -> None:
    report = import_file(store, openmemory_zip(tmp_path, manifest=False), now=NOW)
    assert report.imported == 4
    assert sorted(r.status for r in records(store).values()) == ["active"] + ["archived"] * 3


def test_letta_agent_file_blocks_become_protected_memories(store: Store, tmp_path: Path) -> None:
    report = import_file(store, SAMPLES / "letta_agent.af", now=NOW)
    assert (report.format, report.imported) == ("letta", 4)
    assert report.skipped == {"memory blocks with an empty value": 1}
    blocks = {r.metadata["letta"]["label"]: r for r in records(store).values()}
    assert set(blocks) == {"human", "persona", "policies", "project"}
    assert all(
        r.is_protected and r.memory_type == "semantic" and r.tier == "working"
        for r in blocks.values()
    )
    assert {label: r.metadata["letta"]["read_only"] for label, r in blocks.items()} == {
        "human": False,
        "persona": True,
        "policies": True,
        "project": False,
    }
    assert {label: r.owner for label, r in blocks.items()} == {
        "human": "travel-assistant",
        "persona": "travel-assistant",
        "policies": "travel-assistant",
        "project": "coding-buddy",
    }
    human = blocks["human"]
    assert (human.topic, human.metadata["letta"]["id"], human.title) == (
        "user_info",
        "block-0",
        "human: The user's name is Sam.",
    )
    assert human.external_id is not None and human.external_id.startswith("letta-block-")
    assert human.metadata["letta"]["limit"] == 5000 and blocks["persona"].metadata["version"] == 2
    assert human.created_at == parse_iso("2025-08-12T15:30:00+00:00")
    reimported(store, tmp_path)


def test_letta_passages(store: Store, tmp_path: Path) -> None:
    report = import_file(store, SAMPLES / "letta_passages.json", now=NOW)
    assert report.imported == 2
    trip = records(store)["Sam's 2024 Lisbon trip: stayed in Alfama, loved the tram 28 ride."]
    assert trip.keywords[:2] == ["travel", "lisbon"] and trip.tier == "long_term"
    assert not trip.is_protected and trip.owner == "agent-5f0c9a2e"
    assert trip.metadata["source"] == "conversation"
    assert trip.metadata["letta"]["archive_id"] == "archive-1"
    assert "embedding" not in trip.metadata["letta"]
    reimported(store, tmp_path)


def test_mcp_observations_live_under_their_entity_topic(store: Store, tmp_path: Path) -> None:
    report = import_file(store, SAMPLES / "mcp_memory.jsonl", now=NOW, owner="sam")
    assert (report.format, report.imported) == ("mcp", 10)
    assert report.skipped == {"repeated observations": 1}
    found = records(store)
    topics = {content: r.topic for content, r in found.items()}
    assert topics["Lives in Porto"] == topics["Drinks green tea"] == "user_info"
    assert topics["Maria Lopez: Colleague on the data team"] == "contacts"
    assert topics["Atlas: Deadline is the end of Q3"] == "projects"
    assert topics["Maria Lopez leads Atlas"] == "contacts"
    relation = found["default_user works with Maria Lopez"]
    assert relation.metadata["mcp"]["relation"]["relationType"] == "works_with"
    colleague = found["Maria Lopez: Colleague on the data team"]
    assert colleague.title == "Maria Lopez: Colleague on the data team"
    assert (
        colleague.keywords[0] == "Maria Lopez"
        and colleague.metadata["mcp"]["entity"] == "Maria Lopez"
    )
    assert {r.owner for r in found.values()} == {"sam"}
    assert {r.created_at for r in found.values()} == {NOW}
    reimported(store, tmp_path)


def broken_state(data: dict[str, Any]) -> None:
    data["memories"][1]["state"] = "frozen"


@pytest.mark.parametrize(
    ("name", "make", "message"),
    [
        (
            "mem0.jsonl",
            lambda path: path.write_text(
                (SAMPLES / "mem0.jsonl").read_text() + '{"id": "x-1", "memory": 42}\n'
            ),
            "mem0.jsonl:8: memory must be a string, not int",
        ),
        (
            "mem0.jsonl",
            lambda path: path.write_text(
                (SAMPLES / "mem0.jsonl")
                .read_text()
                .replace('"event": "UPDATE"', '"event": "MERGE"')
            ),
            "mem0.jsonl:3: event must be one of ADD, UPDATE, DELETE, not 'MERGE'",
        ),
        (
            "mem0_results.json",
            lambda path: path.write_text(
                (SAMPLES / "mem0_results.json")
                .read_text()
                .replace('"alice"', '"alice", "created_at": "soon"', 1)
            ),
            "mem0_results.json:results[0]: created_at: not an ISO 8601 time: 'soon'",
        ),
        (
            "letta_agent.af",
            lambda path: path.write_text(
                (SAMPLES / "letta_agent.af")
                .read_text()
                .replace('"read_only": true', '"read_only": "yes"', 1)
            ),
            "letta_agent.af:blocks[1]: read_only must be true or false",
        ),
        (
            "mcp.jsonl",
            lambda path: path.write_text(
                (SAMPLES / "mcp_memory.jsonl").read_text()
                + '{"type": "entity", "name": "Kim", "observations": "tall"}\n'
            ),
            "mcp.jsonl:7: observations must be a list of strings",
        ),
    ],
)
def test_a_bad_record_names_its_place_and_imports_nothing(
    store: Store, tmp_path: Path, name: str, make: Any, message: str
) -> None:
    path = tmp_path / name
    make(path)
    with pytest.raises(ImportFileError) as raised:
        import_file(store, path, now=NOW)
    assert str(raised.value) == f"{tmp_path}/{message}"
    assert store.count() == 0


def test_a_bad_memory_in_a_zip_names_the_member_and_path(store: Store, tmp_path: Path) -> None:
    path = openmemory_zip(tmp_path, edit=broken_state)
    with pytest.raises(ImportFileError) as raised:
        import_file(store, path, now=NOW)
    assert str(raised.value) == (
        f"{path}:memories.json:memories[1]: state must be one of active, paused, archived, "
        "deleted, not 'frozen'"
    )
    assert store.count() == 0


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_imports_every_sample_and_exports_mem0(
    db_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = [
        SAMPLES / "mem0.jsonl",
        openmemory_zip(tmp_path),
        SAMPLES / "letta_agent.af",
        SAMPLES / "letta_passages.json",
        SAMPLES / "mcp_memory.jsonl",
    ]
    counts = {}
    for path in files:
        argv = ("import", str(path), "--db", str(db_path), "--json", "--allow-health")
        code, out, _ = run(capsys, *argv)
        assert code == 0
        report = json.loads(out)
        counts[report["format"]] = counts.get(report["format"], 0) + report["imported"]
    assert counts == {"mem0": 3, "openmemory": 4, "letta": 6, "mcp": 10}
    mcp = ("import", str(SAMPLES / "mcp_memory.jsonl"), "--db", str(db_path))
    code, _, err = run(capsys, *mcp)
    assert code == 1 and "was imported before" in err  # the same graph is not added twice
    code, out, _ = run(capsys, *mcp, "--new-ids")
    assert code == 0 and "(mcp)" in out and "skipped 1 repeated observations" in out
    out_path = tmp_path / "mem0-out.jsonl"
    code, _, err = run(
        capsys, "export", "--db", str(db_path), "--format", "mem0", "--all", "--out", str(out_path)
    )
    assert code == 0 and "exported 33 memories" in err
    assert len(out_path.read_text().splitlines()) == 33


def test_cli_error_is_one_line_and_the_store_unchanged(
    db_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = openmemory_zip(tmp_path, edit=broken_state)
    code, _, err = run(capsys, "import", str(path), "--db", str(db_path), "--format", "openmemory")
    assert code == 1
    assert err == (
        f"memory-console: error: {path}:memories.json:memories[1]: "
        "state must be one of active, paused, archived, deleted, not 'frozen'\n"
    )
    with pytest.raises(SystemExit) as usage:
        main(["import", str(path), "--db", str(db_path), "--format", "xml"])
    assert usage.value.code == 2 and "invalid choice: 'xml'" in capsys.readouterr().err
    with Store(db_path) as store:
        assert store.count() == 0
