"""``memorywire serve`` of this checkout as subprocesses, for the tests that need real servers
(several processes on one database, several workers on one port).

Starting is split from waiting so that several servers boot side by side and one deadline
covers them all; the deadlines are generous because these tests run on loaded CI machines.
Every server's output goes to its own log file, which is what a failure shows.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import httpx
import pytest

from memorywire.governance.audit import AuditLog
from memorywire.server.auth import TokenStore


def free_port() -> int:
    """A port nothing listens on now (the kernel's pick)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass(frozen=True)
class Tokens:
    """The three callers these tests need: a writer for ``agents``, a reviewer, an admin."""

    writer: str
    reviewer: str
    admin: str


def make_tokens(path: Path, agents: Sequence[str]) -> Tokens:
    store = TokenStore(path)
    try:
        writer, _ = store.create(role="agent", agent_ids=tuple(agents), name="writer")
        reviewer, _ = store.create(role="reviewer", name="reviewer")
        admin, _ = store.create(role="admin", name="auditor")
    finally:
        store.close()
    return Tokens(writer, reviewer, admin)


@dataclass
class Server:
    """One ``memorywire serve`` subprocess: its base URL, its process and its log."""

    base: str
    proc: subprocess.Popen[bytes]
    log_path: Path
    _log: IO[bytes] = field(repr=False)
    _terminated: bool = field(default=False, repr=False)

    @classmethod
    def start(cls, home: Path, name: str, *args: str, port: int | None = None) -> Server:
        """Start ``memorywire serve ARGS --host 127.0.0.1 --port PORT``, logging to
        ``home/NAME.log``, with ``MEMORYWIRE_HOME`` under ``home``."""
        port = free_port() if port is None else port
        env = {**os.environ, "MEMORYWIRE_HOME": str(home / "home")}
        cmd = [sys.executable, "-m", "memorywire.cli", "serve", *args,
               "--host", "127.0.0.1", "--port", str(port)]
        log_path = home / f"{name}.log"
        log = open(log_path, "wb")  # noqa: SIM115  closed by stop()
        try:
            proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=log)
        except BaseException:
            log.close()
            raise
        return cls(f"http://127.0.0.1:{port}", proc, log_path, log)

    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def ready(self, banner: bytes | None) -> bool:
        """Whether it serves: ``banner`` is in its log, or (no banner) ``/v0/health`` says 200."""
        if banner is not None:
            return banner in self.log_path.read_bytes()
        try:
            return httpx.get(self.base + "/v0/health", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    def terminate(self) -> None:
        """Ask it to shut down, once: a second SIGTERM would make uvicorn force its exit."""
        if not self._terminated and self.proc.poll() is None:
            self.proc.terminate()
        self._terminated = True

    def stop(self, grace_s: float = 60) -> int:
        """Terminate it (killed if it outlives ``grace_s``) and return its exit status."""
        try:
            self.terminate()
            try:
                self.proc.wait(grace_s)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        finally:
            self._log.close()
        return self.proc.returncode


def wait_ready(servers: Sequence[Server], *, banner: bytes | None = None,
               deadline_s: float = 120) -> None:
    """Wait until every server is :meth:`~Server.ready`; fail with all their logs if one
    exits or the deadline passes first."""
    deadline = time.monotonic() + deadline_s
    for server in servers:
        while not server.ready(banner):
            if server.proc.poll() is not None or time.monotonic() > deadline:
                logs = "\n".join(f"--- {s.log_path.name}\n{s.log()}" for s in servers)
                pytest.fail(f"server at {server.base} did not start:\n{logs}")
            time.sleep(0.2)


@contextmanager
def serving(home: Path, *arg_sets: Sequence[str], banner: bytes | None = None,
            deadline_s: float = 120, grace_s: float = 60) -> Iterator[list[Server]]:
    """One server per argument list, started together, ready on entry and stopped on exit
    (even when the test or a start fails)."""
    servers: list[Server] = []
    try:
        for i, args in enumerate(arg_sets):
            servers.append(Server.start(home, f"server{i}", *args))
        wait_ready(servers, banner=banner, deadline_s=deadline_s)
        yield servers
    finally:
        for server in servers:
            server.terminate()  # all at once, so they shut down side by side
        for server in servers:
            server.stop(grace_s)


def chain_tally(source: str | Path) -> Counter[tuple[str, str]]:
    """Assert the audit chain at ``source`` verifies and is gap-free (sequence numbers 1..n),
    and count its entries per (memory id, action), the action with its phase
    (``remember:intent``, ``remember:done``, ``staged``, ...)."""
    log = AuditLog.open(source)
    try:
        report = log.verify()
        entries = log.entries()
    finally:
        log.close()
    assert report.ok, report.problems
    assert [e.seq for e in entries] == list(range(1, len(entries) + 1))
    per: Counter[tuple[str, str]] = Counter()
    for e in entries:
        phase = e.details.get("phase")
        key = e.action if phase is None else f"{e.action}:{phase}"
        for mid in e.memory_ids:
            per[(mid, key)] += 1
    return per
