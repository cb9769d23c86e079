"""Four ``memorywire serve`` processes on one PostgreSQL database (store and governance).

What a load balancer in front of several servers needs: concurrent writers spread over every
process, approval-gated writes approved through other processes (each one twice, through two
processes at once), and afterwards every acknowledged id stored exactly once, every approval
committed exactly once, and one audit chain that verifies.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx
import psycopg
import pytest

from memorywire.governance.audit import AuditLog
from memorywire.server.auth import TokenStore
from memorywire.testing import postgres as _pg

pytestmark = [pytest.mark.postgres, pytest.mark.slow, pytest.mark.timeout(120)]
pg_server = _pg.pg_server
pg_dsn = _pg.pg_dsn

SERVERS = 4
CLIENTS = 4
WRITES = 50
GATE_EVERY = 5  # every fifth write asks for approval
AGENTS = ("agent-0", "agent-1")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Cluster:
    bases: list[str]
    writer: str
    reviewer: str
    admin: str


@pytest.fixture
def cluster(pg_dsn: str, tmp_path: Path) -> Iterator[Cluster]:
    tokens = TokenStore(tmp_path / "tokens.db")
    writer, _ = tokens.create(role="agent", agent_ids=AGENTS, name="writer")
    reviewer, _ = tokens.create(role="reviewer", name="reviewer")
    admin, _ = tokens.create(role="admin", name="auditor")
    tokens.close()
    env = {**os.environ, "MEMORYWIRE_HOME": str(tmp_path / "home")}
    procs: list[tuple[subprocess.Popen[bytes], Any]] = []
    bases: list[str] = []
    try:
        for i in range(SERVERS):
            port = _free_port()
            log = open(tmp_path / f"server{i}.log", "wb")  # noqa: SIM115  closed below
            cmd = [
                sys.executable, "-m", "memorywire.cli", "serve", "--store", pg_dsn,
                "--governance-db", pg_dsn, "--tokens-db", str(tmp_path / "tokens.db"),
                "--host", "127.0.0.1", "--port", str(port), "--embedder", "hashing",
            ]
            procs.append((subprocess.Popen(cmd, env=env, stdout=log, stderr=log), log))
            bases.append(f"http://127.0.0.1:{port}")
        deadline = time.monotonic() + 45
        for (proc, _), base in zip(procs, bases, strict=True):
            while True:
                try:
                    if httpx.get(base + "/v0/health", timeout=2).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                if proc.poll() is not None or time.monotonic() > deadline:
                    logs = "\n".join(
                        (tmp_path / f"server{i}.log").read_text(encoding="utf-8", errors="replace")
                        for i in range(SERVERS)
                    )
                    pytest.fail(f"server at {base} did not start:\n{logs}")
                time.sleep(0.2)
        yield Cluster(bases, writer, reviewer, admin)
    finally:
        for proc, _ in procs:
            proc.terminate()
        for proc, log in procs:
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)
            log.close()


async def _post(http: httpx.AsyncClient, url: str, doc: dict[str, Any]) -> tuple[Any, int]:
    """POST with retries on transport errors; returns (json, attempts)."""
    for attempt in range(1, 6):
        try:
            r = await http.post(url, json=doc)
        except httpx.TransportError:
            await anyio.sleep(0.1 * attempt)
            continue
        assert r.status_code == 200, (url, r.status_code, r.text)
        return r.json(), attempt
    raise AssertionError(f"{url}: no answer after 5 attempts")


async def _run(c: Cluster) -> tuple[dict[str, dict[str, Any]], set[str], list[dict[str, Any]]]:
    acked: dict[str, dict[str, Any]] = {}
    retried: set[str] = set()
    decisions: list[dict[str, Any]] = []
    send, receive = anyio.create_memory_object_stream[str](CLIENTS * WRITES)
    w_head = {"authorization": f"Bearer {c.writer}"}
    r_head = {"authorization": f"Bearer {c.reviewer}"}

    async def writer(i: int) -> None:
        async with httpx.AsyncClient(timeout=60, headers=w_head) as http:
            for j in range(WRITES):
                mid = f"c{i}-m{j:02d}"
                doc = {
                    "agent_id": AGENTS[i % len(AGENTS)],
                    "type": "semantic",
                    "content": f"client {i} fact {j}",
                    "id": mid,
                    "approval_required": j % GATE_EVERY == 0,
                }
                out, attempts = await _post(http, f"{c.bases[(i + j) % SERVERS]}/v0/remember", doc)
                assert out["id"] == mid and out["pending_approval"] == doc["approval_required"]
                acked[mid] = doc
                if attempts > 1:
                    retried.add(mid)
                if doc["approval_required"]:
                    await send.send(mid)

    async def approve(http: httpx.AsyncClient, base: str, mid: str) -> None:
        out, _ = await _post(http, f"{base}/v0/approvals/{mid}/approve", {"reason": "ok"})
        decisions.append(out)

    async def reviewer() -> None:
        n = 0
        async with httpx.AsyncClient(timeout=60, headers=r_head) as http, receive:
            async for mid in receive:
                # The same approval through two other processes at once.
                async with anyio.create_task_group() as tg:
                    tg.start_soon(approve, http, c.bases[(n + 1) % SERVERS], mid)
                    tg.start_soon(approve, http, c.bases[(n + 2) % SERVERS], mid)
                n += 1

    async with anyio.create_task_group() as tg:
        tg.start_soon(reviewer)
        async with send, anyio.create_task_group() as writers:
            for i in range(CLIENTS):
                writers.start_soon(writer, i)
    return acked, retried, decisions


def test_four_servers_one_database(cluster: Cluster, pg_dsn: str) -> None:
    acked, retried, decisions = anyio.run(_run, cluster)
    gated = {mid for mid, d in acked.items() if d["approval_required"]}
    assert len(acked) == CLIENTS * WRITES and len(gated) == CLIENTS * WRITES // GATE_EVERY
    assert len(decisions) == 2 * len(gated)
    assert all(d["status"] == "approved" for d in decisions)

    # No lost and no duplicated writes: every acknowledged id once, with its content.
    with psycopg.connect(pg_dsn) as conn:
        rows = conn.execute(
            "SELECT agent_id, id, content, count(*) OVER (PARTITION BY id)"
            " FROM memorywire_memories"
        ).fetchall()
        queue: dict[str, int] = dict(
            conn.execute(
                "SELECT status, count(*) FROM memorywire_governance.approvals GROUP BY status"
            ).fetchall()
        )
    stored = {mid: (agent, content, n) for agent, mid, content, n in rows}
    assert len(rows) == len(acked) and set(stored) == set(acked)
    for mid, doc in acked.items():
        assert stored[mid] == (doc["agent_id"], doc["content"], 1)
    assert queue == {"approved": len(gated)}

    # One chain, gap-free, that verifies; each approval decided and committed exactly once.
    log = AuditLog.open(pg_dsn)
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
    for mid in acked:
        if mid in gated:
            assert per[(mid, "staged")] == 1 and per[(mid, "approved")] == 1, mid
            assert per[(mid, "remember:done")] == 1, mid
        elif mid not in retried:
            assert per[(mid, "remember:intent")] == 1 and per[(mid, "remember:done")] == 1, mid
    with httpx.Client(headers={"authorization": f"Bearer {cluster.admin}"}) as http:
        r = http.post(f"{cluster.bases[3]}/v0/audit/verify")
    assert r.status_code == 200 and r.json()["ok"] is True
