"""``memorywire connect CLIENT``: wire the MCP server into a coding agent's own config file.

Each client keeps its MCP servers in a file of its own shape (:data:`CLIENTS`); this command
writes or merges one entry there, so a user never hand-edits JSON with absolute paths:

* the command is an absolute path that exists (the ``memorywire`` script of this
  interpreter), or ``uvx`` with ``--uvx``, because GUI clients start servers with a bare
  ``PATH`` where a virtual environment's script is not found;
* other servers and settings in the file are kept; the file is backed up before it is
  changed and replaced atomically, keeping its permissions;
* a file that does not parse is refused with one line naming it, never overwritten;
* ``--print`` writes nothing and prints the entry; ``--remove`` takes it out again.

Codex's file is TOML, which the standard library reads but does not write: the entry's
table is spliced into the text (comments and layout elsewhere survive), and the result is
read back and compared with the original, so a file whose ``mcp_servers`` are written in a
form the splice cannot see is refused rather than damaged.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import sys
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

__all__ = [
    "CLIENTS", "HOOKS_FILE", "ClientSpec", "ConnectError", "hooks_snippet", "merged_hooks",
    "register_connect", "server_entry",
]

_NAME = re.compile(r"^[A-Za-z0-9_-]+$")


class ConnectError(Exception):
    """A file this command will not touch, with the one line that says why."""


def _config_home() -> Path:
    """Where a Linux desktop app keeps its settings ($XDG_CONFIG_HOME, else ~/.config)."""
    xdg = os.environ.get("XDG_CONFIG_HOME")
    return Path(xdg) if xdg else Path.home() / ".config"


def _claude_desktop() -> Path:
    if sys.platform == "darwin":
        base = Path.home() / "Library" / "Application Support"
    elif sys.platform == "win32":
        base = Path(os.environ.get("APPDATA") or Path.home() / "AppData" / "Roaming")
    else:  # no official Linux build; community builds read the XDG location
        base = _config_home()
    return base / "Claude" / "claude_desktop_config.json"


def _codex() -> Path:
    home = os.environ.get("CODEX_HOME")
    return (Path(home) if home else Path.home() / ".codex") / "config.toml"


@dataclass(frozen=True)
class ClientSpec:
    """One client's MCP config file: where it is, its format, the key of its server map."""

    name: str
    path: Callable[[], Path]
    key: str
    fmt: Literal["json", "toml"] = "json"
    #: Extra fields the client wants on a stdio server entry.
    extra: tuple[tuple[str, str], ...] = ()
    where: str = ""


CLIENTS: dict[str, ClientSpec] = {
    # User scope of Claude Code: the top-level "mcpServers" of ~/.claude.json, the entry
    # `claude mcp add --scope user` writes (every project sees it).
    "claude-code": ClientSpec("claude-code", lambda: Path.home() / ".claude.json",
                              "mcpServers", extra=(("type", "stdio"),),
                              where="~/.claude.json (user scope)"),
    "claude-desktop": ClientSpec("claude-desktop", _claude_desktop, "mcpServers",
                                 where="claude_desktop_config.json"),
    "cursor": ClientSpec("cursor", lambda: Path.home() / ".cursor" / "mcp.json",
                         "mcpServers", where="~/.cursor/mcp.json"),
    # The workspace file of the folder the command runs in; --path for the user-level one.
    "vscode": ClientSpec("vscode", lambda: Path.cwd() / ".vscode" / "mcp.json", "servers",
                         extra=(("type", "stdio"),), where=".vscode/mcp.json"),
    "codex": ClientSpec("codex", _codex, "mcp_servers", fmt="toml",
                        where="~/.codex/config.toml"),
    "windsurf": ClientSpec("windsurf",
                           lambda: Path.home() / ".codeium" / "windsurf" / "mcp_config.json",
                           "mcpServers", where="~/.codeium/windsurf/mcp_config.json"),
}


def launcher(uvx: bool) -> list[str]:
    """The absolute command (and leading arguments) that runs ``memorywire``.

    The script installed beside this interpreter is the one that imports this very
    installation; failing that, one on ``PATH``; failing that, this interpreter with
    ``-m memorywire``, which always exists."""
    if uvx:
        found = shutil.which("uvx")
        return [found or "uvx", "--from", "memorywire[mcp]", "memorywire"]
    exe = Path(sys.executable)
    for candidate in (exe.parent / "memorywire", exe.parent / "memorywire.exe"):
        if candidate.is_file():
            return [str(candidate.absolute())]
    found = shutil.which("memorywire")
    if found:
        return [str(Path(found).absolute())]
    return [str(exe.absolute()), "-m", "memorywire"]


