"""The MCP memory server: MemoryAPI's calls as Model Context Protocol tools, over stdio or HTTP.

See docs/ARCHITECTURE.md, "The MCP server". One MemoryAPI (one Store, one embedder) serves
every client; calls run one at a time, and each names its client as the events' actor.
Only `memory-console mcp` imports this module: importing memory_console never imports mcp.
"""

from __future__ import annotations

import hmac
import ipaddress
import re
import threading
from collections.abc import Awaitable, Callable, Iterator, MutableMapping
from contextlib import contextmanager
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field

from memory_console import __version__
from memory_console.api import (
    MemoryAPI,
    RememberResult,
)
from memory_console.commands.render import forecast_json, memory_json
from memory_console.forgetting import ClearResult, ForgetResult
from memory_console.store import MemoryFilter, MemoryRecord
from memory_console.store.vocab import MEMORY_TYPES, TOPICS
from memory_console.timeutil import now_ts

SERVER_NAME = "memory-console"
TOKEN_VARIABLE = "MEMORY_CONSOLE_MCP_TOKEN"
MAX_K = 50
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
    """Whether binding `host` serves this machine only (no token is needed then)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


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
                body = b'{"error": "unauthorized: a bearer token is required"}'
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [
                            (b"content-type", b"application/json"),
                            (b"www-authenticate", b"Bearer"),
                            (b"content-length", str(len(body)).encode()),
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": body})
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
    """The tools over one MemoryAPI; one call at a time, each under its client's actor."""

    def __init__(
        self, api: MemoryAPI, *, read_only: bool = False, now: float | None = None
    ) -> None:
        self.api = api
        self.now = now  # a fixed clock (--now), else each call's own time
        self.read_only = read_only or api.store.read_only
        self._lock = threading.Lock()

    @contextmanager
    def acting(self, ctx: Context | None, tool: str) -> Iterator[MemoryAPI]:
        """The API for one call, its store's actor naming the calling client; a writing tool
        on a read-only server is refused before anything is touched."""
        if self.read_only and tool in WRITING_TOOLS:
            raise ToolError(f"{tool} refused: this memory server is read-only")
        client = None
        if ctx is not None:
            params = ctx.session.client_params
            client = params.client_info.name if params is not None else None
        with self._lock:
            store = self.api.store
            before = store.actor
            store.actor = actor_name(client, self.api.owner)
            try:
                yield self.api
            finally:
                store.actor = before

    # -- the tools ----------------------------------------------------------------------------

    def remember(
        self,
        content: Annotated[
            str,
            Field(
                description="The fact, preference or decision to keep, in one or two "
                "sentences, e.g. 'The user prefers dark mode'. 'Remember that ...' marks "
                "the user's own request (kept with full importance)."
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
        'what do you remember about me' is carried out, not stored."""
        with self.acting(ctx, "remember") as api:
            done = api.remember(content, topic=topic, memory_type=type, now=self.now)
        return remember_result(done)

    def recall(
        self,
        query: Annotated[str, Field(description="What to look for, in plain words.")],
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
                description="A memory id (e.g. '42'), or what to forget in the user's words "
                "(e.g. 'that I work at Acme Corp'): the one memory it clearly means is "
                "archived, a weak or ambiguous match archives nothing and lists the nearest."
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
            record = api.store.get(id)
            if record is None or record.owner != api.owner:
                raise ToolError(f"memory {id}: {'no memory' if record is None else 'not yours'}")
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


def serve_http(server: MCPServer, host: str, port: int, token: str | None) -> None:
    """Streamable HTTP at http://HOST:PORT/mcp; behind the bearer check when a token is set
    (required off loopback: the caller checks)."""
    import anyio
    import uvicorn

    app: Any = server.streamable_http_app(host=host)
    if token is not None:
        app = bearer_guard(app, token)
    # No access log: a request line holds no token, but the log holds nothing useful either.
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", access_log=False)
    anyio.run(uvicorn.Server(config).serve)
