"""``memorywire consolidate``: run the STM→LTM consolidator over a store from the shell."""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from memorywire.cli.render import iso
from memorywire.errors import MemorywireError

__all__ = ["register_consolidate"]


def _summary(report: dict[str, list[str]]) -> str:
    """One line a tick: counts, not ids (``--json`` has the ids)."""
    counts = ", ".join(f"{len(ids)} {what}" for what, ids in report.items())
    return f"{iso(int(time.time() * 1000))} tick: {counts}"


def _consolidate(args: argparse.Namespace) -> int:
    import anyio

    from memorywire.consolidation import Consolidator
    from memorywire.server.config import load_config
    from memorywire.server.runtime import running

    # Through the one setup, so the consolidator's writes are governed and audited like any
    # other (a raw store would be "written behind governance's back" for `audit verify`).
    config = load_config(args.config, overrides={
        "store": args.store, "embedder": args.embedder,
        "governance": False if args.no_governance else None})

    async def go() -> int:
        async with running(config) as runtime:
            c = Consolidator(
                runtime.store,
                interval_s=args.interval,
                promote_threshold=args.threshold,
                stm_ttl_ms=int(args.ttl_hours * 3_600_000),
                agent_id=args.agent,
            )
            while True:
                report = await c.tick()
                if args.json:
                    print(json.dumps(report.to_dict()), flush=True)
                else:
                    print(_summary(report.to_dict()), flush=True)
                if args.once:
                    return 0
                await anyio.sleep(args.interval)

    try:
        return anyio.run(go)
    except MemorywireError as exc:
        print(f"memorywire consolidate: {exc.message}", file=sys.stderr)
        return 1


def register_consolidate(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "consolidate",
        help="promote salient short-term memories to long-term, evict expired ones",
        description="Print one line per tick with how many memories were promoted, evicted, "
        "kept and skipped; --json prints the report with their ids instead.",
    )
    p.add_argument("--store", metavar="URL", help="e.g. sqlite:///mem.db (default: the "
                   "configuration's store, else the default one)")
    p.add_argument("--config", metavar="FILE", help="configuration file (default: "
                   "$MEMORYWIRE_CONFIG)")
    p.add_argument("--no-governance", dest="no_governance", action="store_true",
                   help="no audit log (on by default for the default store)")
    p.add_argument("--embedder", help=argparse.SUPPRESS)
    p.add_argument("--once", action="store_true", help="run one tick and exit")
    p.add_argument("--agent", default=None, help="only this agent (default: all)")
    p.add_argument("--threshold", type=float, default=0.5, help="promotion score (0..1)")
    p.add_argument("--ttl-hours", type=float, default=7 * 24.0, help="STM lifetime")
    p.add_argument("--interval", type=float, default=300.0, help="seconds between ticks")
    p.add_argument("--json", action="store_true",
                   help="one JSON report per tick {promoted, evicted, kept, skipped} with ids")
    p.set_defaults(handler=_consolidate)
