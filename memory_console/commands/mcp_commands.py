"""The `mcp` subcommand: serve the store to agents as an MCP memory server (stdio or HTTP)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from memory_console.commands import common

DEFAULT_OWNER = "default"
CALL_BUDGET = 10.0  # seconds one tool call may take (--time-budget)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    mcp = subparsers.add_parser(
        "mcp",
        description="Run an MCP memory server on the store: the tools remember, recall, "
        "forget, list_memories, list_topics, get_memory and clear, each a call into the "
        "agent API for one owner. Over stdio by default (an MCP client starts this command); "
        "--http serves streamable HTTP at http://HOST:PORT/mcp, on loopback unless a bearer "
        "token is given (--token-file, else $MEMORY_CONSOLE_MCP_TOKEN); off loopback, put TLS "
        "in front (a reverse proxy), or the token and the memories cross the network in "
        "clear. Every HTTP request must name the server in its Host header (the bound address "
        "and port, or localhost on loopback) and come from no foreign Origin: a web page "
        "cannot reach it through a rebound DNS name. Each call has a time budget "
        "(--time-budget): one past it is stopped before it writes anything. Every event a "
        "client causes names it as actor mcp:CLIENT@OWNER. --read-only refuses remember, "
        "forget and clear, and recall then reinforces nothing.",
        epilog=common.examples(
            "mcp --db memories.db --owner alice",
            "mcp --db memories.db --http 127.0.0.1:8765",
            "mcp --db memories.db --http 0.0.0.0:8765 --token-file ~/.mcp-token --read-only",
        ),
    )
    common.add_common(mcp, json_output=False)
    mcp.add_argument(
        "--owner",
        type=common.text,
        default=DEFAULT_OWNER,
        help=f"whose memories the server keeps (default: {DEFAULT_OWNER}); never a tool argument",
    )
    mcp.add_argument(
        "--http",
        metavar="HOST:PORT",
        type=common.text,
        help="serve streamable HTTP instead of stdio (e.g. 127.0.0.1:8765)",
    )
    mcp.add_argument(
        "--token-file",
        metavar="PATH",
        help="a file holding the bearer token HTTP clients must send (required off loopback, "
        "with TLS in front; default: $MEMORY_CONSOLE_MCP_TOKEN)",
    )
    mcp.add_argument(
        "--time-budget",
        metavar="SECONDS",
        type=seconds,
        default=CALL_BUDGET,
        help="how long one tool call may take before it is stopped, nothing written "
        "(default: %(default)s)",
    )
    mcp.add_argument(
        "--keyword-only",
        action="store_true",
        help="do not load the embedder: keyword recall, exact duplicates only",
    )
    mcp.set_defaults(handler=cmd_mcp)


def seconds(value: str) -> float:
    """A positive number of seconds, for --time-budget."""
    try:
        number = float(value)
    except ValueError:
        number = float("nan")
    if not 0 < number < float("inf"):
        raise argparse.ArgumentTypeError(f"not a positive number of seconds: {value!r}")
    return number


def parse_bind(value: str) -> tuple[str, int]:
    """HOST:PORT (an IPv6 host in brackets) as (host, port)."""
    host, sep, port = value.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise common.UsageError(f"--http {value!r}: expected HOST:PORT, e.g. 127.0.0.1:8765")
    return host, int(port)


def read_token(path: str | None) -> str | None:
    """The bearer token from --token-file, else $MEMORY_CONSOLE_MCP_TOKEN; None when neither
    is given. An empty one is an error, never a token."""
    from memory_console.agent.mcp_server import TOKEN_VARIABLE

    if path is not None:
        where = f"--token-file {path}"
        try:
            token = Path(path).expanduser().read_text(encoding="utf-8").strip()
        except UnicodeDecodeError as error:
            raise common.UserError(f"{where}: not UTF-8 text ({error.reason})") from error
        except OSError as error:
            raise common.UserError(f"{where}: {error.strerror or error}") from error
    elif os.environ.get(TOKEN_VARIABLE) is not None:
        token = os.environ[TOKEN_VARIABLE].strip()
        where = f"${TOKEN_VARIABLE}"
    else:
        return None
    if not token or any(ch.isspace() for ch in token):
        raise common.UserError(f"{where}: the token must be one non-empty word")
    return token


def stdin_readable() -> bool:
    """Whether standard input is there to read MCP messages from (a closed or captured one is
    not: the stdio server would fail on its first read)."""
    try:
        return sys.stdin is not None and not sys.stdin.closed and sys.stdin.readable()
    except (OSError, ValueError):
        return False


def http_url(host: str, port: int) -> str:
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/mcp"


def guard_note(host: str, token: str | None) -> str:
    """What guards an HTTP server, for its first line: the token, and TLS off loopback."""
    from memory_console.agent.mcp_server import is_loopback

    if token is None:
        return "loopback, no token"
    if is_loopback(host):
        return "bearer token required"
    return (
        "bearer token required; put TLS in front (a reverse proxy): without it the token "
        "and the memories cross the network in clear"
    )


def cmd_mcp(args: argparse.Namespace) -> int:
    from memory_console.agent.mcp_server import (
        MemoryTools,
        build_server,
        is_loopback,
        serve_http,
        serve_stdio,
    )
    from memory_console.api import MemoryAPI

    bind = parse_bind(args.http) if args.http else None
    token = read_token(args.token_file)
    if bind is not None and token is None and not is_loopback(bind[0]):
        raise common.UserError(
            f"--http {args.http}: serving beyond this machine needs a bearer token "
            "(--token-file PATH or $MEMORY_CONSOLE_MCP_TOKEN)"
        )
    if bind is None and args.token_file:
        raise common.UsageError("--token-file applies to --http only")
    if bind is None and not stdin_readable():
        raise common.UserError(
            "standard input cannot be read: an MCP client starts this command with pipes "
            "(or serve HTTP with --http 127.0.0.1:PORT)"
        )
    store = common.open_store(args, create=True, actor="mcp")
    manifest = common.settings_of(args).model_manifest
    try:
        api = MemoryAPI(
            store,
            owner=args.owner,
            semantic=not args.keyword_only,
            manifest=str(manifest) if manifest else None,
        )
        # The embedder loads here, once per server, before the first client waits on it.
        if not api.semantic_ready and api.semantic_error:
            common.note(f"keyword recall only: {api.semantic_error}")
        now = common.now_of(args) if getattr(args, "now", None) else None
        tools = MemoryTools(api, read_only=store.read_only, now=now, budget=args.time_budget)
        server = build_server(tools)
        mode = "read-only" if store.read_only else "writable"
        if bind is None:
            common.note(f"MCP server on stdio: {store.location} ({mode}), owner {args.owner}")
            serve_stdio(server)
        else:
            common.note(
                f"MCP server at {http_url(*bind)}: {store.location} ({mode}), "
                f"owner {args.owner}, {guard_note(bind[0], token)}"
            )
            serve_http(server, tools, bind[0], bind[1], token)
    finally:
        store.close()
    sys.stderr.flush()
    return 0
