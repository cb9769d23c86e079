"""``memorywire recover``'s request, flags and readable report (the command runs in
:mod:`memorywire.cli.forgetting`, on the server's runtime).

``memorywire recover --agent X`` gives each memory of agent X a verdict (purge: untrusted
source; quarantine: trusted but reads like a directive; expire: low confidence, with
``--expire-low-conf``; keep) and prints a readable report (``--json`` for JSON);
``--dry-run`` stops there. Seeds (``--source``, repeatable; ``--id``; ``--since-ms`` /
``--until-ms``) select known-poisoned memories instead, and what derives from them follows.
On the default store (governed) each quarantined memory waits for a reviewer
(``memorywire approvals list``, or the ``/ui`` of ``memorywire serve``).
"""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["add_recover_arguments", "render", "request_of"]


def request_of(args: argparse.Namespace) -> dict[str, Any]:
    """The ``recover`` document (as REST and MCP take it) the flags describe."""
    doc: dict[str, Any] = {
        "agent_id": args.agent_id, "sources": args.sources or None, "ids": args.ids or None,
        "since_ms": args.since_ms, "until_ms": args.until_ms, "trusted": args.trusted,
        "detectors": args.detectors or None, "quarantine": None if args.quarantine else False,
        "hard": True if args.hard else None, "expire_low_conf": args.expire_low_conf or None,
        "confidence_below": args.confidence_below, "purge_unknown": args.purge_unknown or None,
        "dry_run": args.dry_run or None,
    }
    return {k: v for k, v in doc.items() if v is not None}


def render(doc: dict[str, Any]) -> str:
    """The readable report: counts per verdict, then each memory that changes and why."""
    plan = doc.get("plan", {})
    hard = plan.get("hard", True)
    lines = ["DRY RUN - no changes made" if doc.get("dry_run") else "Recovery done",
             f"Recovery report - scanned {doc['scanned']} memories"
             + (f" (seeds: {plan['selector']})" if set(plan.get("selector", {}))
                - {"agent_id"} else ""),
             f"  purged ({'erased' if hard else 'soft-deleted'}): {doc['purged']}",
             f"  quarantined (needs human review): {doc['quarantined']}",
             f"  expired (low confidence): {doc['expired']}",
             f"  kept: {doc['kept']}"]
    for verdict in ("purge", "quarantine", "expire"):
        acts = [a for a in doc["actions"] if a["verdict"] == verdict]
        if acts:
            lines.append(f"\n  {verdict}:")
            lines += [f"    - {a['agent_id']}/{a['id']} [{a['source'] or 'no source'}]: "
                      f"{a['reason']}" for a in acts[:50]]
            if len(acts) > 50:
                lines.append(f"    ... and {len(acts) - 50} more (--json lists them all)")
    if doc["quarantined"]:
        if doc.get("dry_run"):
            lines.append("\n  Quarantined memories are hidden from recall and held for a "
                         "reviewer, who releases or erases each one.")
        elif doc.get("review"):
            lines.append(f"\n  [!] {len(doc['review'])} quarantined memories wait for a "
                         "reviewer: memorywire approvals list (operation quarantine), or "
                         "the /ui of memorywire serve. Approve erases, reject releases.")
        elif not doc.get("governed"):
            lines.append("\n  [!] This store is not governed, so nothing holds the "
                         "quarantined memories for review: they are soft-deleted (hidden, "
                         "kept on disk).")
    for stay in plan.get("stays", []):
        lines.append(f"  stays: {stay['id']}: {stay['why']}")
    if doc.get("receipt") is not None and not doc.get("dry_run"):
        rc = doc["receipt"]
        lines.append(f"\n  receipt: {rc if isinstance(rc, str) else rc.get('receipt_id')}")
    if doc.get("pending_approval"):
        lines.append("  some changes are staged for approval by the store's policy")
    return "\n".join(lines)


def add_recover_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--agent", dest="agent_id",
                   help="the agent whose memories get a verdict (alone), or that seeds narrow")
    p.add_argument("--source", dest="sources", action="append", metavar="SOURCE",
                   help="seed: a compromised source (or token provenance); repeatable")
    p.add_argument("--id", dest="ids", action="append", help="seed: a memory id; repeatable")
    p.add_argument("--since-ms", type=int, help="seed: created at or after (epoch ms)")
    p.add_argument("--until-ms", type=int, help="seed: created before (epoch ms)")
    p.add_argument("--trusted", default=None, metavar="A,B",
                   help="trusted sources, comma-separated (default: user,system)")
    p.add_argument("--detectors", action="store_true",
                   help="also run the governance policy's detector hooks; with seeds, "
                        "check trusted memories' content too")
    p.add_argument("--no-quarantine", dest="quarantine", action="store_false",
                   help="report directives found in trusted memories but keep them")
    p.add_argument("--hard", action="store_true",
                   help="erase purged memories with receipts (seeds: always)")
    p.add_argument("--expire-low-conf", action="store_true",
                   help="also expire memories with confidence below --confidence-below")
    p.add_argument("--confidence-below", type=float, default=None,
                   help="the --expire-low-conf threshold (default 0.75)")
    p.add_argument("--purge-unknown", action="store_true",
                   help="treat memories that record no source as untrusted (0.5's reading)")
    p.add_argument("--dry-run", action="store_true", help="print the plan, change nothing")
    p.add_argument("--json", action="store_true", help="the report as JSON")
    p.add_argument("--receipt", metavar="FILE", help="write the signed receipt here")