def server_entry(spec: ClientSpec, *, agent: str, uvx: bool = False,
                 store: str | None = None) -> dict[str, Any]:
    """The server entry for ``spec``'s file: stdio ``memorywire mcp`` with its agent."""
    cmd = launcher(uvx)
    args = [*cmd[1:], "mcp", *(["--store", store] if store else [])]
    entry: dict[str, Any] = dict(spec.extra)
    entry.update({"command": cmd[0], "args": args, "env": {"MEMORYWIRE_AGENT": agent}})
    return entry


# --- JSON files ------------------------------------------------------------------------------


def _read_json(path: Path, what: str) -> dict[str, Any]:
    if not path.exists():
        return {}
    text = path.read_text(encoding="utf-8")
    if not text.strip():
        return {}
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise ConnectError(f"{path} is not valid JSON ({exc}); fix or move it, "
                           "nothing was changed") from None
    if not isinstance(doc, dict):
        raise ConnectError(f"{path} is not a JSON object; nothing was changed")
    inner = doc.get(what)
    if inner is not None and not isinstance(inner, dict):
        raise ConnectError(f"{path}: {what!r} is not an object; nothing was changed")
    return doc


def _json_text(doc: dict[str, Any]) -> str:
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def merged_json(path: Path, key: str, name: str, entry: dict[str, Any] | None) -> str | None:
    """The file's new text with ``name`` set to ``entry`` (``None``: removed); ``None`` when
    there is nothing to remove."""
    doc = _read_json(path, key)
    servers = dict(doc.get(key) or {})
    if entry is None:
        if name not in servers:
            return None
        del servers[name]
    else:
        servers[name] = entry
    doc[key] = servers
    return _json_text(doc)


# --- TOML (Codex) ----------------------------------------------------------------------------


def _toml_str(value: str) -> str:
    """A TOML basic string. JSON's escapes are TOML's, but only without ``ensure_ascii``
    (TOML has no surrogate pairs); DEL is the one character JSON leaves that TOML refuses."""
    return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")


def toml_table(key: str, name: str, entry: dict[str, Any]) -> str:
    lines = [f"[{key}.{name}]"]
    for k, v in entry.items():
        if isinstance(v, str):
            lines.append(f"{k} = {_toml_str(v)}")
        elif isinstance(v, list):
            lines.append(f"{k} = [{', '.join(_toml_str(str(x)) for x in v)}]")
        elif isinstance(v, dict):
            pairs = ", ".join(f"{_toml_str(a)} = {_toml_str(str(b))}" for a, b in v.items())
            lines.append(f"{k} = {{ {pairs} }}")
    return "\n".join(lines) + "\n"


def _without_table(text: str, key: str, name: str) -> str:
    """``text`` without the ``[key.name]`` table and its sub-tables."""
    ours = re.compile(rf'^\s*\[\s*{key}\s*\.\s*("?){re.escape(name)}\1\s*(\.[^\]]*)?\]\s*(#.*)?$')
    header = re.compile(r"^\s*\[")
    out: list[str] = []
    skipping = False
    for line in text.splitlines(keepends=True):
        if header.match(line):
            skipping = bool(ours.match(line))
        if not skipping:
            out.append(line)
    return "".join(out)


def _drop(doc: dict[str, Any], key: str, name: str) -> dict[str, Any]:
    servers = doc.get(key)
    if isinstance(servers, dict) and name in servers:
        doc = {**doc, key: {k: v for k, v in servers.items() if k != name}}
        if not doc[key]:
            del doc[key]
    return doc


def merged_toml(path: Path, key: str, name: str, entry: dict[str, Any] | None) -> str | None:
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    try:
        before = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConnectError(f"{path} is not valid TOML ({exc}); fix or move it, "
                           "nothing was changed") from None
    servers = before.get(key, {})
    if not isinstance(servers, dict):
        raise ConnectError(f"{path}: {key!r} is not a table; nothing was changed")
    if entry is None and name not in servers:
        return None
    new = _without_table(text, key, name)
    if entry is not None:
        if new and not new.endswith("\n"):
            new += "\n"
        new += ("\n" if new.strip() else "") + toml_table(key, name, entry)
    try:
        after = tomllib.loads(new)
    except tomllib.TOMLDecodeError:
        after = None
    ok = after is not None and _drop(after, key, name) == _drop(before, key, name)
    if ok and entry is not None:
        ok = after is not None and after.get(key, {}).get(name) == entry
    if not ok:
        raise ConnectError(f"{path}: [{key}.{name}] is written in a form this command "
                           "cannot edit safely (inline or dotted keys); edit it by hand, "
                           "nothing was changed")
    return new


# --- Claude Code hooks (memorywire.cli.hooks runs them) ------------------------------------

#: Claude Code's user settings, relative to the home folder.
HOOKS_FILE = Path(".claude") / "settings.json"
_EVENTS = {"SessionStart": "session-start", "Stop": "stop"}

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


# --- writing ---------------------------------------------------------------------------------


