"""``memorywire audit``: verify, list and checkpoint a governance database's audit log.

``export`` writes the chain as a file that ``verify --file`` checks offline, without the
database. ``verify`` exits 0 when the chain (and every checkpoint given) holds, 1 when tampering is
found, 2 on a usage error; the report is JSON on standard output either way. Without
``--db`` it also checks the configured store against the log (``store`` in the report):
memories written behind governance's back fail the verification, naming the store.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memorywire.cli.guard import guarded
from memorywire.errors import MemorywireError

if TYPE_CHECKING:  # the handlers import governance; building the parser does not
    from memorywire.governance.audit import AuditLog

__all__ = ["register_audit"]


def _configured(args: argparse.Namespace) -> Any:
    from memorywire.server.config import load_config

    embedder = getattr(args, "embedder", None)
    return load_config(args.config, overrides={"embedder": embedder}).resolved()


def _db_of(args: argparse.Namespace) -> str:
    """``--db``, else the governance database of the configuration (``--config`` or
    ``$MEMORYWIRE_CONFIG``, else the default store's), so the file that configures the
    server also finds its log."""
    if args.db:
        return str(args.db)
    db = str(_configured(args).governance_db)
    if not db:
        raise MemorywireError("no governance database: give --db, or --config naming one")
    return db


def _store_drift(args: argparse.Namespace, log: AuditLog) -> dict[str, Any] | None:
    """The configured store checked against the log (see governance/drift.py); ``None``
    when ``--db`` names a log whose store this command was not told."""
    if args.db:
        return None
    import anyio

    from memorywire.governance.drift import unaudited_memories
    from memorywire.server.runtime import open_configured_store

    config = _configured(args)

    async def check() -> tuple[str, list[dict[str, Any]]]:
        store = open_configured_store(config)
        try:
            return store.name, await unaudited_memories(store, log)
        finally:
            await store.aclose()

    name, found = anyio.run(check)
    where = config.store if not config.stores else ", ".join(e.url for e in config.stores)
    return {"store": name, "url": where, "ok": not found, "unaudited": found}


def _open(db: str) -> AuditLog:
    from memorywire.governance.audit import AuditLog
    from memorywire.governance.db import is_postgres_url

    if not is_postgres_url(db) and not Path(db).is_file():
        raise MemorywireError(f"no governance database at {db}")
    return AuditLog.open(db)


def _load_checkpoints(files: list[str]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for f in files:
        with open(f, encoding="utf-8") as fh:
            data = json.load(fh)
        out.extend(data if isinstance(data, list) else [data])
    return out


def _verify(args: argparse.Namespace) -> int:
    if args.file:
        from memorywire.governance.auditfile import verify_audit_file

        cps = _load_checkpoints(args.checkpoint) if args.checkpoint else None
        found = verify_audit_file(args.file, cps, args.trusted_key or None)
        print(json.dumps(found, indent=2))
        if not found["ok"]:
            print(f"memorywire audit verify: {args.file} line {found['first_bad_line']}: "
                  f"{found['problems'][0]['message']}", file=sys.stderr)
        return 0 if found["ok"] else 1
    log = _open(_db_of(args))
    try:
        cps = _load_checkpoints(args.checkpoint) if args.checkpoint else None
        report = log.verify(checkpoints=cps, trusted_keys=args.trusted_key or None)
        drift = _store_drift(args, log)
    finally:
        log.close()
    out = report.to_dict()
    ok = report.ok
    if drift is not None:
        out["store"] = drift
        if not drift["ok"]:
            ok = out["ok"] = False
            print(f"memorywire audit verify: store {drift['store']!r} ({drift['url']}) holds "
                  f"{len(drift['unaudited'])} memories written behind governance's back",
                  file=sys.stderr)
    print(json.dumps(out, indent=2))
    return 0 if ok else 1


def _list(args: argparse.Namespace) -> int:
    log = _open(_db_of(args))
    try:
        for e in log.entries(agent_id=args.agent_id, memory_id=args.memory_id, limit=args.limit):
            print(json.dumps(e.to_dict(), ensure_ascii=False))
    finally:
        log.close()
    return 0


def _export(args: argparse.Namespace) -> int:
    from memorywire.governance.auditfile import export_audit

    log = _open(_db_of(args))
    try:
        n = export_audit(log, sys.stdout.buffer)
    finally:
        log.close()
    print(f"exported {n} audit entries", file=sys.stderr)
    return 0


def _checkpoint(args: argparse.Namespace) -> int:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    with open(args.key, "rb") as fh:
        key = load_pem_private_key(fh.read(), password=None)
    if not isinstance(key, Ed25519PrivateKey):
        raise MemorywireError("the checkpoint key must be an Ed25519 private key (PEM)")
    log = _open(_db_of(args))
    try:
        print(json.dumps(log.checkpoint(key)))
    finally:
        log.close()
    return 0


def register_audit(subparsers: Any) -> None:
    audit = subparsers.add_parser("audit", help="verify or read a governance audit log")
    sub = audit.add_subparsers(dest="audit_command", metavar="ACTION", required=True)

    v = sub.add_parser("verify", help="recompute the hash chain and check checkpoints")
    v.add_argument("--db", help="governance database file or postgresql:// URL "
                                "(default: the configuration's governance database)")
    v.add_argument(
        "--checkpoint",
        action="append",
        metavar="FILE",
        help="exported checkpoint JSON (object or list); repeatable",
    )
    v.add_argument(
        "--trusted-key",
        action="append",
        metavar="B64",
        help="accept only checkpoints signed by this public key; repeatable",
    )
    v.add_argument("--file", metavar="FILE",
                   help="verify an exported audit file (audit export) offline instead")
    v.set_defaults(handler=guarded("audit", _verify))

    ex = sub.add_parser("export", help="write the chain as JSON lines to stdout, for offline "
                                       "verification (audit verify --file)")
    ex.add_argument("--db", help="governance database file or postgresql:// URL "
                    "(default: the configuration's)")
    ex.set_defaults(handler=guarded("audit", _export))

    ls = sub.add_parser("list", help="print entries as JSON lines")
    ls.add_argument("--db", help="governance database file or postgresql:// URL "
                    "(default: the configuration's)")
    ls.add_argument("--agent-id", help="only entries about this agent")
    ls.add_argument("--memory-id", help="only entries about this memory")
    ls.add_argument("--limit", type=int, default=None, help="only the most recent N entries")
    ls.set_defaults(handler=guarded("audit", _list))

    cp = sub.add_parser("checkpoint", help="sign the current head and print it as JSON")
    cp.add_argument("--db", help="governance database file or postgresql:// URL "
                    "(default: the configuration's)")
    cp.add_argument("--key", required=True, help="Ed25519 private key, PEM, unencrypted")
    cp.set_defaults(handler=guarded("audit", _checkpoint))
    v.add_argument("--embedder", help=argparse.SUPPRESS)
    for q in (v, ls, cp, ex):
        q.add_argument("--config", metavar="FILE", help="configuration file (default: "
                       "$MEMORYWIRE_CONFIG)")
