"""Four ``memorywire serve`` processes on one PostgreSQL database (store and governance).

What a load balancer in front of several servers needs: concurrent writers spread over every
process, approval-gated writes approved through other processes (each one twice, through two
processes at once), and afterwards every acknowledged id stored exactly once, every approval
committed exactly once, and one audit chain that verifies.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx
import psycopg
import pytest

from memorywire.testing import postgres as _pg
from tests.integration.servers import chain_tally, make_tokens, serving

pytestmark = [pytest.mark.postgres, pytest.mark.slow, pytest.mark.timeout(120)]
pg_server = _pg.pg_server
pg_dsn = _pg.pg_dsn

SERVERS = 4
CLIENTS = 4
WRITES = 50
GATE_EVERY = 5  # every fifth write asks for approval
AGENTS = ("agent-0", "agent-1")


@dataclass
class Cluster:
    bases: list[str]
    writer: str
    reviewer: str
    admin: str


@pytest.fixture
def cluster(pg_dsn: str, tmp_path: Path) -> Iterator[Cluster]:
    tokens = make_tokens(tmp_path / "tokens.db", AGENTS)
    args = ["--store", pg_dsn, "--governance-db", pg_dsn,
            "--tokens-db", str(tmp_path / "tokens.db"), "--embedder", "hashing"]
    with serving(tmp_path, *[args] * SERVERS, deadline_s=45, grace_s=15) as servers:
        yield Cluster([s.base for s in servers], tokens.writer, tokens.reviewer, tokens.admin)


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
    per = chain_tally(pg_dsn)
    for mid in acked:
        if mid in gated:
            assert per[(mid, "staged")] == 1 and per[(mid, "approved")] == 1, mid
            assert per[(mid, "remember:done")] == 1, mid
        elif mid not in retried:
            assert per[(mid, "remember:intent")] == 1 and per[(mid, "remember:done")] == 1, mid
    with httpx.Client(headers={"authorization": f"Bearer {cluster.admin}"}) as http:
        r = http.post(f"{cluster.bases[3]}/v0/audit/verify")
    assert r.status_code == 200 and r.json()["ok"] is True
