"""Health under a long audit log: ``/v0/health`` latency with N audit entries (default 100k).

Builds the server ``serve`` builds (SQLite store, hashing embedder, governance, tokens on),
fills the governance log with N chained entries, then times ``GET /v0/health`` through the
ASGI app, anonymous and as admin, and one incremental verification (first run: the whole log;
second run: only what was appended since). Health must not depend on N: it reads cached
verification state and one index probe, never the chain.

    python benchmarks/health.py [--entries 100000] [--calls 2000] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import httpx
import numpy as np

from memorywire.governance import GovernedStore
from memorywire.server.app import build_server
from memorywire.server.config import ServerConfig

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"


def _fill(gov: GovernedStore, n: int) -> None:
    log = gov.audit_log
    with log.db.transaction():
        for i in range(n):
            log.write(log.prepare(actor="bench", action="recall", agent_id=f"agent-{i % 100}",
                                  memory_ids=[f"m{i}"], details={"k": 5, "i": i}))


async def _time(client: httpx.AsyncClient, calls: int, headers: dict[str, str]) -> list[float]:
    out: list[float] = []
    for _ in range(calls):
        t0 = time.perf_counter()
        r = await client.get("/v0/health", headers=headers)
        out.append((time.perf_counter() - t0) * 1000)
        assert r.status_code == 200, r.text
    return out


def _pcts(ms: list[float]) -> dict[str, float]:
    a = np.asarray(ms)
    return {f"p{q}_ms": round(float(np.percentile(a, q)), 3) for q in (50, 95, 99)}


async def run(entries: int, calls: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        cfg = ServerConfig(store=f"sqlite:///{Path(tmp) / 'mem.db'}",
                           tokens_db=str(Path(tmp) / "tokens.db"),
                           governance_db=str(Path(tmp) / "gov.db"), embedder="hashing")
        server = build_server(cfg)
        gov = server.store
        assert isinstance(gov, GovernedStore) and server.tokens is not None
        admin, _ = server.tokens.create(role="admin", name="bench-admin")
        t0 = time.perf_counter()
        _fill(gov, entries)
        fill_s = time.perf_counter() - t0
        try:
            transport = httpx.ASGITransport(app=server.app)
            async with httpx.AsyncClient(transport=transport, base_url="http://bench") as c:
                await _time(c, 50, {})  # warm up
                anonymous = await _time(c, calls, {})
                as_admin = await _time(c, calls, {"authorization": f"Bearer {admin}"})
            t1 = time.perf_counter()
            first = await gov.averify_incremental()
            first_s = time.perf_counter() - t1
            _fill(gov, 100)
            t2 = time.perf_counter()
            second = await gov.averify_incremental()
            second_s = time.perf_counter() - t2
        finally:
            await server.aclose()
    return {
        "audit_entries": entries,
        "calls": calls,
        "load_avg": [round(x, 2) for x in os.getloadavg()],
        "fill_s": round(fill_s, 2),
        "anonymous": _pcts(anonymous),
        "admin": _pcts(as_admin),
        "incremental_verify_first_s": round(first_s, 3),
        "incremental_verify_first_checked": first["checked"],
        "incremental_verify_next_ms": round(second_s * 1000, 3),
        "incremental_verify_next_checked": second["checked"],
        "chain_ok": bool(first["ok"] and second["ok"]),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    result = anyio.run(run, args.entries, args.calls)
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"health-{args.entries}.json"
    out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    if args.json:
        print(json.dumps(result))
    else:
        a, d = result["anonymous"], result["admin"]
        print(f"{result['audit_entries']} audit entries, {result['calls']} calls each")
        print(f"/v0/health anonymous p50/p95/p99 ms: {a['p50_ms']} / {a['p95_ms']} / "
              f"{a['p99_ms']}")
        print(f"/v0/health admin     p50/p95/p99 ms: {d['p50_ms']} / {d['p95_ms']} / "
              f"{d['p99_ms']}")
        print(f"incremental verify: first {result['incremental_verify_first_s']} s "
              f"({result['incremental_verify_first_checked']} entries), next "
              f"{result['incremental_verify_next_ms']} ms "
              f"({result['incremental_verify_next_checked']} entries)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
