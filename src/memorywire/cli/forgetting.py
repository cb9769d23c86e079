"""``memorywire receipt verify``, ``recover`` and ``purge``: forgetting you can prove.

``purge`` is the expiry sweep (``--once``, or every ``--every`` seconds until stopped).

``receipt verify FILE`` checks the signature offline and says who signed
(:mod:`memorywire.governance.receipt_trust`): exit 0 when the key is pinned with
``--trusted-key`` or is this deployment's signing key, 3 when the signature is valid but
nobody vouched for the key (``"ok": false, "signer": "unpinned"``), 1 when it is not valid,
2 when the file cannot be read. ``receipt key`` prints the deployment's public key to pin.
``recover`` and ``purge`` run on the local store through the server's runtime
(:mod:`memorywire.server.runtime`): the same store, governance and signing key as
``memorywire serve`` with the same configuration. The key is the one serve signs with:
``--key`` (or ``signing_key`` / ``MEMORYWIRE_SIGNING_KEY``, a PEM file), else the key beside
the governance database, created on first use, so on the default store neither command needs
a flag. ``recover`` (its verdicts, seeds and report are :mod:`memorywire.cli.recover`'s)
prints the plan, and with ``--dry-run`` stops there; otherwise it acts through the governed
store (a policy can stage the forgets for review; quarantined memories wait for a reviewer),
chains the receipt into the audit log and writes it to ``--receipt`` or the ``--json``
report.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memorywire.cli.guard import guarded
from memorywire.errors import CapabilityMissing

if TYPE_CHECKING:
    from memorywire.governance.signing import SigningKey, SigningKeySource
    from memorywire.server.config import ServerConfig
    from memorywire.server.runtime import Runtime

__all__ = ["register_forgetting"]

#: What to do when the runtime has no key; named in the refusal.
_KEY_HINT = ("pass --key PEM, set MEMORYWIRE_SIGNING_KEY (or signing_key in --config), or "
             "keep governance on, whose database keeps a key beside it")


def _signing_source(args: argparse.Namespace) -> SigningKeySource:
    """The deployment's receipt key, as ``serve`` would find it with the same settings."""
    from memorywire.server.config import load_config

    config = load_config(args.config, overrides={"governance_db": args.governance_db,
                                                  "signing_key": args.signing_key})
    return config.resolved().signing_key_source()


def _verify(args: argparse.Namespace) -> int:
    from memorywire.governance.receipt_trust import check_receipt, deployment_public_key

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
    from memorywire.governance.receipt_trust import public_key_document

    doc = public_key_document(_signing_source(args))
    if doc is None:
        print("memorywire receipt: this deployment signs no receipts (governance is off and "
              "no signing_key is set)", file=sys.stderr)
        return 1
    print(json.dumps(doc))
    return 0


def _config(args: argparse.Namespace) -> ServerConfig:
    """The data commands' configuration, with ``--key`` as the ``signing_key`` setting."""
    from dataclasses import replace

    from memorywire.cli.ops import _local_config

    config = _local_config(args)
    return replace(config, signing_key=args.key) if args.key else config


def _key_of(rt: Runtime, command: str) -> SigningKey:
    source = rt.dispatcher.signing_key
    key = source.get() if source is not None else None
    if key is None:
        raise CapabilityMissing(f"{command} signs a receipt but this store has no signing key: "
                                f"{_KEY_HINT}")
    return key


