"""``memorywire recover``: clean poisoned memory, with 0.5's verdicts and today's seeds.

``memorywire recover --agent X`` gives each memory of agent X a verdict (purge: untrusted
source; quarantine: trusted but reads like a directive; expire: low confidence, with
``--expire-low-conf``; keep) and prints a readable report (``--json`` for JSON);
``--dry-run`` stops there. Seeds (``--source``, repeatable; ``--id``; ``--since-ms`` /
``--until-ms``) select known-poisoned memories instead, and what derives from them follows.

It runs on a local ``--store`` (the data directory's by default), through the same setup as
every other command: governed by default, so each quarantined memory waits for a reviewer
(``memorywire approvals list``, or the ``/ui`` of ``memorywire serve``) and every change is in
the audit log. Acting signs one summary receipt with the deployment key (``--key`` or
``MEMORYWIRE_SIGNING_KEY``, else the key beside the governance database), written to
``--receipt`` or included in the ``--json`` report.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

import anyio

from memorywire.cli.guard import guarded
from memorywire.core.clock import SystemClock
from memorywire.errors import CapabilityMissing
from memorywire.governance.actor import acting_as
from memorywire.governance.receipts import dump_receipt
from memorywire.governance.recover import apply_recovery

__all__ = ["register_recover", "render"]


def _doc(args: argparse.Namespace) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "agent_id": args.agent_id, "sources": args.sources or None, "ids": args.ids or None,
        "since_ms": args.since_ms, "until_ms": args.until_ms, "trusted": args.trusted,
        "detectors": args.detectors, "quarantine": args.quarantine,
        "hard": True if args.hard else None, "expire_low_conf": args.expire_low_conf,
        "confidence_below": args.confidence_below, "purge_unknown": args.purge_unknown,
    }
    return {k: v for k, v in doc.items() if v is not None}


def _recover(args: argparse.Namespace) -> int:
    from memorywire.cli.ops import _local_config
    from memorywire.governance.signing import load_signing_key_file
    from memorywire.server.auth import Principal
    from memorywire.server.recovery import result_doc
    from memorywire.server.runtime import running

    who = Principal.local_operator()

    async def go() -> dict[str, Any]:
        async with running(_local_config(args), reads_need_file=True) as rt:
            op = rt.dispatcher.recovery
            with acting_as(who.name):
                plan, _ = await op.plan(_doc(args))
                if args.dry_run:
                    return {"dry_run": True, **plan.report(), "plan": plan.to_dict(),
                            "governed": rt.governed is not None}
                given = args.key or os.environ.get("MEMORYWIRE_SIGNING_KEY")
                key = load_signing_key_file(given) if given else \
                    (op.signing_key.get() if op.signing_key is not None else None)
                if key is None:
                    raise CapabilityMissing("recover signs a receipt: pass --key PEM, set "
                                            "MEMORYWIRE_SIGNING_KEY, or use a governed store "
                                            "(its key is kept beside the governance database)")
                res = await apply_recovery(rt.store, plan, key, audit=rt.governed,
                                           now_ms=SystemClock().now_ms(), hold=op.quarantine)
            out = {**result_doc(res), "governed": rt.governed is not None}
            if args.receipt and res.receipt is not None:
                Path(args.receipt).write_bytes(dump_receipt(res.receipt))
                out["receipt"] = args.receipt
            return out

    out = anyio.run(go)
    print(json.dumps(out, indent=2, ensure_ascii=False) if args.json else render(out))
    return 0


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


def register_recover(sub: Any) -> None:
    p = sub.add_parser("recover", help="clean poisoned memory: a verdict per memory of an "
                                       "agent (purge, quarantine, expire, keep), or seeds")
    p.add_argument("--store", help="store URL (default: sqlite under the data directory)")
    p.add_argument("--embedder", choices=["default", "hashing"], default=None,
                   help=argparse.SUPPRESS)
    p.add_argument("--governance-db", dest="governance_db",
                   help="governance database (policies, audit, the reviewer's queue)")
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
    p.add_argument("--key", help="Ed25519 signing key, PEM (or MEMORYWIRE_SIGNING_KEY)")
    p.add_argument("--receipt", metavar="FILE", help="write the signed receipt here")
    p.set_defaults(handler=guarded("recover", _recover))
