"""``memorywire get|list|update|history|erase``: the record operations from a shell.

They share the data commands' conventions (``--store`` or ``--server``/``--token``, ``--json``
for the wire document, exit 1 with the error code on stderr). ``erase`` removes every memory
of an agent or user for good, so it asks for ``--yes`` rather than trusting a stray Enter.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from memorywire.cli.ops import _agent, _common, _doc, _instant, _json_arg, _run, save_receipt
from memorywire.cli.render import excerpt, fit_table, iso

__all__ = ["REGISTER", "register_records"]

_TYPES = ["semantic", "episodic", "procedural", "emotional"]


def _content(rec: dict[str, Any]) -> str:
    return excerpt(rec.get("content", ""), 120)


def _show_memories(rows: list[dict[str, Any]], title: str) -> None:
    from rich.console import Console

    console = Console()
    cells = [[r["id"], r["type"], _content(r), r.get("user_id") or "", iso(r["created_at"])]
             for r in rows]
    console.print(fit_table(console, title, ["id", "type", "content", "user", "created_at"],
                            cells, wide="content"))


def _show_one(doc: dict[str, Any]) -> None:
    _show_memories([doc["memory"]], "memory")


def _show_page(doc: dict[str, Any]) -> None:
    _show_memories(doc["memories"], f"{len(doc['memories'])} memories")
    if doc["next_cursor"]:
        print(f"more: --cursor {doc['next_cursor']}")


def _show_history(doc: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table("seq", "at", "actor", "operation", "phase", "reason", title=doc["id"])
    for r in doc["revisions"]:
        table.add_row(str(r["seq"]), iso(r["at"]), r["actor"], r["operation"], r["phase"],
                      r.get("reason") or "")
    Console().print(table)


def _show_erase(doc: dict[str, Any]) -> None:
    if doc["pending_approval"]:
        print(f"staged for review: {doc.get('approval_url') or 'see memorywire approvals list'}")
    else:
        print(f"erased {len(doc['erased_ids'])} memories")


def _get(args: argparse.Namespace) -> int:
    doc = _doc(args, "agent_id", "user_id", "id")
    return _run(args, lambda m: m.get(doc), _show_one)


def _list(args: argparse.Namespace) -> int:
    doc = _doc(args, "agent_id", "user_id", "types", "filter", "limit", "cursor", "as_of",
               "known_at")
    if args.include_archived:
        doc["include_archived"] = True

    async def every_page(m: Any) -> Any:
        page = await m.list(doc)
        if not args.all:
            return page
        rows = list(page.memories)
        while page.next_cursor is not None:
            page = await m.list({**doc, "cursor": page.next_cursor})
            rows += page.memories
        return page.model_copy(update={"memories": rows, "next_cursor": None})

    return _run(args, every_page, _show_page)


def _update(args: argparse.Namespace) -> int:
    doc = _doc(args, "agent_id", "user_id", "id", "content", "metadata", "confidence",
               "supersedes", "reason")
    return _run(args, lambda m: m.update(doc), _show_one)


def _history(args: argparse.Namespace) -> int:
    doc = _doc(args, "agent_id", "user_id", "id", "limit")
    return _run(args, lambda m: m.history(doc), _show_history)


def _erase(args: argparse.Namespace) -> int:
    if not args.yes:
        who = f"user {args.user_id!r} of agent" if args.user_id else "agent"
        print(f"memorywire erase: this removes every memory of {who} {args.agent_id!r} for "
              "good; pass --yes to go ahead", file=sys.stderr)
        return 2
    doc = _doc(args, "agent_id", "user_id", "reason")
    return _run(args, lambda m: m.erase(doc), _show_erase, then=save_receipt(args))


def register_records(sub: Any) -> None:
    p = sub.add_parser("get", help="read one memory by id")
    _common(p)
    _agent(p)
    p.add_argument("id", metavar="ID", help="the memory's id")
    p.set_defaults(handler=_get)

    p = sub.add_parser("list", help="list memories oldest first, a page at a time")
    _common(p)
    _agent(p)
    p.add_argument("--type", dest="types", action="append", choices=_TYPES, help="repeatable")
    p.add_argument("--filter", type=_json_arg, help="JSON object of metadata equalities")
    p.add_argument("--archived", dest="include_archived", action="store_true",
                   help="include archived memories")
    p.add_argument("--limit", type=int, help="memories per page (default 100)")
    p.add_argument("--cursor", help="next_cursor of the previous page")
    p.add_argument("--all", action="store_true", help="follow next_cursor to the end")
    p.add_argument("--as-of", dest="as_of", type=_instant, metavar="TIME",
                   help="only what held at TIME (valid time; epoch ms or ISO 8601, UTC by "
                        "default)")
    p.add_argument("--known-at", dest="known_at", type=_instant, metavar="TIME",
                   help="only what was known at TIME (record time), as known then")
    p.set_defaults(handler=_list)

    p = sub.add_parser("update", help="change a memory's content, metadata or confidence, or "
                                      "the memories it supersedes")
    _common(p)
    _agent(p)
    p.add_argument("id", metavar="ID", help="the memory's id")
    p.add_argument("--content", help="new content (re-indexed for recall)")
    p.add_argument("--metadata", type=_json_arg,
                   help="JSON object of keys to set; a key set to null is removed")
    p.add_argument("--confidence", type=float, help="how sure, 0..1")
    p.add_argument("--supersedes", action="append", metavar="OLD_ID",
                   help="a memory this one replaces (repeatable): it leaves default recall")
    p.add_argument("--reason", help="why (kept in the memory's history)")
    p.set_defaults(handler=_update)

    p = sub.add_parser("history", help="every recorded change of a memory (needs governance)")
    _common(p)
    _agent(p)
    p.add_argument("id", metavar="ID", help="the memory's id")
    p.add_argument("--limit", type=int, help="at most this many changes (default 100)")
    p.set_defaults(handler=_history)

    p = sub.add_parser("erase", help="erase every memory of an agent or of one user")
    _common(p)
    _agent(p)
    p.add_argument("--reason", help="why (audit log, reviewer)")
    p.add_argument("--yes", action="store_true", help="confirm: this cannot be undone")
    p.add_argument("--receipt", metavar="FILE",
                   help="write the signed deletion receipt here (the file `memorywire "
                        "receipt verify` checks)")
    p.set_defaults(handler=_erase)


REGISTER = register_records