def write_with_backup(path: Path, text: str) -> Path | None:
    """Replace ``path`` with ``text`` atomically; the old file is copied to a timestamped
    ``.bak`` first (returned), and its permissions are kept (``~/.claude.json`` is private)."""
    backup = None
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
        backup = path.with_name(f"{path.name}.{stamp}.bak")
        shutil.copy2(path, backup)
    tmp = path.with_name(f".{path.name}.memorywire-tmp")
    tmp.write_text(text, encoding="utf-8")
    if backup is not None:
        shutil.copymode(backup, tmp)
    os.replace(tmp, path)
    return backup


def _edit(path: Path, spec_fmt: str, key: str, name: str,
          entry: dict[str, Any] | None) -> str | None:
    merge = merged_toml if spec_fmt == "toml" else merged_json
    return merge(path, key, name, entry)


def _connect(args: argparse.Namespace) -> int:
    spec = CLIENTS[args.client]
    prog = "memorywire connect"
    if not _NAME.match(args.name):
        print(f"{prog}: --name {args.name!r}: use letters, digits, '-' and '_' only",
              file=sys.stderr)
        return 2
    if args.hooks and spec.name != "claude-code":
        print(f"{prog}: --hooks: only claude-code has session hooks", file=sys.stderr)
        return 2
    path = Path(args.path).expanduser() if args.path else spec.path()
    entry = None if args.remove else server_entry(
        spec, agent=args.agent or spec.name, uvx=args.uvx, store=args.store)
    hooks_path = Path.home() / HOOKS_FILE
    if args.print:
        if entry is None:
            print(f"would remove {args.name!r} from {path}")
            return 0
        if spec.fmt == "toml":
            sys.stdout.write(toml_table(spec.key, args.name, entry))
        elif args.hooks:
            print(json.dumps({str(path): {spec.key: {args.name: entry}},
                              str(hooks_path): hooks_snippet(launcher(args.uvx), args.agent
                                                             or spec.name)}, indent=2))
        else:
            print(json.dumps({spec.key: {args.name: entry}}, indent=2, ensure_ascii=False))
        return 0
    try:
        text = _edit(path, spec.fmt, spec.key, args.name, entry)
        hooks_text = None
        if args.hooks or (args.remove and spec.name == "claude-code"):
            cmd = None if args.remove else launcher(args.uvx)
            hooks_text = merged_hooks(hooks_path, cmd, args.agent or spec.name)
    except ConnectError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 1
    for target, new in ((path, text), (hooks_path, hooks_text)):
        if new is None:
            continue
        backup = write_with_backup(target, new)
        kept = f" (backup: {backup})" if backup else ""
        print(f"{'updated' if backup else 'created'} {target}{kept}")
    if text is None and args.remove:
        print(f"{args.name!r} was not in {path}; nothing to remove")
    if entry is not None:
        _warn_missing_mcp(prog)
        print(f"restart {spec.name} to load {args.name!r} ({entry['command']} "
              f"{' '.join(entry['args'])})")
    return 0


def _warn_missing_mcp(prog: str) -> None:
    from importlib.util import find_spec

    if find_spec("mcp") is None:
        print(f"{prog}: warning: the MCP extra is not installed here; "
              "pip install 'memorywire[mcp]' (or use --uvx)", file=sys.stderr)


def register_connect(subparsers: Any) -> None:
    where = "; ".join(f"{n}: {c.where}" for n, c in CLIENTS.items())
    p = subparsers.add_parser(
        "connect", help="add memorywire to a coding agent's MCP config (Claude, Cursor, ...)",
        description=f"Write or merge the MCP server entry into a client's config file "
                    f"({where}). Other servers are kept and the file is backed up first.")
    p.add_argument("client", choices=list(CLIENTS), metavar="CLIENT",
                   help=f"one of: {', '.join(CLIENTS)}")
    p.add_argument("--print", action="store_true",
                   help="print the entry in the client's format; write nothing")
    p.add_argument("--remove", action="store_true",
                   help="take the entry (and claude-code's hooks) out of the file again")
    p.add_argument("--path", metavar="FILE",
                   help="edit this file instead of the client's default one")
    p.add_argument("--name", default="memorywire",
                   help="the server's name in the file (default memorywire)")
    p.add_argument("--agent", metavar="NAME",
                   help="agent_id the tools default to (default: the client's name)")
    p.add_argument("--store", metavar="URL",
                   help="store URL for the server (default: the default store)")
    p.add_argument("--uvx", action="store_true",
                   help="run the server with uvx (memorywire[mcp] from the package index) "
                        "instead of this installation's script")
    p.add_argument("--hooks", action="store_true",
                   help="claude-code only: also add hooks to ~/.claude/settings.json that "
                        "recall at session start and offer to remember before it ends")
    p.set_defaults(handler=_connect)
