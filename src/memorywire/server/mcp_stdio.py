"""``memorywire mcp``: the MCP tools served on stdin/stdout to the process owner.

Kept apart from the tool server (:mod:`memorywire.server.mcp`) so that building the tools
never pulls in the setup, and the setup never pulls in a transport.
"""

from __future__ import annotations

from typing import Any

import anyio

from memorywire.server.auth import Principal
from memorywire.server.config import ServerConfig
from memorywire.server.dispatch import Dispatcher, DispatchResult
from memorywire.server.mcp_extra import require_mcp
from memorywire.server.runtime import running

__all__ = ["run_stdio"]


class _DefaultAgent(Dispatcher):
    """Fills ``agent_id`` into calls that leave it out: one MCP server per agent is how the
    first implementation's ``memorywire-mcp`` was configured (``MEMORYWIRE_AGENT``)."""

    def __init__(self, inner: Dispatcher, agent_id: str) -> None:
        super().__init__(inner.store, approvals=inner.approvals, limits=inner.limits,
                         rate_limiter=inner.rate_limiter)
        self._agent_id = agent_id

    async def dispatch(self, op: str, doc: Any, principal: Principal) -> DispatchResult:
        if isinstance(doc, dict) and "agent_id" not in doc:
            doc = {**doc, "agent_id": self._agent_id}
        return await super().dispatch(op, doc, principal)


def run_stdio(config: ServerConfig, *, default_agent: str | None = None) -> int:
    """Serve MCP on stdin/stdout until the client closes it; ``default_agent`` is the
    ``agent_id`` of calls that name none."""
    require_mcp("memorywire mcp")
    from mcp.server.stdio import stdio_server

    from memorywire.server.mcp import build_mcp_server

    async def main() -> None:
        async with running(config) as runtime:
            dispatcher = runtime.dispatcher
            if default_agent:
                dispatcher = _DefaultAgent(dispatcher, default_agent)
            server = build_mcp_server(dispatcher)
            async with stdio_server() as (read, write):
                await server.run(read, write, server.create_initialization_options())

    anyio.run(main)
    return 0
