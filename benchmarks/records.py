"""Record operations on SQLite through the public client: what paging, get, update and erase
cost as a scope grows.

One agent holds N memories spread over 50 users (hashing embedder, so the numbers are the
store and the dispatcher, not a model). Timed with ``time.perf_counter`` through
:class:`memorywire.client.Memory` (validation, scope checks and the store call included):
``list`` walks the whole scope 100 at a time following ``next_cursor``; ``get`` and ``update``
(content changed, so re-embedded) are per call over 200 random ids; ``erase`` removes one
user's memories, then the rest of the agent.

    python benchmarks/records.py [--n 5000] [--json]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

from memorywire.client import Memory
from memorywire.embed.hashing import HashingEmbedder
from memorywire.store.sqlite import SqliteStore
from memorywire.wire.models import MemoryType, RememberRequest

RESULTS = Path(__file__).resolve().parent / "results" / "records.json"
USERS = 50
AGENT = "bench"


def _ms(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "p50_ms": round(statistics.median(ordered) * 1000, 3),
        "p95_ms": round(ordered[int(len(ordered) * 0.95) - 1] * 1000, 3),
    }


async def run(n: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        store = SqliteStore(Path(tmp) / "m.db", embedder=HashingEmbedder())
        async with Memory(store, own_store=True) as mem:
            reqs = [
                RememberRequest(agent_id=AGENT, user_id=f"u{i % USERS}", type=MemoryType.SEMANTIC,
                                content=f"fact number {i} about topic {i % 97}")
                for i in range(n)
            ]
            for start in range(0, n, 500):
                await store.remember_many(reqs[start:start + 500])
            out: dict[str, Any] = {"n": n, "users": USERS}

            t0 = time.perf_counter()
            ids: list[str] = []
            cursor = None
            pages = 0
            while True:
                doc: dict[str, Any] = {"agent_id": AGENT, "limit": 100}
                if cursor:
                    doc["cursor"] = cursor
                page = await mem.list(doc)
                ids += [m.id for m in page.memories]
                pages += 1
                cursor = page.next_cursor
                if cursor is None:
                    break
            walk = time.perf_counter() - t0
            assert len(ids) == n
            out["list_walk"] = {"pages": pages, "total_s": round(walk, 3),
                                "per_page_ms": round(walk / pages * 1000, 3)}

            sample = random.Random(7).sample(ids, min(200, n))
            gets, updates = [], []
            for i in sample:
                t = time.perf_counter()
                await mem.get(agent_id=AGENT, id=i)
                gets.append(time.perf_counter() - t)
            for k, i in enumerate(sample):
                t = time.perf_counter()
                await mem.update(agent_id=AGENT, id=i, content=f"rewritten fact {k}")
                updates.append(time.perf_counter() - t)
            out["get"] = _ms(gets)
            out["update"] = _ms(updates)

            t = time.perf_counter()
            one = await mem.erase(agent_id=AGENT, user_id="u0")
            out["erase_user"] = {"erased": len(one.erased_ids),
                                 "total_ms": round((time.perf_counter() - t) * 1000, 1)}
            t = time.perf_counter()
            rest = await mem.erase(agent_id=AGENT)
            out["erase_agent"] = {"erased": len(rest.erased_ids),
                                  "total_ms": round((time.perf_counter() - t) * 1000, 1)}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=5000)
    ap.add_argument("--json", action="store_true", help="print the JSON instead of a table")
    args = ap.parse_args()
    result = anyio.run(run, args.n)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"records on SQLite, {result['n']} memories over {result['users']} users")
    print(f"{'operation':<14} {'result'}")
    lw = result["list_walk"]
    print(f"{'list (walk)':<14} {lw['pages']} pages in {lw['total_s']} s "
          f"({lw['per_page_ms']} ms/page)")
    for op in ("get", "update"):
        print(f"{op:<14} p50 {result[op]['p50_ms']} ms, p95 {result[op]['p95_ms']} ms")
    for op in ("erase_user", "erase_agent"):
        print(f"{op:<14} {result[op]['erased']} memories in {result[op]['total_ms']} ms")
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
