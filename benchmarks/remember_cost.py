r"""What the write-time conflict scan costs a remember, in a scope that already holds memories.

One SQLite store, one agent and user; ``--n`` distinct facts (generated sentences over a few
subjects, so the detector has real neighbours to judge) are remembered one by one, each with
the store's full remember (validity, supersession, conflict scan). The same writes go through
the store's bare write path (the batch insert alone, no scan) into a second store, call by
call, so the difference is the scan. Vectors are precomputed with the hashing embedder and
passed in, so the model's time is not in either number. Reported: p50 / mean ms of the last
``--tail`` writes (the scope then holds ``n - tail`` … ``n`` memories), and the median of
the per-write difference, in wall time (``scan_paired_p50_ms``) and in the process's CPU
time (``scan_paired_cpu_p50_ms``: on a shared machine a neighbour moves the wall time of one
call by milliseconds, the CPU time far less).

``--corpus notes`` writes ``benchmarks/load.py``'s notes instead ("load agent-3 note c3-12
about topic17"): a look-alike scope, an agent's log, where nearly every stored note is a
candidate at similarity 1.0.

    python benchmarks/remember_cost.py [--n 600] [--tail 200] [--corpus facts|notes] [--json]
        [--out PATH]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

from memorywire.embed.hashing import HashingEmbedder
from memorywire.store.sqlite import SqliteStore, writes
from memorywire.wire.models import MemoryType, RememberRequest

_THINGS = ["dentist", "sister", "car", "manager", "landlord", "gym", "bank", "doctor",
           "airline", "hotel", "neighbour", "cousin", "laptop", "phone", "school", "lawyer",
           "plumber", "barber", "tailor", "vet", "bakery", "florist", "pharmacy", "garage",
           "mechanic", "dance", "piano", "yoga", "tennis", "chess"]
_ASPECTS = ["name", "city", "street", "colour", "brand", "teacher", "club", "day", "time",
            "price", "size", "model", "owner", "language", "team", "number", "plan", "room",
            "floor", "lesson"]
_VALUES = ["Berlin", "Paris", "Oslo", "Rome", "KLM", "Lisbon", "Vienna", "Prague", "Tokyo",
           "Lima", "Anna", "Marco", "Sony", "Volvo", "Monday", "Friday", "Blue", "Green"]


def facts(n: int) -> list[str]:
    """``n`` sentences about ``n`` different things (a thing and an aspect each), so most
    share a word or two with a few others, as a real scope does."""
    return [f"The user's {_THINGS[i % 30]} {_ASPECTS[(i // 30) % 20]} is "
            f"{_VALUES[(i * 7 + i // 30) % 18]}." for i in range(n)]


def notes(n: int) -> list[str]:
    """``n`` notes as ``benchmarks/load.py``'s clients write them (one agent, one client)."""
    return [f"load agent-3 note c3-{i} about topic{(i * 37) % 50}" for i in range(n)]


async def run(n: int, tail: int, corpus: str = "facts") -> dict[str, Any]:
    embedder = HashingEmbedder()
    texts = facts(n) if corpus == "facts" else notes(n)
    vectors = embedder.embed(texts)
    full: list[float] = []
    bare: list[float] = []
    full_cpu: list[float] = []
    bare_cpu: list[float] = []
    conflicts = 0
    with tempfile.TemporaryDirectory() as tmp:
        a = SqliteStore(Path(tmp) / "full.db", embedder=embedder)
        b = SqliteStore(Path(tmp) / "bare.db", embedder=embedder)
        try:
            for i, text in enumerate(texts):
                req = RememberRequest(agent_id="a", user_id="u", type=MemoryType.SEMANTIC,
                                      content=text)
                started, cpu = time.perf_counter(), time.process_time()
                resp = (await a.remember_many([req], vectors=vectors[i:i + 1]))[0]
                full.append((time.perf_counter() - started) * 1000)
                full_cpu.append((time.process_time() - cpu) * 1000)
                conflicts += bool(resp.conflicts)
                started, cpu = time.perf_counter(), time.process_time()
                one = vectors[i:i + 1]
                await b._db.call(lambda r=req, v=one: writes.remember_many(b._db, [r], v))
                bare.append((time.perf_counter() - started) * 1000)
                bare_cpu.append((time.process_time() - cpu) * 1000)
        finally:
            await a.aclose()
            await b.aclose()
    last_full, last_bare = full[-tail:], bare[-tail:]
    return {
        "n": n, "tail": tail, "corpus": corpus, "writes_with_conflicts": conflicts,
        "remember_p50_ms": round(statistics.median(last_full), 3),
        "remember_mean_ms": round(statistics.fmean(last_full), 3),
        "bare_write_p50_ms": round(statistics.median(last_bare), 3),
        "bare_write_mean_ms": round(statistics.fmean(last_bare), 3),
        #: per write, full minus bare (paired call by call, so load swings cancel)
        "scan_paired_p50_ms": round(statistics.median(
            f - b for f, b in zip(last_full, last_bare, strict=True)), 3),
        "scan_paired_cpu_p50_ms": round(statistics.median(
            f - b for f, b in zip(full_cpu[-tail:], bare_cpu[-tail:], strict=True)), 3),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=600)
    ap.add_argument("--tail", type=int, default=200)
    ap.add_argument("--corpus", choices=["facts", "notes"], default="facts")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    result = anyio.run(run, args.n, min(args.tail, args.n), args.corpus)
    if args.out is not None:
        args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=2) if args.json else
          "\n".join(f"{k}: {v}" for k, v in result.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
