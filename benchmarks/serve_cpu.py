"""CPU of the API server per operation of the load mix, in process, against a running cluster.

``load.py --cluster`` reads each process's CPU from ``/proc`` while real clients drive the
servers over HTTP, so on a shared machine every neighbour moves the figure. This builds the
app ``serve`` builds, with the cluster's settings (``scripts/cluster-up.sh``: PostgreSQL
behind PgBouncer with a hot standby, governance in the same database, the embedder an
``openai:`` spec pointing at ``memorywire embed serve``), and replays ``load.py``'s mix
(remember 50%, recall 35%, forget 7%, gated remember + approve 8%) through the ASGI app as
uvicorn calls it, ``--concurrency`` requests at a time. What it reports is
``time.process_time`` of this process (every thread: the store's and governance's workers
and the embedder client's) over the operations, and the driver round trips they made
(``AsyncConnection.wait`` / ``Connection.wait`` calls), so two trees can be compared by
running this alternately with ``PYTHONPATH`` pointing at each. Not counted: uvicorn's own
HTTP parsing and the socket (the same in both trees), and the other processes.

    scripts/cluster-up.sh --dir /tmp/mw --servers 1 --spec minilm
    .venv/bin/python benchmarks/serve_cpu.py --cluster /tmp/mw --ops 800 --json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shlex
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import psycopg
from _asgi import json_post_scope

from memorywire.server.app import build_server
from memorywire.server.auth import TokenStore
from memorywire.server.config import ServerConfig

MIX = (("remember", 0.50), ("recall", 0.35), ("forget", 0.07), ("remember_gated", 0.08))


def _env(folder: Path) -> dict[str, str]:
    out = {}
    for line in (folder / "cluster.env").read_text(encoding="utf-8").splitlines():
        key, _, value = line.partition("=")
        out[key] = shlex.split(value)[0] if value else ""
    return out


async def _call(app: Any, path: str, token: str, doc: dict[str, Any]) -> Any:
    body = json.dumps(doc).encode()
    sent = False
    status = 0
    chunks: list[bytes] = []

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if sent:
            await asyncio.sleep(3600)  # as a connection that stays open
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = int(message["status"])
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))

    await app(json_post_scope(path, token, body), receive, send)
    if status != 200:
        raise SystemExit(f"{path} answered {status}: {b''.join(chunks)[:300]!r}")
    return json.loads(b"".join(chunks))


class _Mix:
    """``load.py``'s operation mix over a few agents, with the ids each one still holds."""

    def __init__(self, app: Any, agent: str, reviewer: str, tag: str, seed: int,
                 counts: Counter[str]) -> None:
        self.app, self.agent, self.reviewer, self.tag = app, agent, reviewer, tag
        self.counts = counts
        #: Round trips by operation (meaningful at concurrency 1 only).
        self.trips: Counter[str] = Counter()
        self.rng = random.Random(seed)
        self.live: dict[str, list[str]] = {}
        self.ops: Counter[str] = Counter()
        self.seq = 0

    async def one(self, agent: str) -> None:
        roll, acc, op = self.rng.random(), 0.0, "remember"
        for name, share in MIX:
            acc += share
            if roll < acc:
                op = name
                break
        live = self.live.setdefault(agent, [])
        if op == "forget" and not live:
            op = "remember"
        self.seq += 1
        before = sum(self.counts.values())
        await self._op(op, agent, live)
        self.trips[op] += sum(self.counts.values()) - before
        self.ops[op] += 1

    async def _op(self, op: str, agent: str, live: list[str]) -> None:
        if op in ("remember", "remember_gated"):
            mid = f"{agent}-{self.tag}-{self.seq}"
            doc: dict[str, Any] = {
                "agent_id": agent, "type": "semantic", "id": mid,
                "content": f"load {agent} note {self.seq} about topic{self.rng.randrange(50)}"}
            if op == "remember_gated":
                doc["approval_required"] = True
            out = await _call(self.app, "/v0/remember", self.agent, doc)
            if op == "remember_gated":
                await _call(self.app, f"/v0/approvals/{out['id']}/approve", self.reviewer,
                            {"reason": "load"})
            live.append(mid)
        elif op == "recall":
            await _call(self.app, "/v0/recall", self.agent,
                        {"agent_id": agent, "query": f"what about topic{self.rng.randrange(50)}",
                         "k": 10})
        else:
            victim = live.pop(self.rng.randrange(len(live)))
            await _call(self.app, "/v0/forget", self.agent, {"agent_id": agent, "ids": [victim]})


