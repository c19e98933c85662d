"""Files the peers really write: double-encoded agent files, agent text, re-imports, ids mem0
accepts, subjects and owners kept, OpenMemory's history and Letta's archival export zip."""

from __future__ import annotations

import io
import json
import uuid
import zipfile
from pathlib import Path
from typing import Any

import pytest

from memory_console.cli import main
from memory_console.ingest.formats import import_file
from memory_console.ingest.formats.detect import detect_format
from memory_console.ingest.formats.mem0 import export_mem0
from memory_console.ingest.jsonl import ImportFileError
from memory_console.store import MemoryFilter, MemoryRecord, Store
from tests.helpers import NOW

SAMPLES = Path(__file__).resolve().parent / "data" / "formats"
MEMGPT = SAMPLES / "letta_memgpt_agent.af"  # JSON-encoded twice, as in agent-file
JOHN_SMITH = SAMPLES / "mcp_john_smith.jsonl"
ARCHIVAL = SAMPLES / "letta_archival_memories.json"
OPENMEMORY = SAMPLES / "openmemory" / "memories.json"
AGENT_ID = "agent-7d2f4a9c-1b3e-4c5d-8e6f-0a1b2c3d4e5f"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def records(store: Store) -> dict[str, MemoryRecord]:
    return {r.content: r for r in store.page(MemoryFilter(), limit=1000).rows}


def agent_file(path: Path, blocks: list[tuple[str, str]]) -> Path:
    """A one-agent file holding these (label, value) blocks."""
    ids = [f"block-{i}" for i in range(len(blocks))]
    document = {
        "agents": [{"id": "agent-0", "name": "void", "block_ids": ids}],
        "blocks": [
            {"id": ident, "label": label, "value": value}
            for ident, (label, value) in zip(ids, blocks, strict=True)
        ],
    }
    path.write_text(json.dumps(document, indent=2))
    return path


# -- Letta agent files JSON-encoded twice --------------------------------------------------


def test_an_agent_file_encoded_twice_is_decoded_once_more(store: Store) -> None:
    assert json.loads(MEMGPT.read_text()).startswith("{")  # the sample is a JSON string
    assert detect_format(MEMGPT) == "letta"
    report = import_file(store, MEMGPT, now=NOW)
    assert (report.format, report.imported) == ("letta", 2)
    blocks = {r.metadata["letta"]["label"]: r for r in records(store).values()}
    assert set(blocks) == {"human", "persona"}
    assert {r.owner for r in blocks.values()} == {"memgpt_agent"}
    assert "Chad" in blocks["human"].content


def test_a_string_that_holds_no_object_is_still_refused(store: Store, tmp_path: Path) -> None:
    path = tmp_path / "words.af"
    path.write_text(json.dumps("just words"))
    with pytest.raises(ImportFileError, match="expected a JSON object, not str"):
        import_file(store, path, now=NOW)


# -- agent text and --skip-refused ---------------------------------------------------------


def test_agent_text_is_neither_a_key_nor_health_data(store: Store, tmp_path: Path) -> None:
    # Lines of Letta's agent-file collection (void.af, ezra.af) that used to refuse the file.
    path = agent_file(
        tmp_path / "void.af",
        [
            ("user", "- Diagnosed a backlog issue I was experiencing."),
            ("references", "providers:\n  - name: my-anthropic\n    apiKey: sk-ant-..."),
            ("letta-code", "Password=Letta API key (`sk-...`). Env var: `LETTA_API_KEY=sk-...`"),
        ],
    )
    assert import_file(store, path, now=NOW).imported == 3


def jsonl(path: Path, *contents: str) -> Path:
    path.write_text("".join(json.dumps({"content": text}) + "\n" for text in contents))
    return path


