"""MCP: the operations as tools for a model, over stdio and streamable HTTP.

``server`` builds the tool server on the dispatcher, ``tools`` says what each tool tells a
model (from the operation table) and how omitted identities are filled in, ``stdio`` and
``http`` are the two transports, ``extra`` asks whether the optional SDK is installed.

Importing this package loads no MCP SDK: ``extra`` must be able to say "install the extra"
on a machine without it, and the configuration imports ``tools``. The tool server's names
are still importable from here (``from memorywire.server.mcp import build_mcp_server``), each
loaded on first use.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memorywire.server.mcp.server import (
        PRINCIPAL_SCOPE_KEY,
        build_mcp_server,
        is_destructive,
    )
    from memorywire.server.mcp.tools import TOOLS, ToolDefaults

__all__ = ["PRINCIPAL_SCOPE_KEY", "TOOLS", "ToolDefaults", "build_mcp_server", "is_destructive"]

_HOME = {
    "PRINCIPAL_SCOPE_KEY": "memorywire.server.mcp.server",
    "build_mcp_server": "memorywire.server.mcp.server",
    "is_destructive": "memorywire.server.mcp.server",
    "TOOLS": "memorywire.server.mcp.tools",
    "ToolDefaults": "memorywire.server.mcp.tools",
}


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(home), name)
