"""``memorywire receipt verify``, ``recover`` and ``purge``: forgetting you can prove.

``purge`` is the expiry sweep (``--once``, or every ``--every`` seconds until stopped).

``receipt verify FILE`` needs nothing but the file (exit 0 valid, 1 not, 2 unreadable).
``recover`` is :mod:`memorywire.cli.recover`.
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
from memorywire.errors import MemorywireError
from memorywire.governance.audit import AuditLog
from memorywire.governance.purge import purgeable, run_sweeper, sweep_once
from memorywire.governance.receipts import dump_receipt, verify_receipt

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


def _verify(args: argparse.Namespace) -> int:
    try:
        raw = Path(args.file).read_bytes()
    except OSError as exc:
        print(f"memorywire receipt: cannot read {args.file}: {exc.strerror}", file=sys.stderr)
        return 2
    ok, why = verify_receipt(raw, args.trusted_key or None)
    print(json.dumps({"ok": ok, "reason": why}))
    return 0 if ok else 1


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


def register_forgetting(sub: Any) -> None:
    r = sub.add_parser("receipt", help="check a deletion receipt offline")
    rs = r.add_subparsers(dest="receipt_command", metavar="ACTION", required=True)
    v = rs.add_parser("verify", help="check a receipt's Ed25519 signature (exit 1 if bad)")
    v.add_argument("file", metavar="FILE")
    v.add_argument("--trusted-key", action="append", metavar="B64",
                   help="accept only receipts signed by this public key; repeatable")
    v.set_defaults(handler=guarded("receipt", _verify))

    from memorywire.cli.recover import register_recover

    register_recover(sub)

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
