"""``memorywire receipt verify``, ``recover`` and ``purge``: forgetting you can prove.

``purge`` is the expiry sweep (``--once``, or every ``--every`` seconds until stopped).

``receipt verify FILE`` checks the signature offline and says who signed
(:mod:`memorywire.governance.receipt_trust`): exit 0 when the key is pinned with
``--trusted-key`` or is this deployment's signing key, 3 when the signature is valid but
nobody vouched for the key (``"ok": false, "signer": "unpinned"``), 1 when it is not valid,
2 when the file cannot be read. ``receipt key`` prints the deployment's public key to pin.
``recover`` runs on a local ``--store`` (the data directory's by default): it prints the plan,
and with ``--dry-run`` stops there; otherwise it needs the deployment's Ed25519 signing key
(``--key`` or ``MEMORYWIRE_SIGNING_KEY``, a PEM file, the one ``audit checkpoint`` uses),
acts through the configured store (so a governance policy can stage the forgets for review)
and writes the signed receipt to ``--receipt`` or standard output.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import load_pem_private_key

from memorywire.cli.guard import guarded
from memorywire.core.clock import SystemClock
from memorywire.errors import MemorywireError
from memorywire.governance.audit import AuditLog
from memorywire.governance.purge import purgeable, run_sweeper, sweep_once
from memorywire.governance.receipt_trust import (
    check_receipt,
    deployment_public_key,
    public_key_document,
)
from memorywire.governance.receipts import dump_receipt
from memorywire.governance.recover import (
    RecoverySelector,
    apply_recovery,
    plan_recovery,
    scan_all,
)

__all__ = ["load_signing_key", "register_forgetting"]


def load_signing_key(path: str | None) -> Ed25519PrivateKey:
    """The deployment key from ``path`` or ``MEMORYWIRE_SIGNING_KEY``; refuses anything else."""
    where = path or os.environ.get("MEMORYWIRE_SIGNING_KEY")
    if not where:
        raise MemorywireError("a signing key is needed: pass --key PEM or set "
                              "MEMORYWIRE_SIGNING_KEY")
    key = load_pem_private_key(Path(where).read_bytes(), password=None)
    if not isinstance(key, Ed25519PrivateKey):
        raise MemorywireError("the signing key must be an Ed25519 private key (PEM)")
    return key


def _signing_source(args: argparse.Namespace) -> Any:
    """The deployment's receipt key, as ``serve`` would find it with the same settings."""
    from memorywire.server.config import load_config

    config = load_config(args.config, overrides={"governance_db": args.governance_db,
                                                  "signing_key": args.signing_key})
    return config.resolved().signing_key_source()


def _verify(args: argparse.Namespace) -> int:
    try:
        raw = Path(args.file).read_bytes()
    except OSError as exc:
        print(f"memorywire receipt: cannot read {args.file}: {exc.strerror}", file=sys.stderr)
        return 2
    deployment = deployment_public_key(_signing_source(args).path)
    verdict, status = check_receipt(raw, args.trusted_key or (), deployment)
    print(json.dumps(verdict))
    return status


def _key(args: argparse.Namespace) -> int:
    doc = public_key_document(_signing_source(args))
    if doc is None:
        print("memorywire receipt: this deployment signs no receipts (governance is off and "
              "no signing_key is set)", file=sys.stderr)
        return 1
    print(json.dumps(doc))
    return 0


def _recover(args: argparse.Namespace) -> int:
    from memorywire.cli.ops import _local_config
    from memorywire.server.runtime import running

    selector = RecoverySelector(source=args.source, agent_id=args.agent_id,
                                since_ms=args.since_ms, until_ms=args.until_ms,
                                ids=args.ids or None)
    key = None if args.dry_run else load_signing_key(args.key)

    async def go() -> dict[str, Any]:
        async with running(_local_config(args), reads_need_file=True) as rt:
            plan = plan_recovery(await scan_all(rt.store), selector)
            if key is None:
                return {"dry_run": True, "plan": plan.to_dict()}
            audit = AuditLog.open(args.governance_db) if args.governance_db else None
            try:
                res = await apply_recovery(rt.store, plan, key, audit=audit,
                                           now_ms=SystemClock().now_ms())
            finally:
                if audit is not None:
                    audit.close()
            assert res.receipt is not None
            if args.receipt:
                Path(args.receipt).write_bytes(dump_receipt(res.receipt))
            return {"dry_run": False, "plan": plan.to_dict(),
                    "pending_approval": res.pending_approval,
                    "receipt": args.receipt or res.receipt,
                    "part_receipts": res.receipts}

    out = anyio.run(go)
    print(json.dumps(out, indent=2, ensure_ascii=False))
    return 0


