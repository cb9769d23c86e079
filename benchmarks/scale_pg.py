"""PostgresStore at scale: COPY ingest, HNSW build, scoped k-NN latency and recall vs exact.

    python benchmarks/scale_pg.py                 # 20k memories / 20 agents (about a minute)
    python benchmarks/scale_pg.py --n 1000000 --agents 1000 --json

Vectors are random unit vectors (dim 384, as MiniLM), so the numbers measure the database,
not a model. Rows are loaded with COPY into the store's own schema, then the HNSW index is
rebuilt so its build time is measured alone. For each sampled agent it runs the store's
scoped search (``PostgresStore.nearest``) on the exact path and on the HNSW path (forced with
``exact_scope_limit=0``) and compares both to numpy brute force over that agent's rows.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import psycopg

from memorywire.embed.base import Vectors
from memorywire.store.postgres import PostgresStore
from memorywire.testing.postgres import start_pgserver

DIM = 384


class TableEmbedder:
    """Maps ``"q:<i>"`` to a prepared query vector; anything else to a fixed vector."""

    def __init__(self, queries: Vectors) -> None:
        self.queries = queries

    @property
    def name(self) -> str:
        return f"scale-random-{DIM}"

    @property
    def dim(self) -> int:
        return DIM

    def embed(self, texts: Sequence[str]) -> Vectors:
        out = np.zeros((len(texts), DIM), dtype=np.float32)
        for i, t in enumerate(texts):
            out[i] = self.queries[int(t[2:])] if t.startswith("q:") else 1.0 / np.sqrt(DIM)
        return out


def _unit(rng: np.random.Generator, n: int) -> Vectors:
    v = rng.standard_normal((n, DIM)).astype(np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    return v


def _pct(xs: list[float], p: float) -> float:
    return float(np.percentile(np.asarray(xs), p)) if xs else 0.0


async def run(dsn: str, n: int, agents: int, queries: int, seed: int) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    vecs = _unit(rng, n)
    owner = rng.integers(0, agents, n)
    qv = _unit(rng, queries)
    emb = TableEmbedder(qv)
    store = PostgresStore(dsn, emb, name="pg")
    await store.health()  # creates the schema
    await store.aclose()

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("DROP INDEX memorywire_memories_hnsw")
        t0 = time.perf_counter()
        with conn.cursor() as cur, cur.copy(
            "COPY memorywire_memories (agent_id, id, type, content, created_at, embedding) "
            "FROM STDIN"
        ) as copy:
            for i in range(n):
                vec = "[" + ",".join(f"{x:.7g}" for x in vecs[i].tolist()) + "]"
                copy.write_row((f"agent-{owner[i]}", f"m{i}", "semantic", f"memory {i}", i, vec))
        ingest_s = time.perf_counter() - t0
        conn.execute("INSERT INTO memorywire_agent_counts SELECT agent_id, count(*) "
                     "FROM memorywire_memories GROUP BY agent_id")
        conn.execute("SET maintenance_work_mem = '1GB'")
        t0 = time.perf_counter()
        conn.execute("CREATE INDEX memorywire_memories_hnsw ON memorywire_memories "
                     "USING hnsw (embedding vector_cosine_ops)")
        hnsw_s = time.perf_counter() - t0
        conn.execute("ANALYZE memorywire_memories")

    result: dict[str, Any] = {
        "n": n, "agents": agents, "dim": DIM, "queries": queries,
        "copy_rows_per_s": round(n / ingest_s), "hnsw_build_s": round(hnsw_s, 2),
    }
    for label, limit in (("exact", 10**12), ("hnsw", 0)):
        store = PostgresStore(dsn, emb, name="pg", exact_scope_limit=limit)
        lat: list[float] = []
        recall: list[float] = []
        try:
            for qi in range(queries):
                agent = int(rng.integers(0, agents))
                rows = np.flatnonzero(owner == agent)
                truth = {f"m{j}" for j in rows[np.argsort(-(vecs[rows] @ qv[qi]))[:10]]}
                t0 = time.perf_counter()
                got = await store.nearest(f"agent-{agent}", f"q:{qi}", 10)
                lat.append((time.perf_counter() - t0) * 1000)
                assert all(0 <= int(mid[1:]) < n and owner[int(mid[1:])] == agent
                           for mid, _ in got), "a result left the agent's scope"
                recall.append(len(truth & {mid for mid, _ in got}) / max(len(truth), 1))
        finally:
            await store.aclose()
        result[label] = {"p50_ms": round(_pct(lat, 50), 2), "p95_ms": round(_pct(lat, 95), 2),
                         "recall_at_10": round(float(np.mean(recall)), 4)}
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=20_000)
    ap.add_argument("--agents", type=int, default=20)
    ap.add_argument("--queries", type=int, default=50)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--dsn", help="an empty database to use instead of a pgserver")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    tmp: Path | None = None
    handle = None
    if args.dsn:
        dsn = args.dsn
    else:
        tmp = Path(tempfile.mkdtemp(prefix="memorywire-pg-"))
        tmp.chmod(0o755)
        handle = start_pgserver(tmp / "data")
        dsn = handle.create_database("scale")
    try:
        res = anyio.run(run, dsn, args.n, args.agents, args.queries, args.seed)
    finally:
        if handle is not None:
            handle.close()
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    if args.json:
        print(json.dumps(res, indent=2))
    else:
        for key, value in res.items():
            print(f"{key:>16}: {value}")


if __name__ == "__main__":
    main()
