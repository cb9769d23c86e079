"""``memorywire serve`` (REST, JSON-RPC, MCP over HTTP) and ``memorywire mcp`` (stdio).

A port that is taken, a bad configuration or a bad flag is one line on stderr and a non-zero
exit, before any model loads or any banner is printed.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from memorywire.cli.ops import _local_config, _store_flags
from memorywire.errors import MemorywireError

__all__ = ["register_serve"]

Subparsers = Any


def _serve(args: argparse.Namespace) -> int:
    from memorywire.server.app import serve
    from memorywire.server.config import load_config

    def ready(cfg: Any, where: list[tuple[str, str]]) -> None:
        mode = "WITHOUT authentication" if cfg.no_auth else f"tokens from {cfg.tokens_db}"
        n = int(cfg.workers)
        procs = ("1 worker process" if n == 1 else
                 f"{n} worker processes, each with its own model (~250 MB each); "
                 "rate limits and /metrics are per worker")
        lines = [f"memorywire serving {cfg.store} on http://{cfg.host}:{cfg.port} ({mode})",
                 f"  {procs} (--workers N or [server] workers to change)"]
        lines += [f"  {what:<10} {url}" for what, url in where]
        if not cfg.no_auth:
            lines.append("  no token yet? memorywire token create --role admin --name me")
        print("\n".join(lines), file=sys.stderr, flush=True)

    try:
        config = load_config(
            args.config,
            overrides={
                "store": args.store,
                "host": args.host,
                "port": args.port,
                "no_auth": True if args.no_auth else None,
                "governance_db": args.governance_db,
                "governance": False if args.no_governance else None,
                "tokens_db": args.tokens_db,
                "embedder": args.embedder,
                "min_relevance": args.min_relevance,
                "workers": args.workers,
            },
        )
        serve(config, on_ready=ready, log_level=args.log_level)
    except MemorywireError as err:
        print(f"memorywire serve: {err.code}: {err.message}", file=sys.stderr)
        return 2
    return 0


def _mcp(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from memorywire.server.mcp.stdio import run_stdio

    try:
        config = _local_config(args)
        named = {k: v for k, v in (("agent", args.agent), ("user", args.user)) if v}
        return run_stdio(replace(config, **named))
    except MemorywireError as err:
        print(f"memorywire mcp: {err.code}: {err.message}", file=sys.stderr)
        return 2


def _register_serve(sub: Subparsers) -> None:
    p = sub.add_parser("serve", help="serve REST, JSON-RPC and OpenAPI over HTTP")
    _store_flags(p, "store URL")
    p.add_argument("--host", help="bind address (default 127.0.0.1)")
    p.add_argument("--port", type=int, help="port (default 8765)")
    p.add_argument("--no-auth", action="store_true", help="no tokens (loopback only)")
    p.add_argument("--governance-db", dest="governance_db",
                   help="enable approvals: a SQLite path, or a postgresql:// URL that several"
                        " servers share (one approval queue, one audit chain)")
    p.add_argument("--tokens-db", dest="tokens_db",
                   help="token database (default: <data dir>/tokens.db)")
    p.add_argument("--workers", metavar="N",
                   help="server processes on the port: a number, or auto (2 when the machine "
                        "has 2+ CPUs and the store is a file or PostgreSQL, else 1); default 1;"
                        " each loads its own model (~250 MB)")
    p.add_argument("--log-level", dest="log_level", default="warning",
                   choices=["critical", "error", "warning", "info", "debug", "trace"],
                   help="uvicorn's log level; info or lower logs every request (default warning)")
    p.add_argument("--min-relevance", dest="min_relevance", type=float, metavar="R",
                   help="relevance floor (0..1) of a recall that names none (default: the "
                        "store's calibrated floor, 0.5)")
    p.add_argument("--embedder", choices=["default", "hashing"], help=argparse.SUPPRESS)
    p.set_defaults(handler=_serve)

    p = sub.add_parser("mcp", help="speak MCP over stdio (no arguments: the default store)")
    _store_flags(p, "store URL (default: $MEMORYWIRE_STORE, else sqlite under the data "
                    "directory)")
    p.add_argument("--governance-db", dest="governance_db",
                   help="enable approvals (destructive tools are staged for review)")
    p.add_argument("--agent", help="agent_id tools use when a call leaves it out "
                                   "(default: $MEMORYWIRE_AGENT)")
    p.add_argument("--user", help="user_id tools use when a call leaves it out "
                                  "(default: $MEMORYWIRE_USER)")
    p.add_argument("--min-relevance", dest="min_relevance", type=float, metavar="R",
                   help="relevance floor (0..1) of a recall that names none (default: the "
                        "store's calibrated floor, 0.5)")
    p.add_argument("--embedder", choices=["default", "hashing"], help=argparse.SUPPRESS)
    p.set_defaults(handler=_mcp)



def register_serve(sub: Subparsers) -> None:
    _register_serve(sub)
