"""A governed SQLite store in a child process that SIGKILLs itself around the store's commit.

The crash tests of governance need a real process death at an exact point, not an exception:
an exception unwinds through ``finally`` blocks and commits, a SIGKILL leaves the files as the
disk holds them. The child wraps the inner ``SqliteStore`` so that its ``remember`` kills the
process just before or just after the inner commit, runs one governed call (the test's
``action``), and must die there; the parent then reopens the same files.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Literal

from memorywire.embed.hashing import HashingEmbedder
from memorywire.governance import GovernedStore
from memorywire.store.sqlite import SqliteStore

_CHILD = r"""
import os, signal, sys
from pathlib import Path
import anyio
from memorywire.embed.hashing import HashingEmbedder
from memorywire.governance import GovernedStore, acting_as
from memorywire.store.sqlite import SqliteStore
from memorywire.wire.models import RememberRequest

when, tmp, args = sys.argv[1], Path(sys.argv[2]), sys.argv[3:]

class KillAroundRemember:
    honours_write_bracket = False  # governance's async path: intent, this call, then done

    def __init__(self, inner):
        self._inner = inner
    def __getattr__(self, name):
        return getattr(self._inner, name)
    async def remember(self, req):
        if when == "before":
            os.kill(os.getpid(), signal.SIGKILL)
        resp = await self._inner.remember(req)
        if when == "after":
            os.kill(os.getpid(), signal.SIGKILL)  # the effect is stored, nothing after it
        return resp

async def main():
    inner = SqliteStore(tmp / "mem.db", embedder=HashingEmbedder())
    g = GovernedStore(KillAroundRemember(inner), tmp / "gov.db")
ACTION

anyio.run(main)
"""


def run_killed(tmp: Path, when: Literal["before", "after"], action: str, *args: str) -> None:
    """Run ``action`` (statements inside the child's ``async def main``, with ``g``, ``args``
    and ``acting_as`` in scope) in a child killed ``when`` the inner remember commits."""
    body = textwrap.indent(textwrap.dedent(action).strip("\n"), "    ")
    code = _CHILD.replace("ACTION", body)
    proc = subprocess.run([sys.executable, "-c", code, when, str(tmp), *args],
                          capture_output=True, timeout=120, check=False)
    assert proc.returncode == -signal.SIGKILL, proc.stderr.decode()


def open_governed(tmp: Path) -> tuple[SqliteStore, GovernedStore]:
    """The inner store and its governance over the files the child used."""
    inner = SqliteStore(tmp / "mem.db", embedder=HashingEmbedder())
    return inner, GovernedStore(inner, tmp / "gov.db")
