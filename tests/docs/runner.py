"""Running a docs unit (one block, or a session's blocks) as a reader would, in a fresh place.

Each unit gets an empty folder and a home of its own (``memorywire.testing.home.private_env``:
HOME, the XDG folders and the data directory inside it, no deployment settings), with the
project's environment first on ``PATH`` (so ``memorywire`` is this checkout's) and
``.venv`` in the folder pointing at it (so ``.venv/bin/python`` is too). The model cache is
the one the test session already uses: building the ONNX graph once is a cache, not state a
reader's command depends on. Shell blocks run under ``bash -e -o pipefail`` (every command
must succeed, as a reader pasting them would notice otherwise), Python blocks as a file;
both with FutureWarning as an error, so an example that drifts to a deprecated form fails.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from memorywire.testing.home import private_env
from tests.docs.blocks import Block, Unit, console_commands

BLOCK_TIMEOUT_S = 120.0
#: Point a block's writes outside its home (``connect codex`` honours ``CODEX_HOME``,
#: ``connect claude-desktop`` ``APPDATA``) or change what it does (the default agent).
_ELSEWHERE = ("MEMORYWIRE_AGENT", "CODEX_HOME", "APPDATA", "LOCALAPPDATA", "CLAUDE_CONFIG_DIR")
SERVER_START_S = 60.0


@dataclass
class Outcome:
    """Whether a unit ran through, and the output of every block for the failure message."""

    ok: bool = True
    log: list[str] = field(default_factory=list)

    def fail(self, block: Block, why: str, output: str = "") -> None:
        self.ok = False
        self.log.append(f"{block.page.name}:{block.line}: {why}\n{output[-4000:]}")


def unit_env(root: Path) -> dict[str, str]:
    """The environment of a unit whose folder and home live under ``root``."""
    env = dict(os.environ)
    cache = env.get("MEMORYWIRE_CACHE_DIR") or str(Path.home() / ".cache" / "memorywire")
    for name, value in private_env(root, env).items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    Path(env["HOME"]).mkdir(parents=True, exist_ok=True)
    env["MEMORYWIRE_CACHE_DIR"] = cache
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONWARNINGS"] = "error::FutureWarning"
    for name in _ELSEWHERE:
        env.pop(name, None)
    return env


def command(block: Block, folder: Path) -> list[str]:
    """The process that runs ``block`` in ``folder``."""
    if block.lang == "python":
        script = folder / f"block_{block.line}.py"
        script.write_text(block.code, encoding="utf-8")
        return [sys.executable, "-W", "error::FutureWarning", script.name]
    code = console_commands(block.code) if block.lang == "console" else block.code
    return ["bash", "-e", "-o", "pipefail", "-c", code]


def port_open(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def _stop(proc: subprocess.Popen[str]) -> str:
    """End a background block and its children; its output so far."""
    for sig, wait in ((signal.SIGTERM, 15.0), (signal.SIGKILL, 5.0)):
        if proc.poll() is not None:
            break
        os.killpg(proc.pid, sig)
        try:
            proc.wait(wait)
        except subprocess.TimeoutExpired:
            continue
    out, _ = proc.communicate()
    _kill_group(proc.pid)
    return out


def _kill_group(pgid: int) -> None:
    """Whatever a block left behind in its process group (``cmd &``, a child of a
    timed-out shell) goes with it: a block never leaves a process running."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)


def _run_foreground(block: Block, folder: Path, env: dict[str, str]) -> tuple[int | None, str]:
    """The block's exit status (``None``: timed out) and its output."""
    proc = subprocess.Popen(command(block, folder), cwd=folder, env=env, text=True,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=BLOCK_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        _kill_group(proc.pid)
        out, _ = proc.communicate()
        return None, out
    _kill_group(proc.pid)
    return proc.returncode, out


def _start_server(block: Block, folder: Path, env: dict[str, str],
                  outcome: Outcome) -> subprocess.Popen[str] | None:
    port = block.server
    assert port is not None
    if port_open(port):
        outcome.fail(block, f"port {port} is already in use on this machine; the block "
                            "needs it free")
        return None
    proc = subprocess.Popen(command(block, folder), cwd=folder, env=env, text=True,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + SERVER_START_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            outcome.fail(block, f"exited with {proc.returncode} before port {port} opened",
                         _stop(proc))
            return None
        if port_open(port):
            return proc
        time.sleep(0.2)
    outcome.fail(block, f"port {port} did not open within {SERVER_START_S:.0f} s", _stop(proc))
    return None


def run_unit(unit: Unit, root: Path) -> Outcome:
    """Run ``unit``'s blocks in order in a fresh folder and home under ``root``."""
    folder = root / "work"
    folder.mkdir(parents=True)
    (folder / ".venv").symlink_to(Path(sys.prefix), target_is_directory=True)
    env = unit_env(root)
    outcome = Outcome()
    servers: list[tuple[Block, subprocess.Popen[str]]] = []
    try:
        for block in unit.blocks:
            if block.server is not None:
                proc = _start_server(block, folder, env, outcome)
                if proc is None:
                    return outcome
                servers.append((block, proc))
                continue
            code, output = _run_foreground(block, folder, env)
            if code is None:
                outcome.fail(block, f"still running after {BLOCK_TIMEOUT_S:.0f} s", output)
                return outcome
            if code != 0:
                outcome.fail(block, f"exited with {code}", output)
                return outcome
        for block, proc in servers:
            if proc.poll() is not None:
                outcome.fail(block, f"the server exited with {proc.returncode} while the "
                                    "session's other blocks ran", _stop(proc))
    finally:
        for _, proc in servers:
            _stop(proc)
    return outcome
