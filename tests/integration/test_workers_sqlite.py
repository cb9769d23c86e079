"""``memorywire serve --workers 2`` on the default setup: SQLite store, SQLite governance, tokens.

Two worker processes share one store file and one governance file. Concurrent writers go
through both; gated writes are staged through one worker and approved through the other
(each connection is pinned to a worker and checked by the ``worker`` label of its
``/metrics``). Afterwards every acknowledged id is stored exactly once, every approval is
committed once, and the audit chain both workers appended to verifies as one chain.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import apsw
import httpx
import pytest

from tests.integration.review_ui import csrf_of
from tests.integration.servers import (
    Server,
    chain_tally,
    free_port,
    make_tokens,
    serving,
    wait_ready,
)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

CLIENTS = 6
WRITES = 30
GATE_EVERY = 5
AGENTS = ("agent-0", "agent-1")
START_DEADLINE_S = 120
WORKERS_BANNER = b"2 worker processes"


@dataclass
class Served:
    base: str
    home: Path
    writer: str
    reviewer: str
    admin: str


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    tokens = make_tokens(tmp_path / "tokens.db", AGENTS)
    args = [
        "--store", f"sqlite:///{tmp_path / 'mem.db'}",
        "--governance-db", str(tmp_path / "gov.db"), "--tokens-db", str(tmp_path / "tokens.db"),
        "--embedder", "hashing", "--workers", "2",
    ]
    # Ready once the banner is out: the parent prints it when both workers are.
    with serving(tmp_path, args, banner=WORKERS_BANNER, deadline_s=START_DEADLINE_S) as (srv,):
        yield Served(srv.base, tmp_path, tokens.writer, tokens.reviewer, tokens.admin)
    assert srv.proc.returncode == 0, srv.log()


def _worker_of(http: httpx.Client) -> str:
    body = http.get("/metrics").text
    found = set(re.findall(r'worker="(\d+)"', body))
    assert len(found) == 1, body
    return found.pop()


@contextmanager
def _pinned(s: Served, token: str, want: str) -> Iterator[httpx.Client]:
    """A one-connection client whose connection the kernel gave to worker ``want``."""
    for _ in range(200):
        http = httpx.Client(base_url=s.base, timeout=60,
                            headers={"authorization": f"Bearer {token}"} if token else {},
                            limits=httpx.Limits(max_connections=1))
        try:
            if _worker_of(http) == want:
                yield http
                return
        finally:
            http.close()
    raise AssertionError(f"no connection reached worker {want} in 200 tries")


async def _post(http: httpx.AsyncClient, url: str, doc: dict[str, Any]) -> Any:
    r = await http.post(url, json=doc)
    assert r.status_code == 200, (url, r.status_code, r.text)
    return r.json()


async def _write(s: Served) -> dict[str, dict[str, Any]]:
    """CLIENTS concurrent writers, each on its own connections (spread over both workers)."""
    acked: dict[str, dict[str, Any]] = {}

    async def writer(i: int) -> None:
        for j in range(WRITES):
            # A new connection per write, so the writes of one client land on both workers.
            async with httpx.AsyncClient(
                timeout=60, headers={"authorization": f"Bearer {s.writer}"}
            ) as http:
                mid = f"c{i}-m{j:02d}"
                doc = {"agent_id": AGENTS[i % len(AGENTS)], "type": "semantic",
                       "content": f"client {i} fact {j}", "id": mid}
                out = await _post(http, f"{s.base}/v0/remember", doc)
                assert out["id"] == mid and out["pending_approval"] is False
                acked[mid] = doc

    async with anyio.create_task_group() as tg:
        for i in range(CLIENTS):
            tg.start_soon(writer, i)
    return acked


def test_two_workers_share_store_chain_and_queue(served: Served) -> None:
    s = served
    acked = anyio.run(_write, s)
    assert len(acked) == CLIENTS * WRITES

    # Staged through worker 0, approved through worker 1, and the other way round.
    staged: list[str] = []
    for stage_on, approve_on in (("0", "1"), ("1", "0")):
        with _pinned(s, s.writer, stage_on) as agent, _pinned(s, s.reviewer, approve_on) as rev:
            for k in range(3):
                mid = f"gated-{stage_on}-{k}"
                r = agent.post("/v0/remember", json={
                    "agent_id": AGENTS[0], "type": "semantic", "id": mid,
                    "content": f"gated fact {k} staged on worker {stage_on}",
                    "approval_required": True})
                assert r.status_code == 200 and r.json()["pending_approval"] is True, r.text
                r = rev.post(f"/v0/approvals/{mid}/approve", json={"reason": "ok"})
                assert r.status_code == 200 and r.json()["status"] == "approved", r.text
                staged.append(mid)
            # Both connections stayed where they were pinned the whole time.
            assert _worker_of(agent) == stage_on and _worker_of(rev) == approve_on

    # The approved writes are readable through either worker.
    with _pinned(s, s.writer, "0") as w0, _pinned(s, s.writer, "1") as w1:
        for http in (w0, w1):
            r = http.post("/v0/recall", json={"agent_id": AGENTS[0], "query": "gated fact",
                                              "k": 20, "min_relevance": 0})
            assert r.status_code == 200, r.text
            got = {m["id"] for m in r.json()["results"]}
            assert set(staged) <= got, (set(staged) - got)

    # Every acknowledged write stored exactly once.
    conn = apsw.Connection(str(s.home / "mem.db"), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        rows = list(conn.execute("SELECT agent_id, id, content FROM memories "
                                 "WHERE deleted_at IS NULL"))
    finally:
        conn.close()
    counts = Counter(mid for _, mid, _ in rows)
    assert set(counts) == set(acked) | set(staged)
    assert all(n == 1 for n in counts.values()), [m for m, n in counts.items() if n > 1]
    by_id = {mid: (agent, content) for agent, mid, content in rows}
    for mid, doc in acked.items():
        assert by_id[mid][0] == doc["agent_id"] and doc["content"] in by_id[mid][1]

    # One chain, gap-free, that verifies; each staged write approved and committed once.
    per = chain_tally(s.home / "gov.db")
    for mid in staged:
        assert per[(mid, "staged")] == 1 and per[(mid, "approved")] == 1, mid
        assert per[(mid, "remember:done")] == 1, mid
    for mid in acked:
        assert per[(mid, "remember:intent")] == 1 and per[(mid, "remember:done")] == 1, mid

    # The server's own verification (either worker) agrees.
    with httpx.Client(headers={"authorization": f"Bearer {s.admin}"}) as http:
        r = http.post(f"{s.base}/v0/audit/verify")
    assert r.status_code == 200 and r.json()["ok"] is True


def test_a_reviewer_signed_in_through_one_worker_is_signed_in_through_all(
    served: Served,
) -> None:
    s = served
    with _pinned(s, "", "0") as ui0:
        form = ui0.get("/ui/login")
        r = ui0.post("/ui/login", data={"csrf": csrf_of(form.text), "token": s.reviewer,
                                       "next": "/ui/approvals"})
        assert r.status_code == 303 and r.headers["location"].endswith("/ui/approvals")
        cookie = ui0.cookies["memorywire_review"]
        assert ui0.get("/ui/approvals").status_code == 200
    with _pinned(s, "", "1") as ui1:
        ui1.cookies.set("memorywire_review", cookie)
        page = ui1.get("/ui/approvals")
        assert page.status_code == 200, page.text  # not a redirect to the login form
        r = ui1.post("/ui/logout", data={"csrf": csrf_of(page.text)})
        assert r.status_code == 303 and r.headers["location"].endswith("/ui/login")
    # The copied cookie is worthless after the logout, on the other worker too.
    with _pinned(s, "", "0") as ui0:
        ui0.cookies.set("memorywire_review", cookie)
        r = ui0.get("/ui/approvals")
        assert r.status_code == 303 and "/ui/login" in r.headers["location"]


def test_a_worker_that_dies_stops_the_server_with_an_error(tmp_path: Path) -> None:
    srv = Server.start(tmp_path, "server", "--store", f"sqlite:///{tmp_path / 'mem.db'}",
                       "--no-governance", "--no-auth", "--embedder", "hashing",
                       "--workers", "2")
    try:
        wait_ready([srv], banner=WORKERS_BANNER, deadline_s=START_DEADLINE_S)
        pid = srv.proc.pid
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        workers = [int(c) for c in children
                   if b"spawn_main" in Path(f"/proc/{c}/cmdline").read_bytes()]
        assert len(workers) == 2, children
        os.kill(workers[-1], signal.SIGKILL)
        assert srv.proc.wait(120) == 2
    finally:
        if srv.proc.poll() is None:
            srv.proc.kill()
        srv.stop(10)
    assert "exited" in srv.log()


def test_memory_store_with_workers_is_refused(tmp_path: Path) -> None:
    env = {**os.environ, "MEMORYWIRE_HOME": str(tmp_path / "home")}
    out = subprocess.run(
        [sys.executable, "-m", "memorywire.cli", "serve", "--store", "memory://",
         "--port", str(free_port()), "--no-auth", "--workers", "2"],
        env=env, capture_output=True, text=True, timeout=120,
    )
    assert out.returncode == 2
    assert "invalid_request" in out.stderr and "workers = 2" in out.stderr
    assert "memory://" in out.stderr