def _purge(args: argparse.Namespace) -> int:
    from memorywire.cli.ops import _local_config
    from memorywire.server.runtime import running

    key = load_signing_key(args.key)
    grace_ms = int(args.grace_hours * 3_600_000)

    def keep(receipts: list[dict[str, Any]]) -> None:
        for rc in receipts:
            if args.receipts_dir:
                Path(args.receipts_dir).mkdir(parents=True, exist_ok=True)
                (Path(args.receipts_dir) / f"{rc['receipt_id']}.json").write_bytes(
                    dump_receipt(rc))
            print(json.dumps({"receipt_id": rc["receipt_id"],
                              "erased": sum(len(v) for v in rc["erased"].values())}),
                  flush=True)

    async def go() -> None:
        async with running(_local_config(args), reads_need_file=True) as rt:
            store = purgeable(rt.store)
            audit = AuditLog.open(args.governance_db) if args.governance_db else None
            try:
                if args.once:
                    keep(await sweep_once(store, key, grace_ms=grace_ms, audit=audit))
                else:
                    await run_sweeper(store, key, grace_ms=grace_ms, interval_s=args.every,
                                      audit=audit, on_receipts=keep)
            finally:
                if audit is not None:
                    audit.close()

    anyio.run(go)
    return 0


def _deployment_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", help="the deployment's configuration file (MEMORYWIRE_CONFIG)")
    p.add_argument("--governance-db", dest="governance_db",
                   help="governance database whose signing key is the deployment's")
    p.add_argument("--signing-key", dest="signing_key", metavar="PEM",
                   help="the deployment's signing key file (MEMORYWIRE_SIGNING_KEY)")


def register_forgetting(sub: Any) -> None:
    r = sub.add_parser("receipt", help="check a deletion receipt offline")
    rs = r.add_subparsers(dest="receipt_command", metavar="ACTION", required=True)
    v = rs.add_parser("verify", help="check a receipt's Ed25519 signature and its signer "
                                     "(exit 0 pinned or this deployment's key, 3 valid but "
                                     "unpinned, 1 bad)")
    v.add_argument("file", metavar="FILE")
    v.add_argument("--trusted-key", action="append", metavar="B64",
                   help="a public key to trust (from `memorywire receipt key`); repeatable")
    _deployment_flags(v)
    v.set_defaults(handler=guarded("receipt", _verify))
    k = rs.add_parser("key", help="print this deployment's receipt-signing public key (to pin)")
    _deployment_flags(k)
    k.set_defaults(handler=guarded("receipt", _key))

    p = sub.add_parser("recover", help="remove poisoned memory by provenance, with a plan")
    p.add_argument("--store", help="store URL (default: sqlite under the data directory)")
    p.add_argument("--embedder", choices=["default", "hashing"], default=None,
                   help=argparse.SUPPRESS)
    p.add_argument("--governance-db", dest="governance_db",
                   help="governance database (policies, audit) the receipts are chained into")
    p.add_argument("--source", help="the compromised source (or token provenance)")
    p.add_argument("--agent", dest="agent_id", help="only memories of this agent")
    p.add_argument("--since-ms", type=int, help="created at or after (epoch ms)")
    p.add_argument("--until-ms", type=int, help="created before (epoch ms)")
    p.add_argument("--id", dest="ids", action="append", help="a seed id; repeatable")
    p.add_argument("--dry-run", action="store_true", help="print the plan, change nothing")
    p.add_argument("--key", help="Ed25519 signing key, PEM (or MEMORYWIRE_SIGNING_KEY)")
    p.add_argument("--receipt", metavar="FILE", help="write the signed receipt here")
    p.set_defaults(handler=guarded("recover", _recover))

    p = sub.add_parser("purge", help="physically remove memories expired past a grace period")
    p.add_argument("--store", help="store URL (default: sqlite under the data directory)")
    p.add_argument("--embedder", choices=["default", "hashing"], default=None,
                   help=argparse.SUPPRESS)
    p.add_argument("--governance-db", dest="governance_db",
                   help="governance database whose audit log records the receipts")
    p.add_argument("--grace-hours", type=float, default=24.0,
                   help="purge only what expired at least this long ago (default 24)")
    p.add_argument("--once", action="store_true", help="one sweep, then exit")
    p.add_argument("--every", type=float, default=300.0, metavar="SECONDS",
                   help="without --once: seconds between sweeps (default 300)")
    p.add_argument("--key", help="Ed25519 signing key, PEM (or MEMORYWIRE_SIGNING_KEY)")
    p.add_argument("--receipts-dir", metavar="DIR", help="write each receipt here as JSON")
    p.set_defaults(handler=guarded("purge", _purge))
