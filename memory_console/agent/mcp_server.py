"""The MCP memory server: MemoryAPI's calls as Model Context Protocol tools, over stdio or HTTP.

See docs/ARCHITECTURE.md, "The MCP server". One MemoryAPI (one Store, one embedder) serves
every client; calls run one at a time, each within a time budget, and each names its client as
the events' actor. Over HTTP every request must name this server in its Host header (and any
Origin too), so that a web page cannot reach it through a rebound DNS name.
Only `memory-console mcp` imports this module: importing memory_console never imports mcp.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import os
import re
import threading
import time
from collections.abc import Awaitable, Callable, Iterator, MutableMapping
from contextlib import contextmanager
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field

from memory_console import __version__
from memory_console.agent.api import MemoryAPI
from memory_console.agent.forgetting import NOT_FOUND, ClearResult, ForgetResult, owned
from memory_console.agent.results import RememberResult
from memory_console.commands.render import forecast_json, memory_json
from memory_console.store import MemoryFilter, MemoryRecord
from memory_console.store.vocab import MEMORY_TYPES, TOPICS
from memory_console.timeutil import now_ts

SERVER_NAME = "memory-console"
TOKEN_VARIABLE = "MEMORY_CONSOLE_MCP_TOKEN"
MAX_K = 50
# Characters a remember may hand over: "one or two sentences" in the tool's words, with room to
# spare. Longer texts are documents (the console's importers take them); the cap also keeps each
# step of remember's text work short, so that a spent budget or SIGTERM stops it promptly.
MAX_CONTENT = 100_000
MAX_QUERY = 2_000  # characters of a recall query or a forget phrase
# Seconds after SIGTERM before a call still running (waiting for the write lock, or inside one
# step of its work) is abandoned and the process ends: its transaction, if any, is rolled back.
STOP_GRACE = 0.8
# Seconds uvicorn waits after SIGTERM for open streams before it cancels them (it takes any
# number, though its annotation says int).
STREAMS_GRACE: Any = 0.3
ACTOR_PART = 40  # characters kept of a client's name and of the owner in an actor
WRITING_TOOLS = ("remember", "forget", "clear")
INSTRUCTIONS = (
    "Long-term memory of one person (the server's owner). Call recall before answering "
    "from memory, remember for facts, preferences and decisions worth keeping (never "
    "secrets: they are refused), forget when the user asks to. Every call is logged with "
    "this client's name, and the operator can see and undo it."
)

Scope = MutableMapping[str, Any]
ASGIApp = Callable[[Scope, Callable[[], Awaitable[Any]], Callable[[Any], Awaitable[None]]], Any]


def actor_name(client: str | None, owner: str) -> str:
    """`mcp:CLIENT@OWNER`, each part lower-case letters, digits and `.`, `_`, `-` only, so
    an actor is one short word the console can show and filter on; an unnamed client is
    `unknown`."""
    return f"mcp:{_word(client) or 'unknown'}@{_word(owner) or 'default'}"


def _word(text: str | None) -> str:
    cleaned = re.sub(r"[^a-z0-9._-]+", "-", (text or "").strip().lower()).strip("-.")
    return cleaned[:ACTOR_PART]


def is_loopback(host: str) -> bool:
    """Whether binding `host` serves this machine only (no token is needed then): localhost,
    any address of 127.0.0.0/8, ::1 however it is spelled (::ffff:127.0.0.1 too)."""
    if host.lower().rstrip(".") == "localhost":
        return True
    address = ip_of(host)
    return address is not None and address.is_loopback


def ip_of(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """The address a host names when it is an IP literal (an IPv4-mapped IPv6 address as its
    IPv4 address), else None."""
    try:
        address = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def split_host(value: str) -> tuple[str, int | None]:
    """A Host header's (or an origin's) host and port: `name:port`, `[v6]:port`, or without a
    port (None)."""
    value = value.strip()
    if value.startswith("["):
        host, _, rest = value[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else ""
    elif value.count(":") == 1:
        host, _, port = value.partition(":")
    else:
        host, port = value, ""
    return host.lower(), (int(port) if port.isdigit() and len(port) <= 5 else None)


def names_this_server(value: str, bound: str, port: int, default_port: int = 80) -> bool:
    """Whether a Host header (or an origin's host and port) names the server bound at
    bound:port: the bound address however spelled (any IP literal on a wildcard bind), or
    localhost on a loopback bind, with the bound port. A DNS name other than localhost never
    does: a rebinding attack needs one."""
    host, named_port = split_host(value)
    if (named_port if named_port is not None else default_port) != port or not host:
        return False
    if host.rstrip(".") == "localhost":
        return is_loopback(bound)
    address, own = ip_of(host), ip_of(bound)
    if address is None:
        return host == bound.lower()
    if own is None:  # bound by name: localhost's addresses
        return bound.lower() == "localhost" and address.is_loopback
    return address == own or own.is_unspecified


def origin_names_this_server(origin: str, bound: str, port: int) -> bool:
    """Whether an Origin header is this server's own page (http or https, same host and port)."""
    scheme, separator, rest = origin.strip().partition("://")
    if not separator or scheme.lower() not in ("http", "https") or "/" in rest:
        return False
    return names_this_server(rest, bound, port, 443 if scheme.lower() == "https" else 80)


def host_guard(app: ASGIApp, bound: str, port: int) -> ASGIApp:
    """The HTTP app behind the DNS-rebinding check, on every address: a request whose Host
    does not name this server gets 421, one from a foreign Origin 403 (a browser sends
    Origin with a page's requests; an MCP client sends none)."""

    async def guarded(scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = [(k, v.decode("latin-1")) for k, v in scope.get("headers") or []]
            hosts = [value for key, value in headers if key == b"host"]
            origins = [value for key, value in headers if key == b"origin"]
            refusal = None
            if len(hosts) != 1 or not names_this_server(hosts[0], bound, port):
                refusal = (421, "the Host header does not name this server")
            elif len(origins) > 1 or (
                origins and not origin_names_this_server(origins[0], bound, port)
            ):
                refusal = (403, "requests from another origin are refused")
            if refusal is not None:
                await refuse(send, *refusal)
                return
        await app(scope, receive, send)

    return guarded


async def refuse(send: Any, status: int, error: str, headers: tuple[Any, ...] = ()) -> None:
    """Answer an HTTP request with a status and a one-line JSON error."""
    body = json.dumps({"error": error}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


def token_matches(header: str | None, token: str) -> bool:
    """Whether an Authorization header carries the bearer token (compared in constant time)."""
    if not header or not header.lower().startswith("bearer "):
        return False
    return hmac.compare_digest(header[7:].strip().encode(), token.encode())


def bearer_guard(app: ASGIApp, token: str) -> ASGIApp:
    """The HTTP app behind a bearer-token check on every request (401 without it); the token
    is compared, never logged."""

    async def guarded(scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = dict(scope.get("headers") or [])
            header = headers.get(b"authorization", b"").decode("latin-1")
            if not token_matches(header, token):
                error = "unauthorized: a bearer token is required"
                await refuse(send, 401, error, ((b"www-authenticate", b"Bearer"),))
                return
        await app(scope, receive, send)

    return guarded


def result(text: str, data: dict[str, Any]) -> CallToolResult:
    """A tool's answer: a short text for the model, the structured content for programs."""
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data)


def memory_data(record: MemoryRecord) -> dict[str, Any]:
    """A memory as the tools return it: the export fields, credentials masked (what an agent
    reads goes to its model's provider)."""
    return memory_json(record)


def brief(record: MemoryRecord) -> dict[str, Any]:
    data = memory_json(record)
    return {key: data[key] for key in ("id", "topic", "title", "content", "status")}


class MemoryTools:
    """The tools over one MemoryAPI; one call at a time, each under its client's actor and
    within `budget` seconds (remember's text work checks it between its steps, and a call past
    it is stopped before anything is written: the writes come last, in one transaction);
    `stopping` set (SIGTERM) stops the call in progress alike."""

    def __init__(
        self,
        api: MemoryAPI,
        *,
        read_only: bool = False,
        now: float | None = None,
        budget: float,
    ) -> None:
        self.api = api
        self.now = now  # a fixed clock (--now), else each call's own time
        self.read_only = read_only or api.store.read_only
        self.budget = budget
        self.stopping = threading.Event()
        self._lock = threading.Lock()

    @contextmanager
    def acting(self, ctx: Context | None, tool: str) -> Iterator[MemoryAPI]:
        """The API for one call, its store's actor naming the calling client; a writing tool
        on a read-only server is refused before anything is touched. The call's budget
        starts now: waiting for another client's call counts, and the API's checkpoint stops
        the call once it is spent, or once the server is stopping."""
        if self.read_only and tool in WRITING_TOOLS:
            raise ToolError(f"{tool} refused: this memory server is read-only")
        client = None
        if ctx is not None:
            params = ctx.session.client_params
            client = params.client_info.name if params is not None else None
        deadline = time.monotonic() + self.budget
        while not self._lock.acquire(timeout=0.05):
            self.check(tool, deadline, waiting=True)
        try:
            self.check(tool, deadline)
            store = self.api.store
            before = store.actor
            store.actor = actor_name(client, self.api.owner)
            self.api.checkpoint = lambda: self.check(tool, deadline)
            try:
                yield self.api
            finally:
                store.actor = before
                self.api.checkpoint = None
        finally:
            self._lock.release()

    def check(self, tool: str, deadline: float, *, waiting: bool = False) -> None:
        """Stop the call (a ToolError: nothing of it is written yet) when the server is
        stopping or the call's budget is spent."""
        if self.stopping.is_set():
            raise ToolError(f"{tool} stopped: the server is shutting down; nothing was written")
        if time.monotonic() > deadline:
            why = "waited for another client's call" if waiting else "ran"
            raise ToolError(
                f"{tool} {why} past its time budget of {self.budget:g} s and was stopped; "
                "nothing was written"
            )

    # -- the tools ----------------------------------------------------------------------------

    def remember(
        self,
        content: Annotated[
            str,
            Field(
                max_length=MAX_CONTENT,
                description="The fact, preference or decision to keep, in one or two "
                "sentences, e.g. 'The user prefers dark mode'. 'Remember that ...' marks "
                "the user's own request (kept with full importance).",
            ),
        ],
        topic: Annotated[
            Literal[TOPICS] | None,  # type: ignore[valid-type]
            Field(description="Where it belongs; inferred from the text when omitted."),
        ] = None,
        type: Annotated[
            Literal[MEMORY_TYPES] | None,  # type: ignore[valid-type]
            Field(
                description="semantic (a lasting fact), episodic (an event: it fades) or "
                "procedural (how to do something); classified from the text when omitted."
            ),
        ] = None,
        ctx: Context | None = None,
    ) -> CallToolResult:
        """Store a memory for the user. Secrets (passwords, keys, card numbers) are refused,
        and health data unless the user asked; a near-duplicate reinforces the memory it
        repeats instead of storing a second one. A request such as 'forget that ...' or
        'what do you remember about me' is carried out, not stored, when it is the user's own
        words: one the text quotes or reports ('the email said: forget ...') is not, and the
        answer's 'declined' says so. A text of several statements is a memory per statement,
        at most 50; 'left_out' counts the rest."""
        with self.acting(ctx, "remember") as api:
            done = api.remember(content, topic=topic, memory_type=type, now=self.now)
        return remember_result(done)

    def recall(
        self,
        query: Annotated[
            str, Field(max_length=MAX_QUERY, description="What to look for, in plain words.")
        ],
        k: Annotated[
            int, Field(ge=1, le=MAX_K, description="How many memories to return at most.")
        ] = 5,
        topic: Annotated[
            Literal[TOPICS] | None,  # type: ignore[valid-type]
            Field(description="Only memories of this topic."),
        ] = None,
        ctx: Context | None = None,
    ) -> CallToolResult:
        """The user's memories that best answer a query, best first, each with its scores
        (similarity, importance and age combined). Recalling reinforces them and logs the
        access."""
        with self.acting(ctx, "recall") as api:
            if self.read_only:
                hits = peek(api, query, k, topic, self.now or now_ts())
            else:
                hits = [
                    (h.record, h.scores) for h in api.recall(query, k=k, topic=topic, now=self.now)
                ]
        found = [{**memory_data(record), "scores": scores} for record, scores in hits]
        lines = [f"#{m['id']} [{m['topic']}] {m['content']}" for m in found]
        text = "\n".join(lines) if lines else "no memory matches"
        return result(text, {"memories": found})

    def forget(
        self,
        target: Annotated[
            str,
            Field(
                max_length=MAX_QUERY,
                description="A memory id (e.g. '42'), or what to forget in the user's words "
                "(e.g. 'that I work at Acme Corp'): the one memory it clearly means is "
                "archived, a weak or ambiguous match archives nothing and lists the nearest.",
            ),
        ],
        reason: Annotated[
            str | None,
            Field(
                description="Why, kept in the memory's history (for an id; a phrase "
                "is its own reason)."
            ),
        ] = None,
        ctx: Context | None = None,
    ) -> CallToolResult:
        """Forget a memory: archive it (the operator can restore it). Protected memories are
        never forgotten this way; the answer lists them."""
        with self.acting(ctx, "forget") as api:
            done = api.forget(target.strip(), reason=reason, now=self.now)
        return result(done.reason, forget_data(done))

    def list_memories(
        self,
        topic: Annotated[
            Literal[TOPICS] | None,  # type: ignore[valid-type]
            Field(description="Only this topic."),
        ] = None,
        ctx: Context | None = None,
    ) -> CallToolResult:
        """Everything remembered about the user ('what do you remember about me'): the
        active memories by topic, newest first. Listing is not recalling: nothing changes."""
        with self.acting(ctx, "list_memories") as api:
            records = api.list_memories(topic)
        listed = [brief(record) for record in records]
        lines = [f"#{m['id']} [{m['topic']}] {m['content']}" for m in listed]
        about = f" about {topic}" if topic else ""
        head = f"{len(listed)} active memories{about}"
        return result("\n".join([head, *lines]), {"count": len(listed), "memories": listed})

    def list_topics(self, ctx: Context | None = None) -> CallToolResult:
        """The topics the user's active memories are filed under, with how many each holds."""
        with self.acting(ctx, "list_topics") as api:
            scope = MemoryFilter(owner=api.owner, status="active")
            rows = api.store.counts_by("topic", memory_filter=scope)
        topics = [{"topic": str(topic), "count": int(count)} for topic, count in rows]
        text = ", ".join(f"{t['topic']} ({t['count']})" for t in topics) or "no memories yet"
        return result(text, {"topics": topics})

    def get_memory(
        self,
        id: Annotated[int, Field(ge=1, description="The memory's id, as recall returns it.")],
        ctx: Context | None = None,
    ) -> CallToolResult:
        """One of the user's memories in full, with its forecast: how its confidence will
        fade and when it reaches the floor (or why it does not decay)."""
        with self.acting(ctx, "get_memory") as api:
            # Another owner's id is answered as an absent one: no client learns which exist.
            record = owned(api.store, id, api.owner)
            if record is None:
                raise ToolError(f"memory {id}: {NOT_FOUND}")
            params = api.store.settings().params()
        data = memory_data(record)
        data["forecast"] = forecast_json(record, self.now or now_ts(), params)
        until = data["forecast"]["reaches_floor_at"]
        fades = f"; reaches the floor {until}" if until else ""
        text = f"#{record.id} [{record.topic}, {record.status}] {data['content']}{fades}"
        return result(text, data)

    def clear(
        self,
        confirm: Annotated[
            str | None,
            Field(
                description="Omit on the first call: nothing is archived and the answer "
                "holds a token. Ask the user, then call again with that token to archive."
            ),
        ] = None,
        ctx: Context | None = None,
    ) -> CallToolResult:
        """Clear all the user's memories ('clear all my memories'), in two calls so that one
        stray call cannot: archived (restorable), protected ones kept."""
        with self.acting(ctx, "clear") as api:
            done = api.clear(confirm or None, now=self.now)
        return result(done.reason, clear_data(done))


def peek(
    api: MemoryAPI, query: str, k: int, topic: str | None, now: float
) -> list[tuple[MemoryRecord, dict[str, Any]]]:
    """recall's ranking without its writes, for a read-only server: nothing is reinforced
    and no access is logged (a read-only store cannot record them)."""
    scores = api.rank(query, k=k, topic=topic, now=now)
    records = api.store.get_many(list(scores))
    return [(records[i], scores[i]) for i in scores if i in records]


def remember_result(done: RememberResult) -> CallToolResult:
    data: dict[str, Any] = {"action": done.action, "id": done.id, "reason": done.reason}
    if done.topic is not None:
        data["topic"] = done.topic
    if done.similarity is not None:
        data["similarity"] = done.similarity
    if done.forgotten is not None:
        data["forgotten"] = forget_data(done.forgotten)
    if done.listed is not None:
        data["memories"] = [brief(record) for record in done.listed]
    if done.cleared is not None:
        data["cleared"] = clear_data(done.cleared)
    if done.parts:
        data["parts"] = [
            {"action": part.action, "id": part.id, "reason": part.reason} for part in done.parts
        ]
    if done.left_out:
        data["left_out"] = done.left_out
    if done.declined is not None:
        data["declined"] = done.declined
    ident = f" memory {done.id}" if done.id is not None and done.action != "forgot" else ""
    return result(f"{done.action}{ident}: {done.reason}", data)


def forget_data(done: ForgetResult) -> dict[str, Any]:
    return {
        "archived": [brief(r) for r in done.archived],
        "protected": [brief(r) for r in done.protected],
        "candidates": [{**brief(r), "cosine": c} for r, c in done.candidates],
        "reason": done.reason,
    }


def clear_data(done: ClearResult) -> dict[str, Any]:
    return {
        "archived": [r.id for r in done.archived],
        "pending": done.pending,
        "protected": [r.id for r in done.protected],
        "token": done.token,
        "reason": done.reason,
    }


def build_server(tools: MemoryTools) -> MCPServer:
    """The MCP server with every tool, each described for the agent and annotated (read-only,
    destructive) for its client."""
    server: MCPServer = MCPServer(
        SERVER_NAME, instructions=INSTRUCTIONS, version=__version__, log_level="WARNING"
    )
    reading = ToolAnnotations(read_only_hint=True, open_world_hint=False)
    table: list[tuple[Callable[..., CallToolResult], ToolAnnotations]] = [
        (tools.remember, ToolAnnotations(read_only_hint=False, destructive_hint=False)),
        (tools.recall, ToolAnnotations(read_only_hint=False, destructive_hint=False)),
        (tools.forget, ToolAnnotations(read_only_hint=False, destructive_hint=True)),
        (tools.list_memories, reading),
        (tools.list_topics, reading),
        (tools.get_memory, reading),
        (tools.clear, ToolAnnotations(read_only_hint=False, destructive_hint=True)),
    ]
    for function, hints in table:
        server.add_tool(function, annotations=hints)
    return server


def serve_stdio(server: MCPServer) -> None:
    server.run("stdio")


def serve_http(
    server: MCPServer, tools: MemoryTools, host: str, port: int, token: str | None
) -> None:
    """Streamable HTTP at http://HOST:PORT/mcp, behind the rebinding check and, when a token
    is set, the bearer check (required off loopback: the caller checks). SIGTERM stops it
    within a second, a call in progress included."""
    import anyio
    import uvicorn
    from mcp.server.transport_security import TransportSecuritySettings

    # The SDK's own Host check knows three loopback spellings only; host_guard knows them all.
    unchecked = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    app: Any = server.streamable_http_app(host=host, transport_security=unchecked)
    if token is not None:
        app = bearer_guard(app, token)
    app = host_guard(app, host, port)
    # No access log: a request line holds no token, but the log holds nothing useful either.
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level="warning",
        access_log=False,
        # Clients keep streams open: waiting for them to close would wait for ever.
        timeout_graceful_shutdown=STREAMS_GRACE,
    )
    anyio.run(stoppable(config, tools.stopping).serve)


def stoppable(config: Any, stopping: threading.Event) -> Any:
    """uvicorn's server, stopped by SIGTERM or SIGINT within STOP_GRACE seconds: `stopping`
    stops the call in progress at its next checkpoint (nothing written), open streams are
    cancelled at once, and a call still running at the end of the grace goes with the process."""
    import uvicorn

    class Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame: Any) -> None:
            if not stopping.is_set():
                stopping.set()
                threading.Thread(target=end_after_grace, args=(sig,), daemon=True).start()
            super().handle_exit(sig, frame)

    return Server(config)


def end_after_grace(sig: int) -> None:
    """End the process STOP_GRACE seconds after the signal, if it is still running then (a call
    blocked in one step of its work, or in the database's wait for its lock), with the status
    a shell gives a process the signal ended. An open transaction is rolled back by the
    database (SQLite's journal, PostgreSQL's closed connection)."""
    time.sleep(STOP_GRACE)
    os._exit(128 + sig)
