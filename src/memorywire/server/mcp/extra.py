"""Whether the optional MCP SDK is installed, asked before anything imports it.

``pip install memorywire`` brings the CLI, the embedded store and the HTTP server; the MCP
transports need the ``mcp`` extra. Checking here turns a bare ``No module named 'mcp'`` deep in
an import chain into an error that says which command installs it.
"""

from __future__ import annotations

from importlib.util import find_spec

from memorywire.errors import CapabilityMissing

__all__ = ["INSTALL_HINT", "mcp_available", "require_mcp"]

INSTALL_HINT = 'pip install "memorywire[mcp]"'


def mcp_available() -> bool:
    return all(find_spec(name) is not None for name in ("mcp", "mcp_types"))


def require_mcp(what: str = "MCP") -> None:
    if not mcp_available():
        raise CapabilityMissing(
            f"{what} needs the MCP SDK, which is an optional extra; install it with: "
            f"{INSTALL_HINT}"
        )
