"""Start ``memorywire serve`` the way a user runs it, for :mod:`benchmarks.load`.

Tokens are minted with the CLI (``memorywire token create``) before the server starts, as a
user would; the server is a child process on a free loopback port and is always stopped.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx

__all__ = ["RunningServer", "ServerSetup", "cpu_seconds", "embed_batching", "otlp_sink",
           "start_server"]

#: The ``--embedder`` words serve accepts, by the name a user would give on our command line.
_EMBEDDERS = {"minilm": "default", "default": "default", "hashing": "hashing"}
_EMBEDDER_NAMES = {"default": "all-MiniLM-L6-v2/onnx-fp32", "hashing": "hashing-bow-64"}


@dataclass(frozen=True)
class ServerSetup:
    store: str = "sqlite"
    embedder: str = "minilm"
    governance: bool = True
    auth: bool = True
    #: Extra environment for the server (e.g. rate limits, tracing); recorded in the report.
    env: dict[str, str] = field(default_factory=dict)

    def describe(self) -> dict[str, Any]:
        scheme = self.store.split(":", 1)[0] if ":" in self.store else self.store
        return {
            "store": scheme,
            "embedder": _EMBEDDER_NAMES.get(_EMBEDDERS.get(self.embedder, ""), self.embedder),
            "governance": self.governance,
            "auth": self.auth,
            "tracing": self.env.get("MEMORYWIRE_TRACING") == "true",
            "server_env": dict(self.env),
        }


@dataclass
class RunningServer:
    base: str
    process: subprocess.Popen[bytes]
    home: Path
    agent_token: str | None
    reviewer_token: str | None
    governance: bool

    def headers(self, role: str = "agent") -> dict[str, str]:
        token = self.agent_token if role == "agent" else self.reviewer_token
        return {"Authorization": f"Bearer {token}"} if token else {}

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(5)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _mint(env: dict[str, str], tokens_db: Path, *args: str) -> str:
    out = subprocess.run(
        [sys.executable, "-m", "memorywire.cli", "token", "create", "--tokens-db",
         str(tokens_db), "--json", *args],
        env=env, check=True, capture_output=True, text=True, timeout=60,
    )
    return str(json.loads(out.stdout)["token"])


def _store_url(store: str, home: Path) -> str:
    if store == "sqlite":
        return f"sqlite:///{home / 'mem.db'}"
    if store == "memory":
        return "memory://"
    return store


def start_server(setup: ServerSetup, home: Path, agents: list[str]) -> RunningServer:
    """A ready server; the caller must ``stop()`` it."""
    if setup.embedder not in _EMBEDDERS:
        raise SystemExit(f"--embedder must be one of {sorted(_EMBEDDERS)}")
    env = {**os.environ, "MEMORYWIRE_HOME": str(home), **setup.env}
    tokens_db = home / "tokens.db"
    agent_token = reviewer_token = None
    if setup.auth:
        agent_token = _mint(env, tokens_db, "--role", "agent", "--name", "load-agent",
                            *[a for agent in agents for a in ("--agent", agent)])
        reviewer_token = _mint(env, tokens_db, "--role", "reviewer", "--name", "load-reviewer")
    port = _free_port()
    cmd = [sys.executable, "-m", "memorywire.cli", "serve", "--store",
           _store_url(setup.store, home), "--host", "127.0.0.1", "--port", str(port),
           "--tokens-db", str(tokens_db), "--embedder", _EMBEDDERS[setup.embedder]]
    if setup.governance:
        cmd += ["--governance-db", str(home / "governance.db")]
    if not setup.auth:
        cmd.append("--no-auth")
    process = subprocess.Popen(cmd, env=env, stderr=subprocess.DEVNULL)
    server = RunningServer(f"http://127.0.0.1:{port}", process, home, agent_token,
                           reviewer_token, setup.governance)
    deadline = time.monotonic() + 60
    while True:
        try:
            if httpx.get(server.base + "/v0/health", timeout=2).status_code == 200:
                return server
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline or process.poll() is not None:
            server.stop()
            raise SystemExit("server did not start")
        time.sleep(0.1)


class _Sink(BaseHTTPRequestHandler):
    received = 0

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        type(self).received += 1
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


def otlp_sink() -> tuple[str, ThreadingHTTPServer]:
    """A loopback OTLP/HTTP endpoint that accepts and drops spans, so tracing pays its full
    export cost without a collector; returns its URL and the server (``shutdown()`` it)."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Sink)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{httpd.server_address[1]}", httpd


def _stat(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/stat").read_text(encoding="utf-8").rsplit(")", 1)[1].split()


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process and its live descendants (Linux ``/proc``), so
    cost per operation is known when ``serve`` runs several worker processes."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                children.setdefault(int(_stat(int(entry.name))[1]), []).append(int(entry.name))
            except (OSError, IndexError, ValueError):
                continue  # gone meanwhile
    ticks = os.sysconf("SC_CLK_TCK")
    total, todo = 0.0, [pid]
    while todo:
        p = todo.pop()
        try:
            fields = _stat(p)
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / ticks
        todo += children.get(p, [])
    return total


def embed_batching(base: str) -> dict[str, Any] | None:
    """Mean texts and requests per model call, and the texts-per-call histogram (cumulative
    counts by bucket bound, as Prometheus gives it), from the server's /metrics if it has one."""
    try:
        r = httpx.get(base + "/metrics", timeout=10)
    except httpx.HTTPError:
        return None
    if r.status_code != 200:
        return None
    values: dict[str, float] = {}
    texts_le: dict[str, float] = {}
    for line in r.text.splitlines():
        name, _, value = line.partition(" ")
        if name.startswith("memorywire_embed_batch_texts_bucket{le="):
            texts_le[name.split('"')[1]] = float(value)
        elif name.startswith("memorywire_embed_batch_") and name.endswith(("_sum", "_count")):
            values[name] = float(value)
    calls = values.get("memorywire_embed_batch_texts_count", 0.0)
    if not calls:
        return None
    return {"model_calls": calls,
            "texts_per_call": round(values["memorywire_embed_batch_texts_sum"] / calls, 2),
            "requests_per_call": round(values["memorywire_embed_batch_requests_sum"] / calls, 2),
            "texts_per_call_le": texts_le}
