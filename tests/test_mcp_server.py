"""`memory-console mcp` as a real process, driven by the MCP SDK's own client (stdio, HTTP)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.types import CallToolResult, Implementation

from memory_console.agent.mcp_server import (
    MAX_CONTENT,
    actor_name,
    is_loopback,
    names_this_server,
    token_matches,
)
from memory_console.api import MemoryAPI
from memory_console.commands.mcp_commands import guard_note
from memory_console.store import MemoryFilter, Store
from tests.helpers import invoke, one_error_line

ROOT = Path(__file__).resolve().parent.parent
TOKEN = "t0ken-for-tests-only-5f2c"
FACTS = [  # distinct enough that none is a near-duplicate of another
    "I keep bees on the roof of my building",
    "My bicycle is a red Gazelle from 1987",
    "I study Japanese every Tuesday evening",
    "My favourite tea is a green sencha",
    "I play the cello in an amateur orchestra",
    "I was born in Porto and moved at ten",
    "My dog Rex is afraid of thunderstorms",
    "I commute by the 7:42 train to Utrecht",
    "My landlord's name is Mr Okafor",
    "I always sit in the front row at the cinema",
    "Our team's standup is at half past nine",
    "I collect vintage fountain pens",
    "My car is a grey Skoda estate",
    "I volunteer at the food bank on Saturdays",
    "My daughter's school is Saint Anne's",
    "I write my notes in Obsidian",
]
SEEDED = {
    "acme": "Remember that I work at Acme Corp as a backend engineer",
    "dark": "Remember that I prefer dark mode in every editor",
    "maria": "Remember that my sister Maria lives in Lisbon",
    "billing": "Remember that we chose PostgreSQL for the billing service",
}


def child_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env.pop("MEMORY_CONSOLE_MCP_TOKEN", None)
    env.update(extra)
    return env


def seed(db: Path | str, owner: str = "alice") -> dict[str, int]:
    """The ids of the seeded memories of `owner` (and of one of bob's), by SEEDED's keys."""
    ids: dict[str, int] = {}
    with MemoryAPI(db, owner=owner, semantic=False) as api:
        for key, text in SEEDED.items():
            done = api.remember(text)
            assert done.action == "stored" and done.id is not None
            ids[key] = done.id
        ids["bob"] = api.remember("Remember that I like tea", owner="bob").id or 0
    return ids


def server_params(db: Path | str, *extra: str) -> StdioServerParameters:
    args = ["-m", "memory_console.cli", "mcp", "--db", str(db), "--owner", "alice", *extra]
    return StdioServerParameters(command=sys.executable, args=args, env=child_env())


def client(server: Any, name: str = "Test Agent") -> Client:
    return Client(server, client_info=Implementation(name=name, version="1.0"))


def data(result: CallToolResult) -> dict[str, Any]:
    assert not result.is_error, result.content
    assert result.content and result.content[0].type == "text" and result.content[0].text
    assert result.structured_content is not None
    return result.structured_content


def events(db: Path | str, after: int = 0) -> list[tuple[int, str, str]]:
    """(memory id, actor, kind) of the store's events, those after event id `after` only."""
    with Store(db, read_only=True, create=False) as store:
        ids = [int(i) for i in store.ids_matching(MemoryFilter())]
        found = [e for i in ids for e in store.history(i) if e.id > after]
    return [(e.memory_id, e.actor, e.kind) for e in sorted(found, key=lambda e: e.id)]


def last_event(db: Path | str) -> int:
    with Store(db, read_only=True, create=False) as store:
        ids = [int(i) for i in store.ids_matching(MemoryFilter())]
        return max(e.id for i in ids for e in store.history(i))


def assert_check_passes(db: Path | str) -> None:
    outcome = invoke(["check", "--db", str(db)])
    assert outcome.code == 0, outcome
    # PostgreSQL checks its indexes' integrity only where the amcheck extension is installed.
    assert "ok       integrity" in outcome.out or str(db).startswith("postgresql:")


# -- stdio: every tool ---------------------------------------------------------------------------


async def test_every_tool_over_stdio(db: str) -> None:
    """On each backend: the server a PostgreSQL fleet's agents reach is the same server."""
    ids = seed(db)
    with Store(db, actor="test") as store:
        store.protect([ids["maria"]])
        before = store.count(MemoryFilter())
    seeded = last_event(db)
    async with client(server_params(db), "Claude Desktop") as agent:
        tools = {tool.name: tool for tool in (await agent.list_tools()).tools}
        assert set(tools) == {
            "remember",
            "recall",
            "forget",
            "list_memories",
            "list_topics",
            "get_memory",
            "clear",
        }
        for tool in tools.values():  # an agent can use each tool from its schema alone
            assert tool.description
            for name, schema in tool.input_schema["properties"].items():
                assert schema.get("description"), (tool.name, name)

        stored = data(await agent.call_tool("remember", {"content": "I run every Sunday"}))
        assert stored["action"] == "stored" and stored["id"]
        again = data(await agent.call_tool("remember", {"content": "I run every Sunday"}))
        assert again["action"] == "reinforced" and again["id"] == stored["id"]
        secret = data(await agent.call_tool("remember", {"content": "my password is Xq7!hunter22"}))
        assert secret["action"] == "refused" and "password" in secret["reason"]
        assert secret["id"] is None

        recalled = data(await agent.call_tool("recall", {"query": "editor theme", "k": 2}))
        assert recalled["memories"][0]["id"] == ids["dark"]
        assert "effective" in recalled["memories"][0]["scores"]
        for topic, found in (("preferences", True), ("user_info", False)):
            arguments = {"query": "dark mode in every editor", "k": 5, "topic": topic}
            hits = data(await agent.call_tool("recall", arguments))["memories"]
            assert {m["topic"] for m in hits} <= {topic}
            assert (ids["dark"] in [m["id"] for m in hits]) is found

        shown = data(await agent.call_tool("get_memory", {"id": ids["dark"]}))
        assert shown["content"] == "I prefer dark mode in every editor"
        assert {"policy", "points", "reaches_floor_at"} <= set(shown["forecast"])
        foreign = await agent.call_tool("get_memory", {"id": ids["bob"]})
        assert foreign.is_error and "no memory of this owner" in foreign.content[0].text

        topics = data(await agent.call_tool("list_topics", {}))["topics"]
        assert sum(t["count"] for t in topics) == len(SEEDED) + 1
        listed = data(await agent.call_tool("list_memories", {}))
        assert listed["count"] == len(SEEDED) + 1

        acme = data(await agent.call_tool("forget", {"target": "Forget that I work at Acme Corp"}))
        assert [m["id"] for m in acme["archived"]] == [ids["acme"]]
        guarded = data(await agent.call_tool("forget", {"target": str(ids["maria"])}))
        assert guarded["archived"] == [] and [m["id"] for m in guarded["protected"]] == [
            ids["maria"]
        ]
        by_id = data(
            await agent.call_tool(
                "forget", {"target": str(ids["billing"]), "reason": "the project ended"}
            )
        )
        assert [m["id"] for m in by_id["archived"]] == [ids["billing"]]
        routed = data(
            await agent.call_tool("remember", {"content": "Forget that I run every Sunday"})
        )
        assert routed["action"] == "forgot"
        assert [m["id"] for m in routed["forgotten"]["archived"]] == [stored["id"]]

        first = data(await agent.call_tool("clear", {}))
        assert first["archived"] == [] and first["pending"] == 1 and first["token"]
        cleared = data(await agent.call_tool("clear", {"confirm": first["token"]}))
        assert cleared["archived"] == [ids["dark"]] and cleared["protected"] == [ids["maria"]]

        unknown = await agent.call_tool("no_such_tool", {})
        assert unknown.is_error and "no_such_tool" in unknown.content[0].text
        wrong = await agent.call_tool("recall", {"query": "x", "k": 0})
        assert wrong.is_error
        assert data(await agent.call_tool("list_topics", {}))  # still serving

    actor = "mcp:claude-desktop@alice"
    with Store(db, read_only=True, create=False) as store:
        assert store.count(MemoryFilter()) == before + 1  # only "I run every Sunday"
        assert store.require(ids["billing"]).status == "archived"
        history = json.dumps([e.as_json() for e in store.history(ids["billing"])])
        assert "the project ended" in history
        assert store.require(ids["maria"]).status == "active"
        assert store.require(ids["bob"]).status == "active"
    caused = events(db, after=seeded)
    assert {a for _, a, _ in caused} == {actor}
    assert {k for _, _, k in caused} >= {"created", "reinforced", "accessed", "archived"}
    assert_check_passes(db)


async def test_read_only_server_refuses_writes_and_keeps_serving(tmp_path: Path) -> None:
    db = tmp_path / "memories.db"
    ids = seed(db)
    before = events(db)
    async with client(server_params(db, "--read-only", "--keyword-only")) as agent:
        for tool, arguments in (
            ("remember", {"content": "I like chess"}),
            ("forget", {"target": str(ids["dark"])}),
            ("clear", {}),
        ):
            refused = await agent.call_tool(tool, arguments)
            assert refused.is_error and "read-only" in refused.content[0].text
        found = data(await agent.call_tool("recall", {"query": "dark mode editor"}))
        assert found["memories"][0]["id"] == ids["dark"]
        assert data(await agent.call_tool("get_memory", {"id": ids["dark"]}))["id"] == ids["dark"]
    assert events(db) == before


def test_malformed_requests_get_errors_and_the_server_keeps_serving(tmp_path: Path) -> None:
    """Raw JSON-RPC lines on stdin: a line that is not JSON, an unknown method and a call
    with arguments of the wrong shape each get an error, and the next request its answer."""
    db = tmp_path / "memories.db"
    seed(db)
    command = [sys.executable, "-m", "memory_console.cli", "mcp", "--db", str(db)]
    proc = subprocess.Popen(
        [*command, "--owner", "alice", "--keyword-only"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=child_env(),
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None

    def send(message: dict[str, Any] | str) -> None:
        assert proc.stdin is not None
        line = message if isinstance(message, str) else json.dumps(message)
        proc.stdin.write(line + "\n")
        proc.stdin.flush()

    def answer(ident: int) -> dict[str, Any]:
        assert proc.stdout is not None
        while True:
            line = proc.stdout.readline()
            assert line, "the server closed its output"
            message = json.loads(line)
            if message.get("id") == ident:
                return message

    try:
        send(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "raw", "version": "0"},
                },
            }
        )
        assert "result" in answer(1)
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        send("{this is not json")
        send({"jsonrpc": "2.0", "id": 2, "method": "no/such/method", "params": {}})
        assert answer(2)["error"]["code"] == -32601
        call = {"name": "recall", "arguments": {"query": ["not", "a", "string"]}}
        send({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": call})
        assert answer(3)["result"]["isError"] is True
        send({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"nothing": 1}})
        assert "error" in answer(4)
        call = {"name": "recall", "arguments": {"query": "dark mode"}}
        send({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": call})
        served = answer(5)["result"]
        assert served["structuredContent"]["memories"][0]["content"].startswith("I prefer dark")
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)


# -- HTTP ----------------------------------------------------------------------------------------


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


def ipv6_loopback() -> bool:
    try:
        free_port("::1")
    except OSError:
        return False
    return True


def authority(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


@contextmanager
def http_server(
    db: Path, port: int, *extra: str, host: str = "127.0.0.1", **env: str
) -> Iterator[subprocess.Popen[bytes]]:
    command = [sys.executable, "-m", "memory_console.cli", "mcp", "--db", str(db)]
    proc = subprocess.Popen(
        [*command, "--owner", "alice", "--http", authority(host, port), *extra],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=child_env(**env),
    )
    try:
        deadline = time.monotonic() + 120
        while True:
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            try:
                socket.create_connection((host, port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "the server did not start listening"
                time.sleep(0.1)
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=30)


def write_from_the_console(db: Path, stop: threading.Event) -> list[int]:
    """The console's Store writing until the agents are done: carol's memories, each added
    and protected in two transactions."""
    added: list[int] = []
    with Store(db, actor="tui") as store:
        while not stop.is_set() and len(added) < 5000:
            added.append(store.add({"owner": "carol", "content": f"Console note {len(added)}"}))
            store.protect([added[-1]])
    return added


async def test_http_concurrent_clients_with_the_console_writing(tmp_path: Path) -> None:
    db = tmp_path / "memories.db"
    ids = seed(db)
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    with http_server(db, port, MEMORY_CONSOLE_MCP_TOKEN=TOKEN) as proc:
        async with httpx2.AsyncClient() as bare:  # every request needs the token
            refused = await bare.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
            assert refused.status_code == 401
            wrong = await bare.post(url, json={}, headers={"Authorization": "Bearer not-the-token"})
            assert wrong.status_code == 401

        async def agent(name: str, facts: list[str]) -> list[int]:
            headers = {"Authorization": f"Bearer {TOKEN}"}
            made: list[int] = []
            async with httpx2.AsyncClient(headers=headers, timeout=120) as http:
                from mcp.client.streamable_http import streamable_http_client

                async with client(streamable_http_client(url, http_client=http), name) as c:
                    for text in facts:
                        done = data(await c.call_tool("remember", {"content": text}))
                        assert done["action"] == "stored", done
                        made.append(done["id"])
                        data(await c.call_tool("recall", {"query": "dark mode", "k": 1}))
            return made

        stop = threading.Event()
        console_ids: list[int] = []
        writer = threading.Thread(
            target=lambda: console_ids.extend(write_from_the_console(db, stop))
        )
        writer.start()
        made: dict[str, list[int]] = {}
        try:
            async with anyio.create_task_group() as group:
                for name, facts in (("Cursor", FACTS[:8]), ("Zed Agent", FACTS[8:])):

                    async def run(name: str = name, facts: list[str] = facts) -> None:
                        made[name] = await agent(name, facts)

                    group.start_soon(run)
        finally:
            stop.set()
            writer.join(timeout=120)
        assert proc.poll() is None
    assert len(console_ids) >= 1 and len(made["Cursor"]) == len(made["Zed Agent"]) == 8
    by_memory: dict[int, set[str]] = {}
    for memory_id, actor, _kind in events(db):
        by_memory.setdefault(memory_id, set()).add(actor)
    assert all(by_memory[i] == {"mcp:cursor@alice"} for i in made["Cursor"])
    assert all(by_memory[i] == {"mcp:zed-agent@alice"} for i in made["Zed Agent"])
    assert all(by_memory[i] == {"tui"} for i in console_ids)
    assert {"mcp:cursor@alice", "mcp:zed-agent@alice"} <= by_memory[ids["dark"]]
    with Store(db, read_only=True, create=False) as store:
        assert store.count(MemoryFilter(owner="carol")) == len(console_ids)
        assert store.count(MemoryFilter(owner="alice")) == len(SEEDED) + 16
    assert_check_passes(db)
    assert TOKEN.encode() not in db.read_bytes()


def test_a_bind_beyond_loopback_needs_a_token(tmp_path: Path) -> None:
    db = tmp_path / "memories.db"
    outcome = invoke(["mcp", "--db", str(db), "--http", "0.0.0.0:8765"])
    assert outcome.code == 1 and "needs a bearer token" in outcome.err
    assert not db.exists()  # refused before the store is opened
    empty = tmp_path / "empty-token"
    empty.write_text("\n")
    args = ["mcp", "--db", str(db), "--http", "0.0.0.0:8765", "--token-file", str(empty)]
    outcome = invoke(args)
    assert outcome.code == 1 and "one non-empty word" in outcome.err
    assert invoke(["mcp", "--db", str(db), "--http", "nowhere"]).code == 2


def test_the_guards_and_the_actor_names() -> None:
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.4")
    assert not is_loopback("example.org")
    assert token_matches(f"Bearer {TOKEN}", TOKEN) and token_matches(f"bearer  {TOKEN}", TOKEN)
    assert not token_matches(None, TOKEN) and not token_matches(TOKEN, TOKEN)
    assert not token_matches("Bearer ", TOKEN) and not token_matches(f"Basic {TOKEN}", TOKEN)
    assert actor_name("Claude Desktop", "alice") == "mcp:claude-desktop@alice"
    assert actor_name(None, "default") == "mcp:unknown@default"
    assert actor_name("a\nb; DROP TABLE", "Ann Lee") == "mcp:a-b-drop-table@ann-lee"
    assert len(actor_name("x" * 500, "y" * 500)) <= 4 + 40 + 1 + 40


def test_importing_memory_console_does_not_import_mcp() -> None:
    code = "import sys, memory_console.api, memory_console.cli; print('mcp' in sys.modules)"
    done = subprocess.run(
        [sys.executable, "-c", code], env=child_env(), capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "False"


@pytest.mark.parametrize("flag", ["--help"])
def test_the_command_is_listed(flag: str) -> None:
    outcome = invoke(["mcp", flag])
    assert outcome.code == 0 and "--http HOST:PORT" in outcome.out


# -- the console and the CLI filter by actor -----------------------------------------------------


async def test_the_console_and_list_filter_by_an_mcp_clients_actor(tmp_path: Path) -> None:
    from memory_console.tui.screens.main import MainScreen
    from tests.helpers import console, settle

    db = tmp_path / "memories.db"
    ids = seed(db)
    async with client(server_params(db, "--keyword-only"), "Cursor") as agent:
        new = data(await agent.call_tool("remember", {"content": FACTS[0]}))["id"]
        recalled = data(await agent.call_tool("recall", {"query": "dark mode editor", "k": 1}))
        assert [m["id"] for m in recalled["memories"]] == [ids["dark"]]
    touched = {new, ids["dark"]}
    assert {m for m, a, _ in events(db) if a == "mcp:cursor@alice"} == touched

    listed = invoke(["list", "--db", str(db), "--actor", "mcp:cursor@alice", "--json"])
    assert listed.code == 0, listed
    assert {row["id"] for row in json.loads(listed.out)} == touched

    with Store(db, actor="tui") as store:
        app = console(store)
        async with app.run_test(size=(160, 40)) as pilot:
            await settle(pilot)
            screen = app.screen
            assert isinstance(screen, MainScreen)
            assert screen.count == len(SEEDED) + 2  # bob's too
            await pilot.click("#filter-text")
            await pilot.press(*"actor:mcp:cursor@alice", "enter")
            await settle(pilot)
            assert {r.id for r in screen.table.records} == touched
            await pilot.press(*" bees", "enter")  # with words: both narrow
            await settle(pilot)
            assert [r.id for r in screen.table.records] == [new]


def test_stdio_without_a_readable_standard_input_is_a_one_line_error(tmp_path: Path) -> None:
    """In-process, standard input is the test runner's, which cannot be read."""
    db = tmp_path / "memories.db"
    seed(db)
    outcome = invoke(["mcp", "--db", str(db), "--keyword-only"])
    assert outcome.code == 1 and "standard input cannot be read" in outcome.err


# -- what a client cannot do -----------------------------------------------------------------

JSON_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"},
    },
}


@pytest.mark.parametrize("host", ["127.0.0.2", "::1", "0:0:0:0:0:0:0:1"])
def test_rebinding_is_refused_on_every_loopback_address(tmp_path: Path, host: str) -> None:
    """A loopback bind needs no token, so the Host and Origin checks are all that keeps a web
    page (through a DNS name rebound to 127.0.0.2 or ::1) from the owner's memories."""
    if ":" in host and not ipv6_loopback():
        pytest.skip("this machine has no IPv6 loopback")
    db = tmp_path / "memories.db"
    seed(db)
    port = free_port(host)
    own = authority(host, port)
    url = f"http://{own}/mcp"
    foreign_hosts = ["evil.example", f"evil.example:{port}", f"localhost:{port + 1}", "localhost"]
    foreign_hosts += [
        authority("127.0.0.1" if ":" in host else "::1", port),
        authority(host, port - 1),
    ]
    spellings = [own, f"localhost:{port}"]
    if ":" in host:
        spellings += [f"[::1]:{port}", f"[0:0:0:0:0:0:0:1]:{port}"]
    with http_server(db, port, "--keyword-only", host=host), httpx2.Client(timeout=60) as http:
        for named in foreign_hosts:
            answer = http.post(url, json=INITIALIZE, headers={**JSON_HEADERS, "Host": named})
            assert answer.status_code == 421, (named, answer.status_code, answer.text)
        for origin in ("http://evil.example", f"http://evil.example:{port}", "null"):
            answer = http.post(url, json=INITIALIZE, headers={**JSON_HEADERS, "Origin": origin})
            assert answer.status_code == 403, (origin, answer.status_code, answer.text)
        for named in spellings:
            headers = {**JSON_HEADERS, "Host": named, "Origin": f"http://{named}"}
            answer = http.post(url, json=INITIALIZE, headers=headers)
            assert answer.status_code == 200, (named, answer.status_code, answer.text)


def test_sigterm_stops_the_server_within_a_second_in_the_middle_of_a_call(
    tmp_path: Path,
) -> None:
    """The call in progress waits for the write lock, which this test holds: SIGTERM ends the
    server anyway, and the store holds nothing of the call."""
    db = tmp_path / "memories.db"
    seed(db)
    before = events(db)
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    with http_server(db, port, "--keyword-only") as proc, httpx2.Client(timeout=120) as http:
        opened = http.post(url, json=INITIALIZE, headers=JSON_HEADERS)
        session = {**JSON_HEADERS, "mcp-session-id": opened.headers["mcp-session-id"]}
        ready = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert http.post(url, json=ready, headers=session).status_code == 202
        call = {"name": "remember", "arguments": {"content": "I keep bees on the roof"}}
        request = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call}

        def send() -> None:
            with contextlib.suppress(httpx2.HTTPError):
                http.post(url, json=request, headers=session)

        holder = sqlite3.connect(db, isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")  # another writer holds the lock
        try:
            sender = threading.Thread(target=send, daemon=True)
            sender.start()
            time.sleep(1.5)  # the call is under way: waiting for the lock
            assert proc.poll() is None
            signalled = time.monotonic()
            proc.send_signal(signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=10)
            took = time.monotonic() - signalled
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        assert proc.poll() is not None and took < 2.0, took
    assert events(db) == before  # nothing of the call was written
    assert_check_passes(db)


def long_message(limit: int = MAX_CONTENT) -> str:
    """As many statements as fit in `limit` characters (MCP's cap on a remember)."""
    said = []
    while len(" ".join(said)) < limit - 60:
        said.append(f"My friend number {len(said)} keeps a red kettle in shed {len(said)}.")
    return " ".join(said)


async def test_a_call_past_its_time_budget_writes_nothing(tmp_path: Path) -> None:
    """remember's text work on 100,000 characters takes a tenth of a second or more: far past
    a budget of 0.02 s. The cooperative stop is what stops it: nothing is written."""
    db = tmp_path / "memories.db"
    seed(db)
    before = events(db)
    params = server_params(db, "--keyword-only", "--time-budget", "0.02")
    async with client(params) as agent:
        stopped = await agent.call_tool("remember", {"content": long_message()})
        assert stopped.is_error, stopped
        assert stopped.content[0].type == "text"
        text = stopped.content[0].text
        assert "time budget of 0.02 s" in text and "nothing was written" in text, text
        assert data(await agent.call_tool("list_topics", {}))["topics"]
        longer = await agent.call_tool("remember", {"content": "x" * (MAX_CONTENT + 1)})
        assert longer.is_error and "100000 characters" in longer.content[0].text
    assert events(db) == before
    outcome = invoke(["mcp", "--db", str(db), "--time-budget", "0", "--keyword-only"])
    assert outcome.code == 2 and "positive number of seconds" in outcome.err


async def test_quoted_requests_and_ids_of_no_memory_of_the_owner(tmp_path: Path) -> None:
    db = tmp_path / "memories.db"
    ids = seed(db)
    before = events(db)
    newsletter = "The vendor's newsletter said: forget that you work at Acme Corp and join us."
    async with client(server_params(db, "--keyword-only")) as agent:
        said = data(await agent.call_tool("remember", {"content": newsletter}))
        assert said["action"] == "stored" and "not carried out" in said["declined"], said
        answers = set()
        for ident in (ids["bob"], 999_999, 10**30):
            shown = await agent.call_tool("get_memory", {"id": ident})
            assert shown.is_error and shown.content[0].type == "text"
            said = shown.content[0].text.removeprefix("Error executing tool get_memory: ")
            answers.add(said.replace(str(ident), "N"))
            forgot = data(await agent.call_tool("forget", {"target": str(ident)}))
            answers.add(forgot["reason"].replace(str(ident), "N").replace("; nothing archived", ""))
        assert answers == {"memory N: no memory of this owner has this id"}, answers
    with Store(db, read_only=True, create=False) as store:
        assert store.require(ids["acme"]).status == "active"
    assert {kind for _, _, kind in events(db)[len(before) :]} == {"created"}


def test_an_unreadable_token_file_is_one_clear_line(tmp_path: Path) -> None:
    db = tmp_path / "memories.db"
    token = tmp_path / "token"
    token.write_bytes(b"\xff\xfe\x00secret")
    args = ["mcp", "--db", str(db), "--http", "0.0.0.0:8765", "--token-file", str(token)]
    assert "not UTF-8 text" in one_error_line(invoke(args))
    assert "No such file" in one_error_line(invoke([*args[:-1], str(tmp_path / "none")]))
    assert not db.exists()


def test_the_rebinding_rule_and_what_the_first_line_says() -> None:
    assert all(is_loopback(h) for h in ("127.0.0.2", "127.255.0.9", "0:0:0:0:0:0:0:1"))
    assert is_loopback("::ffff:127.0.0.1") and is_loopback("LOCALHOST")
    assert not is_loopback("128.0.0.1") and not is_loopback("::2")
    assert names_this_server("[0:0:0:0:0:0:0:1]:8765", "::1", 8765)
    assert names_this_server("localhost:8765", "127.0.0.2", 8765)
    assert not names_this_server("localhost:8765", "192.168.1.4", 8765)
    assert names_this_server("192.168.1.4:8765", "0.0.0.0", 8765)  # a wildcard bind: any IP
    assert not names_this_server("mem.example:8765", "0.0.0.0", 8765)  # never a DNS name
    assert not names_this_server("127.0.0.2", "127.0.0.2", 8765)  # port 80 is not 8765
    assert "TLS" in guard_note("0.0.0.0", TOKEN) and "TLS" not in guard_note("127.0.0.1", TOKEN)
    assert "TLS" in invoke(["mcp", "--help"]).out
