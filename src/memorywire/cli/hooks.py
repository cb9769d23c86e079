"""Claude Code session hooks (opt-in: ``memorywire connect claude-code --hooks``).

Tools alone leave it to the model to think of memory; two hooks make it routine:

They are written into ``~/.claude/settings.json`` by :mod:`memorywire.cli.connect`.

* ``SessionStart`` runs ``memorywire hook session-start``: the agent's memories most
  relevant to the project folder are recalled and printed, and Claude Code adds a
  SessionStart hook's output to the model's context;
* ``Stop`` runs ``memorywire hook stop``: the first time the model stops in a session it is
  asked, once, to offer the user to remember what is worth keeping (a Stop hook reaches the
  model only through a ``{"decision": "block", "reason": ...}`` answer; ``stop_hook_active``
  and a per-session marker keep it from asking again).

A hook never breaks a session: any failure prints nothing to the model and exits 0.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

__all__ = ["OFFER", "REMINDER", "register_hook"]

_MARKERS_KEPT_S = 7 * 24 * 3600

REMINDER = (
    "memorywire is connected: call its `recall` tool before answering questions about the "
    "user's preferences, earlier decisions or this project's conventions, and offer to "
    "`remember` durable facts you learn (not transient task details)."
)
OFFER = (
    "Before you finish: if this session produced durable facts worth keeping (the user's "
    "preferences, project decisions or conventions) that are not yet stored, offer the user "
    "to store them with memorywire's `remember` tool. If there are none, or they are stored, "
    "just stop."
)


def _input() -> dict[str, Any]:
    try:
        data = json.loads(sys.stdin.read() or "{}")
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def _recall_lines(agent: str, folder: str) -> list[str]:
    import anyio

    from memorywire.client import Memory
    from memorywire.server.auth import Principal
    from memorywire.server.config import load_config
    from memorywire.server.runtime import running

    async def go() -> list[str]:
        async with running(load_config(), reads_need_file=True) as rt:
            mem = Memory(runtime=rt, principal=Principal.local_operator())
            hits = await mem.recall(f"{folder} project conventions decisions preferences",
                                    agent_id=agent, k=8)
            return [f"- [{h.type}] {h.content}" for h in hits.results]

    return anyio.run(go)


def _session_start(args: argparse.Namespace) -> int:
    data = _input()
    folder = Path(str(data.get("cwd") or Path.cwd())).name
    try:
        lines = _recall_lines(args.agent, folder)
    except Exception:  # a hook must not break the session; the store may not exist yet
        lines = []
    if lines:
        print(f"Memories of agent {args.agent!r} from memorywire that may matter here:")
        print("\n".join(lines))
    print(REMINDER)
    return 0


def _stop(args: argparse.Namespace) -> int:
    data = _input()
    if data.get("stop_hook_active"):
        return 0
    session = "".join(c for c in str(data.get("session_id") or "") if c.isalnum() or c in "-_")
    if not session:
        return 0
    try:
        from memorywire.server.config import data_dir

        marks = data_dir() / "hook-sessions"
        marks.mkdir(parents=True, exist_ok=True)
        mark = marks / session
        if mark.exists():
            return 0
        mark.touch()
        now = time.time()
        for old in marks.iterdir():
            if now - old.stat().st_mtime > _MARKERS_KEPT_S:
                old.unlink(missing_ok=True)
    except OSError:
        return 0
    print(json.dumps({"decision": "block", "reason": OFFER}))
    return 0


def register_hook(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "hook", help="Claude Code session hooks (installed by connect claude-code --hooks)",
        description="Read the hook's JSON on stdin; print what Claude Code passes to the "
                    "model. Never fails a session: errors print nothing and exit 0.")
    sub = p.add_subparsers(dest="event", metavar="EVENT", required=True)
    for name, text in (("session-start", "print memories relevant to the project folder"),
                       ("stop", "ask the model once per session to offer to remember")):
        q = sub.add_parser(name, help=text)
        q.add_argument("--agent", default="claude-code",
                       help="agent_id whose memories are recalled (default claude-code)")
        q.set_defaults(handler=_session_start if name == "session-start" else _stop)