def test_skip_refused_imports_the_rest_and_lists_each_refusal(
    db_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = jsonl(
        tmp_path / "notes.jsonl",
        "Likes green tea",
        "The router password = hunter2x",
        "Is allergic to peanuts",
        "Plays chess on Sundays",
    )
    code, _, err = run(capsys, "import", str(path), "--db", str(db_path))
    assert code == 1 and f"{path}:2: holds a password" in err  # all or nothing by default
    code, out, err = run(capsys, "import", str(path), "--db", str(db_path), "--skip-refused")
    assert code == 0
    assert err.splitlines() == [
        f"{path}:2: holds a password (import with --allow-secrets to keep it)",
        f"{path}:3: holds health data and its metadata.user_requested is not true "
        "(import with --allow-health to keep it)",
    ]
    assert "imported 2 memories" in out and "left out 2 refused memories" in out
    with Store(db_path) as store:
        assert set(records(store)) == {"Likes green tea", "Plays chess on Sundays"}


def test_skip_refused_in_a_peer_format_and_in_json(
    db_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ("import", str(SAMPLES / "mem0.jsonl"), "--db", str(db_path), "--skip-refused")
    code, out, err = run(capsys, *argv, "--json")
    assert code == 0
    report = json.loads(out)
    assert (report["imported"], report["refused"]) == (2, 1)
    assert err.startswith(f"{SAMPLES / 'mem0.jsonl'}:") and "holds health data" in err


def test_skip_refused_still_refuses_a_malformed_file(
    db_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = jsonl(tmp_path / "notes.jsonl", "Likes green tea", "password = hunter2x")
    path.write_text(path.read_text() + "not json\n")
    code, _, err = run(capsys, "import", str(path), "--db", str(db_path), "--skip-refused")
    assert code == 1 and f"{path}:3: invalid JSON" in err
    assert not db_path.exists() or Store(db_path).count() == 0


# -- one re-import rule for every format ---------------------------------------------------


@pytest.mark.parametrize("sample", ["letta_agent.af", "letta_memgpt_agent.af", "mcp_memory.jsonl"])
def test_the_same_file_twice_is_refused_like_mem0(store: Store, sample: str) -> None:
    first = import_file(store, SAMPLES / sample, now=NOW)
    with pytest.raises(ImportFileError) as raised:
        import_file(store, SAMPLES / sample, now=NOW)
    message = str(raised.value)
    assert message.startswith(f"{SAMPLES / sample}") and " was imported before (memory " in message
    assert message.endswith("import with --new-ids to add the file's memories again")
    assert store.count() == first.imported
    assert import_file(store, SAMPLES / sample, now=NOW, keep_ids=False).imported == first.imported


def test_block_0_of_two_agent_files_are_two_memories(store: Store) -> None:
    import_file(store, SAMPLES / "letta_agent.af", now=NOW)
    assert import_file(store, MEMGPT, now=NOW).imported == 2
    assert len({r.external_id for r in records(store).values()}) == store.count()


# -- mem0 export ids -----------------------------------------------------------------------


def mem0_lines(store: Store) -> list[dict[str, Any]]:
    out = io.StringIO()
    export_mem0(store, out, include_all=True)
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_mem0_export_ids_are_uuids_unique_stable_and_import_back(
    store: Store, tmp_path: Path
) -> None:
    for sample in ("letta_agent.af", "letta_memgpt_agent.af", "mcp_memory.jsonl"):
        import_file(store, SAMPLES / sample, now=NOW)
    lines = mem0_lines(store)
    ids = [line["id"] for line in lines]
    assert all(str(uuid.UUID(ident)) == ident for ident in ids)
    assert len(set(ids)) == len(ids) == store.count()
    assert mem0_lines(store) == lines  # exporting again gives the same ids
    path = tmp_path / "mem0.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    with Store(tmp_path / "copy.db", actor="import") as copy:
        report = import_file(copy, path, now=NOW)
        assert (report.format, report.imported) == ("mem0", store.count())
        back = {(r.owner, r.content, r.external_id) for r in records(copy).values()}
    assert back == {(r.owner, r.content, r.external_id) for r in records(store).values()}
    with pytest.raises(ImportFileError, match="was imported before"):
        import_file(store, path, now=NOW)  # its own memories, recognised


# -- subjects and owners -------------------------------------------------------------------


def test_an_observation_stays_about_its_entity(store: Store) -> None:
    import_file(store, JOHN_SMITH, now=NOW, owner="sam")
    spanish = records(store)["John_Smith: Speaks fluent Spanish"]
    assert spanish.owner == "sam" and spanish.metadata["mcp"]["entity"] == "John_Smith"
    assert spanish.metadata["mcp"]["observation"] == "Speaks fluent Spanish"
    exported = {line["memory"] for line in mem0_lines(store)}
    assert "John_Smith: Speaks fluent Spanish" in exported
    assert "John_Smith works at Anthropic" in exported


def test_a_repeated_entity_keeps_every_type(store: Store, tmp_path: Path) -> None:
    path = tmp_path / "graph.jsonl"
    extra = {"type": "entity", "name": "John_Smith", "entityType": "employee", "observations": []}
    path.write_text(JOHN_SMITH.read_text() + "\n" + json.dumps(extra) + "\n")
    import_file(store, path, now=NOW)
    found = records(store)["John_Smith: Graduated in 2019"]
    assert found.metadata["mcp"]["entityTypes"] == ["person", "employee"]


@pytest.mark.parametrize(
    ("path", "assumed"),
    [
        (JOHN_SMITH, 5),  # the MCP graph names no owner
        (ARCHIVAL, 2),  # Letta passages without agent_id
        (SAMPLES / "openmemory" / "memories.jsonl", 4),  # the logical records name no user
    ],
)
def test_the_summary_says_which_owner_was_assumed(
    db_path: Path, capsys: pytest.CaptureFixture[str], path: Path, assumed: int
) -> None:
    code, out, _ = run(capsys, "import", str(path), "--db", str(db_path))
    assert code == 0
    assert (
        f"owner default assumed for {assumed} memories whose file names none "
        "(set one with --owner)" in out
    )
    other = str(db_path.with_name("other.db"))
    code, out, _ = run(capsys, "import", str(path), "--db", other, "--owner", "sam")
    assert code == 0 and f"owner sam assumed for {assumed} memories" in out
    assert "(given by --owner)" in out


def test_owners_the_file_names_are_not_assumed(
    db_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "import", str(SAMPLES / "letta_agent.af"), "--db", str(db_path))
    assert code == 0 and "assumed" not in out
    code, out, _ = run(capsys, "import", str(OPENMEMORY), "--db", str(db_path), "--json")
    assert code == 0 and json.loads(out)["assumed_owner"] is None


# -- OpenMemory ----------------------------------------------------------------------------


def test_openmemory_creation_rows_are_no_restore(store: Store) -> None:
    import_file(store, OPENMEMORY, now=NOW)
    kinds = {r.content: [e.kind for e in store.history(r.id)] for r in records(store).values()}
    assert all(events[0] == "created" and "restored" not in events for events in kinds.values())
    assert kinds["Is migrating the billing service to PostgreSQL 16"] == ["created", "archived"]


def test_openmemory_missing_created_at_is_said(
    db_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = json.loads(OPENMEMORY.read_text())
    data["memories"][0]["created_at"] = None
    path = tmp_path / "memories.json"
    path.write_text(json.dumps(data))
    code, _, err = run(
        capsys, "import", str(path), "--db", str(db_path), "--now", "2026-11-18T11:06:40Z"
    )
    assert code == 0
    assert "warning: 1 memories without created_at, dated at the import time" in err
    with Store(db_path) as store:
        undated = [r for r in records(store).values() if r.created_at == NOW]
    assert len(undated) == 1 and undated[0].metadata["openmemory"]["created_at_unknown"] is True


# -- Letta's archival export zip -----------------------------------------------------------


def archival_zip(folder: Path) -> Path:
    """A zip as the letta-archival-export page writes it: `AGENT_ID_memories.json`."""
    path = folder / f"{AGENT_ID}_memories.zip"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(f"{AGENT_ID}_memories.json", ARCHIVAL.read_text())
    return path


def test_the_letta_archival_export_zip_is_recognised(store: Store, tmp_path: Path) -> None:
    path = archival_zip(tmp_path)
    assert detect_format(path) == "letta"
    report = import_file(store, path, now=NOW)
    assert (report.format, report.imported, report.assumed_owner) == ("letta", 2, None)
    found = records(store)
    notes = found[
        "Cameron prefers release notes as a bulleted list with links to the pull requests."
    ]
    assert notes.owner == AGENT_ID and notes.tier == "long_term"
    assert notes.external_id == "passage-a2b4c6d8-1e3f-4a5b-8c7d-9e0f1a2b3c4d"
    assert "preferences" in notes.keywords