def _recover(args: argparse.Namespace) -> int:
    import anyio

    from memorywire.cli.recover import render, request_of
    from memorywire.server.auth import Principal
    from memorywire.server.runtime import running

    doc = request_of(args)

    async def go() -> dict[str, Any]:
        async with running(_config(args), reads_need_file=True) as rt:
            if not args.dry_run:
                _key_of(rt, "recover")  # refuse before planning, naming the flag
            # The server's own operation (REST /v0/admin/recover), as the local operator.
            out = await rt.dispatcher.recovery.run(doc, Principal.local_operator())
            return {**out, "governed": rt.governed is not None}

    out = anyio.run(go)
    code = 0
    if args.receipt and out.get("receipt") is not None:
        from memorywire.governance.receipts import dump_receipt

        Path(args.receipt).write_bytes(dump_receipt(out["receipt"]))
        out["receipt"] = args.receipt
    elif args.receipt and not args.dry_run:  # staged by a policy: signed when approved
        print(f"memorywire recover: no receipt written to {args.receipt}: the forgets are "
              "staged for review; the receipts come with the approval", file=sys.stderr)
        code = 1
    print(json.dumps(out, indent=2, ensure_ascii=False) if args.json else render(out))
    return code


def _purge(args: argparse.Namespace) -> int:
    import anyio

    from memorywire.governance.purge import purgeable, run_sweeper, sweep_once
    from memorywire.governance.receipts import dump_receipt
    from memorywire.server.runtime import running

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
        async with running(_config(args), reads_need_file=True) as rt:
            # What serve's expiry sweeper runs: the governed store, its audit log, its key.
            store = purgeable(rt.store)
            key = _key_of(rt, "purge")
            if args.once:
                keep(await sweep_once(store, key, grace_ms=grace_ms, audit=rt.governed))
            else:
                await run_sweeper(store, key, grace_ms=grace_ms, interval_s=args.every,
                                  audit=rt.governed, on_receipts=keep)

    anyio.run(go)
    return 0


def _runtime_flags(p: argparse.ArgumentParser, governance_help: str) -> None:
    p.add_argument("--store", help="store URL (default: sqlite under the data directory)")
    p.add_argument("--config", metavar="FILE", help="TOML or JSON configuration file "
                   "(default: $MEMORYWIRE_CONFIG); see docs/configuration.md")
    p.add_argument("--embedder", choices=["default", "hashing"], default=None,
                   help=argparse.SUPPRESS)
    p.add_argument("--governance-db", dest="governance_db", help=governance_help)
    p.add_argument("--no-governance", dest="no_governance", action="store_true",
                   help="no audit log (on by default for the default store)")
    p.add_argument("--key", help="Ed25519 signing key, PEM (default: the deployment's, as "
                   "serve finds it: MEMORYWIRE_SIGNING_KEY, else beside the governance "
                   "database)")


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
    v.add_argument("file", metavar="FILE", help="the receipt (forget --hard --receipt FILE)")
    v.add_argument("--trusted-key", action="append", metavar="B64",
                   help="a public key to trust (from `memorywire receipt key`); repeatable")
    _deployment_flags(v)
    v.set_defaults(handler=guarded("receipt", _verify))
    k = rs.add_parser("key", help="print this deployment's receipt-signing public key (to pin)")
    _deployment_flags(k)
    k.set_defaults(handler=guarded("receipt", _key))

    from memorywire.cli.recover import add_recover_arguments

    p = sub.add_parser("recover", help="clean poisoned memory: a verdict per memory of an "
                                       "agent (purge, quarantine, expire, keep), or seeds")
    _runtime_flags(p, "governance database (policies, audit, the reviewer's queue)")
    add_recover_arguments(p)
    p.set_defaults(handler=guarded("recover", _recover))

    p = sub.add_parser("purge", help="physically remove memories expired past a grace period")
    _runtime_flags(p, "governance database whose audit log records the receipts")
    p.add_argument("--grace-hours", type=float, default=24.0,
                   help="purge only what expired at least this long ago (default 24)")
    p.add_argument("--once", action="store_true", help="one sweep, then exit")
    p.add_argument("--every", type=float, default=300.0, metavar="SECONDS",
                   help="without --once: seconds between sweeps (default 300)")
    p.add_argument("--receipts-dir", metavar="DIR", help="write each receipt here as JSON")
    p.set_defaults(handler=guarded("purge", _purge))
