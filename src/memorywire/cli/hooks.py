"""Claude Code session hooks (opt-in: ``memorywire connect claude-code --hooks``).

Tools alone leave it to the model to think of memory; two hooks make it routine:

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
import shlex
import sys
import time
from pathlib import Path
from typing import Any

__all__ = ["HOOKS_FILE", "hooks_snippet", "merged_hooks", "register_hook"]

#: Claude Code's user settings, relative to the home folder.
HOOKS_FILE = Path(".claude") / "settings.json"
_EVENTS = {"SessionStart": "session-start", "Stop": "stop"}
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


def _command(cmd: list[str], event: str, agent: str) -> str:
    return shlex.join([*cmd, "hook", event, "--agent", agent])


def _ours(group: Any) -> bool:
    """Whether a hook group is one this module wrote (any launcher, any agent)."""
    hooks = group.get("hooks") if isinstance(group, dict) else None
    return isinstance(hooks, list) and any(
        isinstance(h, dict) and "memorywire" in str(h.get("command", ""))
        and any(f" hook {e}" in str(h.get("command", "")) for e in _EVENTS.values())
        for h in hooks)


def hooks_snippet(cmd: list[str], agent: str) -> dict[str, Any]:
    return {"hooks": {event: [{"hooks": [{"type": "command",
                                          "command": _command(cmd, sub, agent),
                                          "timeout": 30}]}]
                      for event, sub in _EVENTS.items()}}


def merged_hooks(path: Path, cmd: list[str] | None, agent: str) -> str | None:
    """``path``'s new text with our hooks (``cmd`` ``None``: without them); ``None`` when
    nothing changes. Other hooks and settings are kept."""
    from memorywire.cli.connect import ConnectError

    doc: dict[str, Any] = {}
    if path.exists() and path.read_text(encoding="utf-8").strip():
        try:
            loaded = json.loads(path.read_text(encoding="utf-8"))
        except ValueError as exc:
            raise ConnectError(f"{path} is not valid JSON ({exc}); nothing was changed") from None
        if not isinstance(loaded, dict) or not isinstance(loaded.get("hooks", {}), dict):
            raise ConnectError(f"{path}: not a settings object with a 'hooks' object; "
                               "nothing was changed")
        doc = loaded
    hooks: dict[str, Any] = dict(doc.get("hooks") or {})
    before = json.dumps(hooks, sort_keys=True)
    for event in _EVENTS:
        groups = hooks.get(event) or []
        if not isinstance(groups, list):
            raise ConnectError(f"{path}: hooks.{event} is not a list; nothing was changed")
        kept = [g for g in groups if not _ours(g)]
        if cmd is not None:
            kept += hooks_snippet(cmd, agent)["hooks"][event]
        if kept:
            hooks[event] = kept
        else:
            hooks.pop(event, None)
    if json.dumps(hooks, sort_keys=True) == before:
        return None
    doc["hooks"] = hooks
    if not hooks:
        del doc["hooks"]
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


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
