"""What PostgresStore's informative full-text leg adds to a recall (issue 31, pg31).

    python benchmarks/pg_lexical_cost.py --json            # scopes of 1k and 10k rows
    python benchmarks/pg_lexical_cost.py --scopes 1000 10000 100000 --json

A recall counts, in one statement, its scope's newest rows (at most ``SHARE_SAMPLE``) and each
query word's rows among them (``memorywire.store.postgres.lexical``). This times that statement
alone and the store's whole search (``PostgresStore._search``: vector list, full-text list,
fusion; the recall statistics' UPDATE left out) with the count and with the leg as it was
before (every query word ranks, plain RRF), on a pgserver PostgreSQL with synthetic rows: one
agent per scope size, all of its rows one user's, each holding the user's name and words drawn
from a Zipf vocabulary, plus a background agent whose rows also name her (so the GIN index's
posting list for the name is long table-wide). Vectors are random (dim 384): the numbers
measure the database, not a model. Timings on a shared machine are indicative only; the load
average is reported beside them.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import anyio
import numpy as np

from memorywire.core.textsearch import query_terms
from memorywire.embed.hashing import HashingEmbedder
from memorywire.store.postgres import PostgresStore
from memorywire.store.postgres import store as pg_store
from memorywire.store.postgres.lexical import Leg, count_statement, lexical_leg
from memorywire.store.postgres.migrations import TS_CONFIG
from memorywire.store.postgres.sql import TABLE, scope_where, tsquery_text, vector_literal
from memorywire.testing.postgres import start_pgserver
from memorywire.wire.models import MemoryType, RecallRequest, RememberRequest

DIM = 384
VOCAB = 3000
BACKGROUND = 20_000
REPEATS = 60


def _words(rng: np.random.Generator) -> list[str]:
    letters = np.array(list("abcdefghiklmnoprstuvw"))
    out: dict[str, None] = {}
    while len(out) < VOCAB:
        out["".join(rng.choice(letters, size=int(rng.integers(5, 9))))] = None
    return list(out)


async def _load(store: PostgresStore, agent: str, n: int, vocab: Sequence[str],
                rng: np.random.Generator) -> None:
    ranks = np.arange(1, len(vocab) + 1)
    p = (1.0 / ranks) / (1.0 / ranks).sum()
    rows = []
    for i in range(n):
        words = rng.choice(len(vocab), size=8, p=p)
        content = "Ines " + " ".join(vocab[w] for w in words) + "."
        v = rng.standard_normal(DIM).astype(np.float32)
        rows.append((agent, f"{agent}-{i}", "ines", "semantic", content, i,
                     vector_literal(v / np.linalg.norm(v)), content))
    async with store._db.tx() as conn:
        async with conn.cursor() as cur:
            await cur.executemany(
                f"INSERT INTO {TABLE} (agent_id, id, user_id, type, content, created_at, "
                f"embedding, tsv) VALUES (%s, %s, %s, %s, %s, %s, %s::vector, "
                f"to_tsvector('{TS_CONFIG}', %s))", rows)
        await conn.execute(
            "INSERT INTO memorywire_agent_counts (agent_id, rows) VALUES (%s, %s) "
            "ON CONFLICT (agent_id) DO UPDATE SET rows = memorywire_agent_counts.rows + %s",
            (agent, n, n))


async def _timed(fn: Callable[[], Awaitable[Any]]) -> dict[str, float]:
    for _ in range(5):
        await fn()
    times = []
    for _ in range(REPEATS):
        t = time.perf_counter()
        await fn()
        times.append((time.perf_counter() - t) * 1000)
    times.sort()
    return {"p50_ms": round(statistics.median(times), 3),
            "p90_ms": round(times[int(0.9 * len(times))], 3)}


async def _old_leg(conn: Any, w: Any, words: Sequence[str]) -> Leg:
    return Leg(tsquery_text(words), 1.0, frozenset(), frozenset())


async def _scope(store: PostgresStore, agent: str, queries: Sequence[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for query in queries:
        w = scope_where(agent_id=agent, user_id="ines", now_ms=10**13)
        words = query_terms(query)

        async def leg(w: Any = w, words: list[str] = words) -> Leg:
            async with store._db.tx() as conn:
                return await lexical_leg(conn, w, words)

        async def search(query: str = query) -> Any:
            return await store._search(RecallRequest(agent_id=agent, user_id="ines",
                                                     query=query, k=10))

        kept, weight = (await leg())[:2]
        row: dict[str, Any] = {"kept": kept, "weight": round(weight, 4),
                               "count_statement": await _timed(leg)}
        row["search_with_count"] = await _timed(search)
        names = vars(pg_store)  # the store's search, with the leg as it was before
        names["lexical_leg"] = _old_leg
        try:
            row["search_before"] = await _timed(search)
        finally:
            names["lexical_leg"] = lexical_leg
        row["added_p50_ms"] = round(row["search_with_count"]["p50_ms"]
                                    - row["search_before"]["p50_ms"], 3)
        statement = count_statement(w, words)
        assert statement is not None
        async with store._db.tx() as conn:
            cur = await conn.execute(
                "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) " + statement[0], statement[1])
            row["plan"] = [r["QUERY PLAN"] for r in await cur.fetchall()]
        out[query] = row
    return out


async def main(scopes: Sequence[int]) -> dict[str, Any]:
    rng = np.random.default_rng(31)
    vocab = _words(rng)
    parent = Path(tempfile.mkdtemp(prefix="memorywire-pg-"))
    parent.chmod(0o755)
    handle = start_pgserver(parent / "data")
    store = PostgresStore(handle.create_database("pg31"), HashingEmbedder(DIM))
    try:
        await store.remember(RememberRequest(agent_id="warm", type=MemoryType.SEMANTIC,
                                             content="warm up"))
        await _load(store, "background", BACKGROUND, vocab, rng)
        for n in scopes:
            await _load(store, f"scope{n}", n, vocab, rng)
        async with store._db.tx() as conn:
            await conn.execute(f"ANALYZE {TABLE}")
        # the name (in every row), a frequent word, a middling one, a rare one
        queries = [f"What is Ines's {vocab[2999]}?", f"Ines and the {vocab[0]}",
                   f"{vocab[40]} {vocab[2500]}", f"What about {vocab[300]} with Ines?"]
        result: dict[str, Any] = {"background_rows": BACKGROUND, "repeats": REPEATS,
                                  "loadavg_before": os.getloadavg()}
        for n in scopes:
            result[f"scope_{n}"] = await _scope(store, f"scope{n}", queries)
        result["loadavg_after"] = os.getloadavg()
        return result
    finally:
        await store.aclose()
        handle.close()
        shutil.rmtree(parent, ignore_errors=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scopes", type=int, nargs="+", default=[1000, 10_000])
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    res = anyio.run(main, args.scopes)
    if args.json:
        print(json.dumps(res, indent=1))
    else:
        for key, value in res.items():
            print(key, value)
