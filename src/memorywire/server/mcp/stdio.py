"""``memorywire mcp``: the MCP tools served on stdin/stdout to the process owner.

Kept apart from the tool server (:mod:`memorywire.server.mcp.server`) so that building the tools
never pulls in the setup, and the setup never pulls in a transport.
"""

from __future__ import annotations

import anyio

from memorywire.server.config import ServerConfig
from memorywire.server.mcp.extra import require_mcp
from memorywire.server.runtime import running

__all__ = ["run_stdio"]


def run_stdio(config: ServerConfig) -> int:
    """Serve MCP on stdin/stdout until the client closes it."""
    require_mcp("memorywire mcp")
    from memorywire.server.mcp.server import build_mcp_server
    from memorywire.server.stdio_guard import guarded_stdio_server

    async def main() -> None:
        async with running(config) as runtime:
            server = build_mcp_server(runtime.dispatcher, defaults=config.tool_defaults())
            async with guarded_stdio_server(limits=config.limits()) as (read, write):
                await server.run(read, write, server.create_initialization_options())

    anyio.run(main)
    return 0
