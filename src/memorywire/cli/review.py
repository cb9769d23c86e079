"""``memorywire review-store``: the reviewer UI's store review from the shell.

Lists the near-duplicates and contradictions among stored memories
(:mod:`memorywire.governance.store_review`), each under a key; ``--apply KEY=ACTION`` carries
out the chosen ones through governance as the local operator, exactly as the UI's *Apply
selected* does (audited; staged for approval where the policy says so). Needs governance,
which is on for the default store.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from memorywire.cli.guard import guarded
from memorywire.errors import InvalidRequest

__all__ = ["register_review"]


def _picks(values: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for value in values:
        key, sep, action = value.partition("=")
        if not sep or not key or not action:
            raise InvalidRequest(f"--apply: expected KEY=ACTION (got {value!r})")
        out[key] = action
    return out


def _doc(p: Any) -> dict[str, Any]:
    return {"key": p.key, "kind": p.kind, "agent_id": p.agent_id, "user_id": p.user_id,
            "type": p.type, "why": p.why, "similarity": p.similarity,
            "actions": list(p.actions),
            "keep": {"id": p.keep.id, "content": p.keep.content},
            "others": [{"id": o.id, "content": o.content} for o in p.others]}


def _line(text: Any, width: int = 70) -> str:
    s = " ".join(str(text).split())
    return s if len(s) <= width else s[: width - 1] + "…"


def _review(args: argparse.Namespace) -> int:
    import anyio

    from memorywire.governance.store_review import apply, by_key, propose
    from memorywire.server.auth import LOCAL_OPERATOR
    from memorywire.server.config import load_config
    from memorywire.server.runtime import running

    picks = _picks(args.apply or [])
    config = load_config(args.config, overrides={"store": args.store,
                                                 "embedder": args.embedder})

    async def go() -> list[dict[str, Any]]:
        async with running(config) as runtime:
            if runtime.governed is None:
                raise InvalidRequest("review-store needs governance: its decisions are "
                                     "audited (give the store a governance database)")
            found = await propose(runtime.governed, int(time.time() * 1000),
                                  agent_id=args.agent)
            if not picks:
                return [_doc(p) for p in found]
            current = by_key(found)
            done: list[dict[str, Any]] = []
            for key, action in picks.items():
                p = current.get(key)
                if p is None:
                    done.append({"key": key, "error": "not proposed (see the list)"})
                    continue
                if action not in p.actions:
                    done.append({"key": key, "error": f"action must be "
                                                      f"{' or '.join(p.actions)}"})
                    continue
                out = await apply(runtime.governed, p, action, LOCAL_OPERATOR)
                done.append({"key": key, "action": action, "done": out.done,
                             "staged": out.staged})
            return done

    result = anyio.run(go)
    if args.json:
        print(json.dumps(result, ensure_ascii=False, indent=2))
    elif picks:
        for r in result:
            what = r.get("error") or (f"staged for approval: {', '.join(r['staged'])}"
                                      if r["staged"] else f"{r['action']}: done")
            print(f"{r['key']}  {what}")
    elif not result:
        print("nothing to review: no near-duplicates or contradictions among current memories")
    else:
        for p in result:
            print(f"{p['key']}  {p['kind']}  {p['agent_id']}  {p['type']}  "
                  f"({' | '.join(p['actions'])})  {p['why']}")
            print(f"    keep   {p['keep']['id']}  {_line(p['keep']['content'])}")
            for o in p["others"]:
                print(f"    other  {o['id']}  {_line(o['content'])}")
    return 1 if picks and any("error" in r for r in result) else 0


def register_review(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "review-store",
        help="near-duplicates and contradictions already stored, to merge, supersede or forget",
        description="List the candidates (a key each), or carry out the ones given with "
        "--apply through governance as the local operator (audited; staged for approval "
        "where the policy says so). Exit 1 when an --apply could not be carried out.",
    )
    p.add_argument("--store", metavar="URL", help="e.g. sqlite:///mem.db (default: the "
                   "configuration's store, else the default one)")
    p.add_argument("--config", metavar="FILE", help="configuration file (default: "
                   "$MEMORYWIRE_CONFIG)")
    p.add_argument("--embedder", help=argparse.SUPPRESS)
    p.add_argument("--agent", default=None, help="only this agent's memories (default: all)")
    p.add_argument("--apply", action="append", metavar="KEY=ACTION",
                   help="carry out a listed candidate: merge or forget (duplicate), "
                   "supersede or forget (contradiction); repeat for several")
    p.add_argument("--json", action="store_true", help="the candidates (or outcomes) as JSON")
    p.set_defaults(handler=guarded("review-store", _review))
