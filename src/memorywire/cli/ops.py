"""Operational subcommands: the five operations, approvals and tokens.

Data commands talk to a local store (``--store URL``) or a server (``--server URL --token T``,
also ``$MEMORYWIRE_SERVER`` / ``$MEMORYWIRE_TOKEN``) through the public client, print a table
by default and the wire JSON with ``--json``. Exit status: 0 ok, 1 an operation error (the
envelope's code is printed), 2 bad usage.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from memorywire.cli.render import render as _render
from memorywire.errors import MemorywireError

if TYPE_CHECKING:
    from memorywire.server.config import ServerConfig

__all__ = ["REGISTER", "register_ops", "save_receipt"]

Subparsers = Any


def _print_json(doc: Any) -> None:
    print(json.dumps(doc, indent=2, ensure_ascii=False))


def _reads(command: str | None) -> bool:
    """Whether ``command`` is a one-shot command that only reads memories (the operation
    table's read-only wire operations): on a store that does not exist yet it fails naming
    it. The table (and the models it names) is imported here, when a command runs."""
    from memorywire.wire.operations import by_cli

    spec = by_cli().get(command or "")
    return spec is not None and spec.read_only and spec.request is not None


def _local_config(args: argparse.Namespace) -> ServerConfig:
    from memorywire.server.config import load_config

    config = load_config(
        getattr(args, "config", None),
        overrides={
            "store": args.store,
            "embedder": args.embedder,
            "governance_db": getattr(args, "governance_db", None),
            "governance": False if getattr(args, "no_governance", False) else None,
            "min_relevance": getattr(args, "min_relevance", None),
        }
    )
    if _reads(getattr(args, "command", None)):
        config = _no_files_for_a_failing_read(config)
    return config


def _no_files_for_a_failing_read(config: ServerConfig) -> ServerConfig:
    """A read of the default store before anything was written fails naming the store file;
    opening the default governance database first would create a data directory (and an
    empty audit log) for a command that changes nothing, so governance is left closed then."""
    from dataclasses import replace

    from memorywire.server.config import data_dir

    resolved = config.resolved()
    default = data_dir() / "mem.gov.db"
    if resolved.governance_db == str(default) and not (data_dir() / "mem.db").exists():
        return replace(config, governance=False)
    return config


@asynccontextmanager
async def _memory(args: argparse.Namespace) -> AsyncIterator[Any]:
    """The public client: remote with ``--server``, else over the one local setup."""
    server = args.server or os.environ.get("MEMORYWIRE_SERVER")
    if server:
        from memorywire.client import RemoteMemory

        async with RemoteMemory(server, args.token or os.environ.get("MEMORYWIRE_TOKEN")) as mem:
            yield mem
        return
    from memorywire.client import Memory
    from memorywire.server.auth import Principal
    from memorywire.server.runtime import running

    # A person typed the path: a read of a store that does not exist names it. The person
    # is the local operator, not the agent side, so `approvals approve` works on a laptop.
    # `approvals` reads the store to show a diff; before the first commit it has no file.
    reads = _reads(getattr(args, "command", None))
    async with running(_local_config(args), reads_need_file=reads) as runtime:
        # On the runtime itself: its dispatcher signs receipts and enforces its limits.
        yield Memory(runtime=runtime, principal=Principal.local_operator())


def _run(
    args: argparse.Namespace,
    body: Callable[[Any], Awaitable[Any]],
    render: Callable[[Any], None] | None = None,
    then: Callable[[Any], int] | None = None,
) -> int:
    """Run ``body`` on the client; print the wire JSON, or ``render`` it (a table by default).
    ``then`` gets the printed document and gives the exit status (``--receipt FILE``)."""
    import anyio
    from pydantic import BaseModel

    from memorywire.wire.codec import to_wire

    async def go() -> Any:
        async with _memory(args) as mem:
            return await body(mem)

    try:
        result = anyio.run(go)
    except MemorywireError as err:
        if args.json:
            _print_json(err.to_envelope())
        print(f"memorywire {args.command}: {err.code}: {err.message}", file=sys.stderr)
        for d in err.details:
            print(f"  {d.path or '(root)'}: {d.message} [{d.keyword}]", file=sys.stderr)
        return 1
    doc = to_wire(result) if isinstance(result, BaseModel) else result
    if args.json:
        _print_json(doc)
    elif render is not None:
        render(doc)
    else:
        _render(args.command, doc)
    return then(doc) if then is not None else 0


def save_receipt(args: argparse.Namespace) -> Callable[[Any], int] | None:
    """``--receipt FILE``: the signed receipt of a hard forget or erase, written in the one
    form ``memorywire receipt verify`` accepts (canonical JSON); exit 1 when none came back."""
    path = getattr(args, "receipt", None)
    if not path:
        return None

    def write(doc: Any) -> int:
        from pathlib import Path

        from memorywire.governance.receipts import dump_receipt

        got = doc if isinstance(doc, dict) else {}
        receipt = got.get("receipt")
        if receipt is None:
            if got.get("pending_approval"):
                why = "the operation is staged for review; its receipt comes with the approval"
            elif not (got.get("forgotten_ids") or got.get("erased_ids")):
                why = "nothing was erased"
            else:
                why = ("this store signs no receipts (no signing key: set "
                       "MEMORYWIRE_SIGNING_KEY or signing_key, or turn governance on)")
            print(f"memorywire {args.command}: no receipt written to {path}: {why}",
                  file=sys.stderr)
            return 1
        Path(path).write_bytes(dump_receipt(receipt))
        return 0

    return write


def _json_arg(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not JSON: {exc}") from None


def _instant(text: str) -> int:
    """Epoch ms, or an ISO 8601 date or date-time (UTC when it names no offset)."""
    if text.isdigit():
        return int(text)
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            "not epoch milliseconds or an ISO 8601 date/time") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return int(when.timestamp() * 1000)


def _json_object(text: str) -> dict[str, Any]:
    value = _json_arg(text)
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError("must be a JSON object")
    return value


def _store_flags(p: argparse.ArgumentParser, store_help: str) -> None:
    """``--store`` (repeated: a router over all of them) and ``--config``, which every command
    that opens a store reads; flags override the file."""
    p.add_argument("--store", action="append", metavar="URL",
                   help=store_help + "; repeat it to route over several stores")
    p.add_argument("--config", metavar="FILE", help="TOML or JSON configuration file "
                   "(default: $MEMORYWIRE_CONFIG); see docs/configuration.md")
    p.add_argument("--no-governance", dest="no_governance", action="store_true",
                   help="no audit log or approvals (on by default for the default store)")


def _common(p: argparse.ArgumentParser) -> None:
    _store_flags(p, "store URL (default: sqlite under the data directory)")
    p.add_argument("--server", help="server base URL, e.g. http://127.0.0.1:8765")
    p.add_argument("--token", help="bearer token for --server")
    p.add_argument("--embedder", choices=["default", "hashing"], default=None,
                   help=argparse.SUPPRESS)
    p.add_argument("--governance-db", dest="governance_db",
                   help="with --store: the governance database (approvals, audit)")
    p.add_argument("--json", action="store_true", help="print wire JSON instead of a table")


def _agent(p: argparse.ArgumentParser) -> None:
    """``--agent``, required unless ``$MEMORYWIRE_AGENT`` names one (read when the parser is
    built, so each run sees its own environment)."""
    default = os.environ.get("MEMORYWIRE_AGENT") or None
    p.add_argument("--agent", "-a", dest="agent_id", required=default is None, default=default,
                   help="the agent whose memories these are (default: $MEMORYWIRE_AGENT)")
    p.add_argument("--user", "-u", dest="user_id",
                   help="only this user's memories (user_id), within the agent's")


def _doc(args: argparse.Namespace, *keys: str) -> dict[str, Any]:
    return {k: getattr(args, k) for k in keys if getattr(args, k, None) is not None}


# --- the five operations ---------------------------------------------------------------------


def _remember(args: argparse.Namespace) -> int:
    doc = _doc(args, "agent_id", "user_id", "type", "content", "metadata", "confidence",
               "source", "expires_at", "id")
    doc.update(args.fields or {})
    if args.approval_required:
        doc["approval_required"] = True
    return _run(args, lambda m: m.remember(doc))


def _recall(args: argparse.Namespace) -> int:
    doc = _doc(args, "agent_id", "user_id", "query", "k", "types", "hops", "fusion", "filter",
               "fresher_than_days", "where", "as_of", "known_at", "asked_at")
    return _run(args, lambda m: m.recall(doc))


def _forget(args: argparse.Namespace) -> int:
    doc = _doc(args, "agent_id", "user_id", "ids", "filter", "reason")
    if args.hard_delete:
        doc["hard_delete"] = True
    if args.cascade:  # followed by the store, so it works the same on every transport
        doc["cascade"] = True
    if args.receipt and not args.hard_delete:
        print("memorywire forget: --receipt needs --hard (only a hard forget is signed)",
              file=sys.stderr)
        return 2
    return _run(args, lambda m: m.forget(doc), then=save_receipt(args))


def _merge(args: argparse.Namespace) -> int:
    doc = _doc(args, "agent_id", "user_id", "canonical", "duplicates", "strategy")
    return _run(args, lambda m: m.merge(doc))


def _expire(args: argparse.Namespace) -> int:
    policy = _doc(args, "older_than_days", "confidence_below", "no_recall_in_days")
    if args.policy_type:
        policy["type"] = args.policy_type
    doc = {**_doc(args, "agent_id", "user_id", "action"), "policy": policy}
    return _run(args, lambda m: m.expire(doc))


def _approvals(args: argparse.Namespace) -> int:
    if args.action == "list":
        doc = _doc(args, "agent_id", "status")
        return _run(args, lambda m: m.call("approvals.list", doc))
    if args.action == "show":
        return _run(args, lambda m: m.call("approvals.get", {"id": args.approval_id}))
    op = f"approvals.{args.action}"
    doc = {"id": args.approval_id, **_doc(args, "reason")}
    return _run(args, lambda m: m.call(op, doc))


def _register_ops(sub: Subparsers) -> None:
    p = sub.add_parser("remember", help="store a memory")
    _common(p)
    _agent(p)
    p.add_argument("content", help="the memory, as a sentence (quote it)")
    p.add_argument("--type", "-t", default="semantic",
                   choices=["semantic", "episodic", "procedural", "emotional"],
                   help="a fact (semantic, the default), an event (episodic), a how-to "
                        "(procedural) or a feeling (emotional)")
    p.add_argument("--metadata", type=_json_arg, help="JSON object")
    p.add_argument("--confidence", type=float, help="how sure, 0..1 (default 1)")
    p.add_argument("--source", help="where it came from (provenance, e.g. web_page, user)")
    p.add_argument("--expires-at", dest="expires_at", type=int, help="epoch ms")
    p.add_argument("--id", help="caller-chosen id (idempotent retries)")
    p.add_argument("--approval-required", action="store_true",
                   help="stage the write for a reviewer instead of storing it now")
    p.add_argument("--fields", type=_json_object,
                   help='JSON object of typed fields, e.g. \'{"valence": -0.5}\' (emotional) or '
                        '\'{"event_time": 1767225600000}\' (episodic)')
    p.set_defaults(handler=_remember)

    p = sub.add_parser("recall", help="search memories")
    _common(p)
    _agent(p)
    p.add_argument("query", help="what to look for, in words")
    p.add_argument("-k", type=int, help="at most this many results (default 5)")
    p.add_argument("--type", dest="types", action="append",
                   choices=["semantic", "episodic", "procedural", "emotional"],
                   help="only memories of this type (repeatable)")
    p.add_argument("--hops", type=int,
                   help="also follow links from the hits this many steps (default 0)")
    p.add_argument("--fusion", choices=["rrf", "max", "weighted"],
                   help="how meaning and word matches are combined (default rrf)")
    p.add_argument("--filter", type=_json_arg, help="JSON object of metadata equalities")
    p.add_argument("--fresher-than-days", dest="fresher_than_days", type=int, metavar="DAYS",
                   help="only memories written in the last DAYS days")
    p.add_argument("--where", type=_json_arg,
                   help='JSON conditions on typed fields, e.g. \'{"valence": {"lt": 0}}\'')
    p.add_argument("--as-of", dest="as_of", type=_instant, metavar="TIME",
                   help="what held at TIME (epoch ms or ISO 8601, UTC by default)")
    p.add_argument("--known-at", dest="known_at", type=_instant, metavar="TIME",
                   help="what was known at TIME (record time): memories recorded by then, "
                        "their validity as known then")
    p.add_argument("--asked-at", dest="asked_at", type=_instant, metavar="TIME",
                   help="when the question is asked: 'last Saturday' in the query counts from "
                        "TIME (epoch ms or ISO 8601; default --as-of, else now)")
    p.set_defaults(handler=_recall)

    p = sub.add_parser("forget", help="forget memories by id or metadata filter")
    _common(p)
    _agent(p)
    p.add_argument("--id", dest="ids", action="append", help="repeatable")
    p.add_argument("--filter", type=_json_arg,
                   help="JSON object of metadata equalities: forget what matches")
    p.add_argument("--hard", dest="hard_delete", action="store_true",
                   help="erase the rows (a signed receipt) instead of marking them forgotten")
    p.add_argument("--cascade", action="store_true",
                   help="also forget every memory derived from these (derived_from edges)")
    p.add_argument("--reason", help="why, kept in the audit log")
    p.add_argument("--receipt", metavar="FILE",
                   help="with --hard: write the signed deletion receipt here (the file "
                        "`memorywire receipt verify` checks)")
    p.set_defaults(handler=_forget)

    p = sub.add_parser("merge", help="merge duplicates into a canonical memory")
    _common(p)
    _agent(p)
    p.add_argument("canonical", metavar="CANONICAL", help="id of the memory that stays")
    p.add_argument("duplicates", nargs="+", metavar="DUPLICATE",
                   help="ids of the memories folded into it")
    p.add_argument("--strategy",
                   choices=["keep_canonical", "merge_content", "keep_highest_confidence"],
                   help="what the merged content is (default keep_canonical)")
    p.set_defaults(handler=_merge)

    p = sub.add_parser("expire", help="forget, archive or demote by policy")
    _common(p)
    _agent(p)
    p.add_argument("--older-than-days", dest="older_than_days", type=int, metavar="DAYS",
                   help="memories written more than DAYS days ago")
    p.add_argument("--type", dest="policy_type",
                   choices=["semantic", "episodic", "procedural", "emotional"],
                   help="only memories of this type")
    p.add_argument("--confidence-below", dest="confidence_below", type=float, metavar="C",
                   help="memories less sure than C (0..1)")
    p.add_argument("--no-recall-in-days", dest="no_recall_in_days", type=int, metavar="DAYS",
                   help="memories no recall returned in DAYS days")
    p.add_argument("--action", choices=["forget", "archive", "demote"],
                   help="what happens to them (default forget)")
    p.set_defaults(handler=_expire)

    p = sub.add_parser("approvals", help="review staged operations")
    ap = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    q = ap.add_parser("list", help="pending approvals")
    _common(q)
    q.add_argument("--agent", "-a", dest="agent_id", help="only this agent's operations")
    q.add_argument("--status", choices=["pending", "approved", "rejected"],
                   help="only operations in this state (default pending)")
    for action in ("show", "approve", "reject"):
        q = ap.add_parser(action, help=f"{action} one approval")
        _common(q)
        q.add_argument("approval_id", metavar="ID", help="the approval's id (approvals list)")
        if action != "show":
            q.add_argument("--reason", help="why, kept in the audit log")
    p.set_defaults(handler=_approvals)


# --- tokens ----------------------------------------------------------------------------------


def _token(args: argparse.Namespace) -> int:
    from memorywire.server.auth import TokenStore
    from memorywire.server.config import data_dir

    store = TokenStore(args.tokens_db or data_dir() / "tokens.db")
    try:
        if args.action == "create":
            secret, info = store.create(
                role=args.role,
                agent_ids=args.agent_ids,
                user_ids=args.user_ids,
                provenance=args.provenance,
                name=args.name or "",
            )
            if args.json:
                _print_json({"token": secret, **info.to_dict()})
            else:
                print(f"created {info.role.value} token {info.id} ({info.name})")
                print("secret (shown once, store it now):")
                print(secret)
            return 0
        if args.action == "list":
            rows = [i.to_dict() for i in store.list(include_revoked=args.all)]
            if args.json:
                _print_json({"tokens": rows})
            else:
                _render("token", {"tokens": rows})
            return 0
        info = store.revoke(args.token_id)
        if args.json:
            _print_json(info.to_dict())
        else:
            print(f"revoked {info.id} ({info.name})")
        return 0
    except MemorywireError as err:
        print(f"memorywire token: {err.code}: {err.message}", file=sys.stderr)
        return 1
    finally:
        store.close()


def _register_token(sub: Subparsers) -> None:
    p = sub.add_parser("token", help="create, list and revoke API tokens")
    tp = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    c = tp.add_parser("create", help="mint a token (the secret is printed once)")
    c.add_argument("--role", required=True, choices=["agent", "reviewer", "admin"],
                   help="agent: read and write memories; reviewer: approve; admin: all")
    c.add_argument("--agent", dest="agent_ids", action="append",
                   help="agent_id in scope (repeatable; omit for all, not allowed for agent)")
    c.add_argument("--user", dest="user_ids", action="append", help="restrict to user_ids")
    c.add_argument("--provenance", help="source stamped on every write made with the token")
    c.add_argument("--name", help="a label for the token, shown by token list")
    lst = tp.add_parser("list", help="live tokens (never their secrets)")
    lst.add_argument("--all", action="store_true", help="include revoked tokens")
    r = tp.add_parser("revoke", help="revoke a token by id")
    r.add_argument("token_id", metavar="ID", help="the token's id (token list), not its secret")
    for q in (c, lst, r):
        q.add_argument("--tokens-db", help="token database (default: <data dir>/tokens.db)")
        q.add_argument("--json", action="store_true", help="print JSON instead of text")
    p.set_defaults(handler=_token)


def register_ops(sub: Subparsers) -> None:
    _register_ops(sub)
    _register_token(sub)


REGISTER = register_ops
