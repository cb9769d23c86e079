"""Load test over REST against a real ``memorywire serve`` on 127.0.0.1 (loopback only).

N concurrent clients each run M mixed operations (remember 60%, recall 30%, forget 10% of
their own writes). Every remember carries a client-chosen ``id``, so a failed or timed-out
call is retried with the same id. Afterwards every acknowledged write is checked:

* lost: re-remembering the id returns a different ``stored_at`` (the original row is gone);
* duplicated: one content appears under two ids in the agent's recall.

Usage: ``python benchmarks/load.py --clients 8 --ops 100 [--json]``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import socket
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import anyio
import httpx
import numpy as np


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Stats:
    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    errors: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    retries: int = 0


async def _post(http: httpx.AsyncClient, op: str, doc: dict[str, Any], st: Stats) -> Any:
    for attempt in range(5):
        t0 = time.perf_counter()
        try:
            r = await http.post(f"/v0/{op}", json=doc)
        except httpx.HTTPError:
            st.retries += 1
            await anyio.sleep(0.05 * (attempt + 1))
            continue
        st.latencies[op].append(time.perf_counter() - t0)
        if r.status_code in (429, 503):
            st.retries += 1
            await anyio.sleep(float(r.headers.get("retry-after", "0.05")))
            continue
        if r.status_code >= 400:
            st.errors[op] += 1
            return None
        return r.json()
    st.errors[op] += 1
    return None


async def _client(
    base: str, n: int, ops: int, st: Stats, acked: dict[str, dict[str, Any]], seed: int
) -> None:
    rng = random.Random(seed)
    agent = f"agent-{n}"
    live: list[str] = []
    async with httpx.AsyncClient(base_url=base, timeout=30) as http:
        for i in range(ops):
            roll = rng.random()
            if roll < 0.6 or not live:
                mid = f"{agent}-m{i}"
                content = f"load c{n} item{i} topic{rng.randrange(20)}"
                doc = {"agent_id": agent, "type": "semantic", "content": content, "id": mid}
                out = await _post(http, "remember", doc, st)
                if out is not None:
                    acked[mid] = {"agent": agent, "content": content,
                                  "stored_at": out["stored_at"]}
                    live.append(mid)
            elif roll < 0.9:
                q = {"agent_id": agent, "query": f"topic{rng.randrange(20)}", "k": 10}
                await _post(http, "recall", q, st)
            else:
                victim = live.pop(rng.randrange(len(live)))
                out = await _post(http, "forget", {"agent_id": agent, "ids": [victim]}, st)
                if out is not None:
                    acked.pop(victim, None)


async def _verify(base: str, acked: dict[str, dict[str, Any]], st: Stats) -> tuple[int, int]:
    lost = dup = 0
    by_agent: dict[str, list[str]] = defaultdict(list)
    async with httpx.AsyncClient(base_url=base, timeout=30) as http:
        for mid, w in acked.items():
            by_agent[w["agent"]].append(mid)
            again = await _post(http, "remember", {"agent_id": w["agent"], "type": "semantic",
                                                   "content": w["content"], "id": mid}, st)
            if again is None or again["stored_at"] != w["stored_at"]:
                lost += 1
        for agent in by_agent:
            got = await _post(http, "recall", {"agent_id": agent, "query": "load", "k": 1000}, st)
            contents = [h["content"] for h in (got or {}).get("results", [])]
            dup += len(contents) - len(set(contents))
    return lost, dup


def _pct(xs: list[float], p: float) -> float:
    return float(np.percentile(np.array(xs) * 1000, p)) if xs else 0.0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--ops", type=int, default=100, help="operations per client (max 2000)")
    ap.add_argument("--store", default="memory://")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    clients, ops = min(args.clients, 64), min(args.ops, 2000)
    port = _free_port()
    home = tempfile.mkdtemp(prefix="mw-load-")
    env = {**os.environ, "MEMORYWIRE_HOME": home, "MEMORYWIRE_RECALL_RATE": "100000",
           "MEMORYWIRE_RECALL_BURST": "100000"}
    server = subprocess.Popen(
        [sys.executable, "-m", "memorywire.cli", "serve", "--store", args.store, "--host",
         "127.0.0.1", "--port", str(port), "--no-auth", "--embedder", "hashing"],
        env=env, stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(base + "/v0/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline or server.poll() is not None:
                print("server did not start", file=sys.stderr)
                return 1
            time.sleep(0.1)
        st = Stats()
        acked: dict[str, dict[str, Any]] = {}

        async def run() -> tuple[float, int, int]:
            t0 = time.perf_counter()
            with anyio.fail_after(600):
                async with anyio.create_task_group() as tg:
                    for n in range(clients):
                        tg.start_soon(_client, base, n, ops, st, acked, n)
            elapsed = time.perf_counter() - t0
            lost, dup = await _verify(base, acked, Stats())
            return elapsed, lost, dup

        elapsed, lost, dup = anyio.run(run)
    finally:
        server.terminate()
        server.wait(10)
    total = sum(len(v) for v in st.latencies.values())
    report = {
        "clients": clients, "ops_per_client": ops, "seconds": round(elapsed, 3),
        "throughput_ops_s": round(total / elapsed, 1), "retries": st.retries,
        "acknowledged_writes": len(acked), "lost": lost, "duplicated": dup,
        "operations": {
            op: {"count": len(xs), "errors": st.errors[op], "p50_ms": round(_pct(xs, 50), 2),
                 "p95_ms": round(_pct(xs, 95), 2), "p99_ms": round(_pct(xs, 99), 2)}
            for op, xs in sorted(st.latencies.items())
        },
    }
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        from rich.console import Console
        from rich.table import Table

        t = Table("op", "count", "errors", "p50 ms", "p95 ms", "p99 ms",
                  title=f"{clients} clients x {ops} ops: {report['throughput_ops_s']} ops/s, "
                        f"lost {lost}, duplicated {dup}")
        for op, r in report["operations"].items():
            t.add_row(op, str(r["count"]), str(r["errors"]), str(r["p50_ms"]), str(r["p95_ms"]),
                      str(r["p99_ms"]))
        Console().print(t)
    return 0 if lost == 0 and dup == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