def _count_round_trips() -> Counter[str]:
    """Count the driver's waits for the server (one per round trip)."""
    counts: Counter[str] = Counter()
    for cls in (psycopg.AsyncConnection, psycopg.Connection):
        original = cls.wait

        def make(orig: Any, name: str) -> Any:
            if asyncio.iscoroutinefunction(orig):
                async def await_wait(self: Any, *a: Any, **kw: Any) -> Any:
                    counts[name] += 1
                    return await orig(self, *a, **kw)
                return await_wait

            def sync_wait(self: Any, *a: Any, **kw: Any) -> Any:
                counts[name] += 1
                return orig(self, *a, **kw)
            return sync_wait

        cls.wait = make(original, cls.__name__)  # type: ignore[method-assign]
    return counts


async def _run(folder: Path, ops: int, concurrency: int, agents: int, warm: int,
               round_trips: bool) -> dict[str, Any]:
    env = _env(folder)
    tokens = TokenStore(folder / "tokens.db")
    config = ServerConfig(store=env["MEMORYWIRE_STORE_URL"],
                          embedder=env["MEMORYWIRE_EMBEDDER"],
                          governance_db=env["MEMORYWIRE_GOVERNANCE_URL"],
                          tokens_db=str(folder / "tokens.db"), rate_limits="off")
    server = build_server(config, tokens=tokens)
    tag = f"c{os.getpid()}-{int(time.time())}"
    counts = _count_round_trips() if round_trips else Counter()
    mix = _Mix(server.app, env["MEMORYWIRE_AGENT_TOKEN"], env["MEMORYWIRE_REVIEWER_TOKEN"],
               tag, os.getpid(), counts)
    try:
        async def worker(w: int, n: int) -> None:
            for i in range(n):
                await mix.one(f"agent-{(w * 7919 + i) % agents}")

        await asyncio.gather(*(worker(w, warm // concurrency + 1) for w in range(concurrency)))
        mix.ops.clear()
        mix.trips.clear()
        counts.clear()
        each = ops // concurrency
        t_cpu, t_wall = time.process_time(), time.perf_counter()
        await asyncio.gather(*(worker(w, each) for w in range(concurrency)))
        cpu, wall = time.process_time() - t_cpu, time.perf_counter() - t_wall
    finally:
        await server.aclose()
    # an approve is a request of its own, as load.py counts it
    done = sum(mix.ops.values()) + mix.ops["remember_gated"]
    return {"ops": done, "mix": dict(mix.ops), "cpu_ms_per_op": round(cpu / done * 1e3, 3),
            "wall_s": round(wall, 2),
            "round_trips_per_op": {k: round(v / done, 2) for k, v in counts.items()},
            "round_trips_by_op": {k: round(v / mix.ops[k], 1) for k, v in mix.trips.items()},
            "load_avg_1m": os.getloadavg()[0]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--cluster", type=Path, required=True, help="scripts/cluster-up.sh's --dir")
    ap.add_argument("--ops", type=int, default=800)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--agents", type=int, default=200)
    ap.add_argument("--warm", type=int, default=80)
    ap.add_argument("--round-trips", action="store_true",
                    help="count the driver's round trips (adds a little CPU)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    report = asyncio.run(_run(args.cluster, args.ops, args.concurrency, args.agents,
                              args.warm, args.round_trips))
    print(json.dumps(report) if args.json else "\n".join(f"{k}: {v}" for k, v in report.items()))
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
