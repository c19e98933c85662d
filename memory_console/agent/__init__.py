"""The agent side: MemoryAPI (agent/api.py), the user's own requests (agent/forgetting.py), the
MCP server (agent/mcp_server.py) and the rules they decide by (agent/rules/).

See docs/ARCHITECTURE.md, "The agent API". The public entry point stays memory_console.api.
Importing this package imports nothing else: ingest/ reads two of the rules without the rest.
"""
