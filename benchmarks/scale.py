"""Scale benchmark: SqliteStore exact scoped k-NN at 100k-1M memories.

Data. Embedding a million texts with MiniLM takes ~40 minutes on two cores, so the corpus
reuses real MiniLM embeddings of ``--base`` (default 10,000) distinct generated sentences:
memory ``i`` stores the text of base sentence ``i % base`` plus its number, and a vector that
is the base sentence's embedding plus small Gaussian noise (norm ~0.3, renormalised). Rows go
to agent ``i % agents``. Base embeddings are cached in the system temp folder.

What is measured.
* Ingest: ``SqliteStore.remember_many(reqs, vectors=...)`` in batches (the real write path:
  row, vector, FTS5 and scope version in one transaction per batch), request construction
  included, model excluded; ``ingest_with_embedding_per_s`` folds in the measured MiniLM
  throughput of the base sentences.
* Database-side recall: ``SqliteStore.recall_by_vector`` (the real search path minus the
  model: scope check, cache, masked matrix product, FTS5, row fetch, recall statistics
  update and commit). The exactness pass uses a query text made only of stop words, so the
  full-text list is empty, the floor is off, and the store's top-k must equal numpy brute
  force over the same agent's vectors (``exact_match_rate``). A second pass with real query
  words measures hybrid (vector + FTS5) latency.
* Cold vs warm: the first recall of an agent loads its scope from SQLite into the in-process
  cache (``cold``); later ones reuse it (``warm``). ``db_recall_p50_ms`` is warm. The cache is
  bounded (``--cache-mb``, the store's default is 1 GiB); ``default_budget_warm_share_est``
  says what share of uniformly random agents the default budget keeps warm.
* The compute floor: ``numpy_floor_p50_ms`` is a plain numpy exact top-k (one matrix-vector
  product over the agent's float32 matrix, already in memory, then argpartition and a sort of
  the k) for the same query vectors, timed right before each warm and hybrid recall in the
  same process so both see the same load; ``vector_over_floor`` and ``hybrid_over_floor`` are
  the warm and hybrid p50s over it.
* End to end: ``SqliteStore.recall`` with MiniLM embedding of a query string never seen before.

    python benchmarks/scale.py --n 100000 --agents 1 [--batch 5000] [--json] [--out PATH]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import numpy.typing as npt
from rich.console import Console
from rich.progress import Progress, TimeElapsedColumn

from memorywire.embed.base import Embedder
from memorywire.store.sqlite import SqliteStore
from memorywire.wire.models import MemoryType, RecallRequest, RememberRequest

RESULTS = Path(__file__).resolve().parent / "results"
NOISE_NORM = 0.3
#: Only stop words: fts_query() yields nothing, so recall is the pure vector k-NN.
VECTOR_ONLY_QUERY = "what do you remember about this"

_NAMES = ["Ada", "Bruno", "Chen", "Dara", "Emeka", "Farah", "Goran", "Hana", "Ivo", "Jun",
          "Kofi", "Lena", "Mateo", "Nadia", "Omar", "Priya", "Quinn", "Rosa", "Sven", "Tara",
          "Umar", "Vera", "Wen", "Ximena", "Yusuf", "Zoe", "Aiko", "Bea", "Cyrus", "Dmitri",
          "Elif", "Femi", "Gita", "Hugo", "Ines", "Jonas", "Kira", "Luca", "Mina", "Nils"]
_FACTS = ["prefers aisle seats on long flights", "is allergic to cats",
          "drinks oat milk in coffee", "runs ten kilometres on weekends",
          "is learning Portuguese", "works night shifts at a hospital",
          "collects vinyl records", "keeps bees in the garden", "plays chess online",
          "uses a standing desk", "is saving for a house", "hates cilantro",
          "volunteers at a food bank", "writes Go at a logistics firm",
          "bakes sourdough bread", "rides a motorbike to work", "is training for a triathlon",
          "needs wheelchair access at hotels", "reads science fiction",
          "has two rescue dogs", "teaches piano to children", "forgets passwords often",
          "prefers video calls to phone calls", "grows chillies on the balcony",
          "is vegetarian"]
_WHEN = ["since last spring", "every morning", "according to a note from March",
         "as mentioned in the onboarding chat", "for several years", "since moving to Lyon",
         "as of this week", "on most weekdays", "since the new job", "when travelling"]


def base_texts(count: int) -> list[str]:
    """``count`` distinct sentences (up to 10,000) from names x facts x time phrases."""
    out = [f"{n} {f} {w}." for w in _WHEN for f in _FACTS for n in _NAMES]
    if count > len(out):
        raise SystemExit(f"--base at most {len(out)}")
    step = len(out) // count
    return out[::step][:count]


def embed_base(embedder: Embedder, texts: list[str],
               cache_dir: Path | None) -> tuple[npt.NDArray[np.float32], float]:
    """Base embeddings (cached in ``cache_dir`` if given) and the model's measured texts/s."""
    if cache_dir is None:
        t0 = time.perf_counter()
        vecs = np.asarray(embedder.embed(texts), dtype=np.float32)
        return vecs, len(texts) / max(time.perf_counter() - t0, 1e-9)
    key = hashlib.blake2b(("\n".join(texts) + embedder.name).encode("utf-8"),
                          digest_size=12).hexdigest()
    path = cache_dir / f"memorywire-scale-{key}.npy"
    rate_path = path.with_suffix(".rate")
    if path.exists() and rate_path.exists():
        return np.load(path), float(rate_path.read_text(encoding="utf-8"))
    t0 = time.perf_counter()
    vecs = np.asarray(embedder.embed(texts), dtype=np.float32)
    rate = len(texts) / (time.perf_counter() - t0)
    np.save(path, vecs)
    rate_path.write_text(f"{rate:.1f}", encoding="utf-8")
    return vecs, rate


def _unit(m: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    out: npt.NDArray[np.float32] = (m / np.linalg.norm(m, axis=-1, keepdims=True)).astype(
        np.float32)
    return out


def perturbed(base: npt.NDArray[np.float32], rows: npt.NDArray[np.int64],
              rng: np.random.Generator) -> npt.NDArray[np.float32]:
    dim = base.shape[1]
    noise = rng.standard_normal((rows.size, dim), dtype=np.float32)
    noise *= NOISE_NORM / np.sqrt(dim)
    return _unit(base[rows % base.shape[0]] + noise)


def _pct(values: list[float], q: float) -> float:
    return round(float(np.percentile(np.asarray(values), q)), 3) if values else 0.0


def _ratio(a: float, b: float) -> float | None:
    return round(a / b, 2) if b > 0 else None


def numpy_floor_ms(matrix: npt.NDArray[np.float32], q: npt.NDArray[np.float32],
                   k: int) -> float:
    """Milliseconds of the plainest exact top-k a caller could write: one matvec over the
    agent's float32 matrix, argpartition, then a sort of the k survivors. What any store
    recall costs above this is overhead worth knowing about."""
    t0 = time.perf_counter()
    sims = matrix @ q
    top = np.argpartition(-sims, k)[:k] if sims.size > k else np.arange(sims.size)
    top[np.argsort(-sims[top], kind="stable")]
    return (time.perf_counter() - t0) * 1000


@dataclass
class Truth:
    """The vectors and store ids of one queried agent, in insertion order."""

    ids: list[str] = field(default_factory=list)
    chunks: list[npt.NDArray[np.float32]] = field(default_factory=list)

    def matrix(self) -> npt.NDArray[np.float32]:
        return np.concatenate(self.chunks) if self.chunks else np.zeros((0, 0), np.float32)


async def run_scale(
    embedder: Embedder,
    *,
    n: int,
    agents: int,
    base: int = 10_000,
    queries: int = 100,
    k: int = 10,
    batch: int = 5_000,
    db_path: Path,
    cache_mb: float = 4096,
    end_to_end: int = 30,
    seed: int = 1,
    embed_cache: Path | None = None,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """``progress`` (a started rich Progress, on stderr) shows the write and recall passes;
    a 1M-row run writes for minutes and should not look hung."""
    rng = np.random.default_rng(seed)

    def step(description: str, total: int) -> Callable[[int], None]:
        if progress is None:
            return lambda advance: None
        task = progress.add_task(description, total=total)
        return lambda advance: progress.advance(task, advance)

    texts = base_texts(min(base, n))
    base_vecs, embed_rate = embed_base(embedder, texts, embed_cache)
    query_agents = sorted(rng.choice(agents, size=min(queries, agents), replace=False).tolist())
    truth = {a: Truth() for a in query_agents}
    store = SqliteStore(db_path, embedder=embedder, cache_mb=cache_mb,
                        recall=replace(SqliteStore.DEFAULT_RECALL, relevance_floor=-1.0,
                                       lexical_floor=-1.0))
    try:
        t0 = time.perf_counter()
        wrote = step(f"writing {n:,} memories", n)
        by_scope: list[dict[str, float]] = []
        for start in range(0, n, batch):
            t_batch = time.perf_counter()
            rows = np.arange(start, min(start + batch, n), dtype=np.int64)
            vecs = perturbed(base_vecs, rows, rng)
            reqs = [RememberRequest(agent_id=f"agent-{i % agents}", type=MemoryType.SEMANTIC,
                                    content=f"{texts[i % len(texts)]} (#{i})")
                    for i in rows.tolist()]
            resp = await store.remember_many(reqs, vectors=vecs)
            for j, i in enumerate(rows.tolist()):
                t = truth.get(i % agents)
                if t is not None:
                    t.ids.append(resp[j].id)
            for a, t in truth.items():
                sel = (rows % agents) == a
                if sel.any():
                    t.chunks.append(vecs[sel])
            by_scope.append({"scope_before": start // agents, "rows": len(rows),
                             "rows_per_s": round(len(rows) / (time.perf_counter() - t_batch), 1)})
            wrote(len(rows))
        ingest_s = time.perf_counter() - t0

        plan = [(a, int(rng.integers(len(texts)))) for a in query_agents]
        while len(plan) < queries:
            plan.append((int(rng.choice(query_agents)), int(rng.integers(len(texts)))))
        qvecs = perturbed(base_vecs, np.array([b for _, b in plan], dtype=np.int64), rng)
        matrices = {a: t.matrix() for a, t in truth.items()}
        recalled = step("recalling (cold, warm, hybrid, end to end)", 3 * len(plan) + end_to_end)

        floor: list[float] = []

        async def db_pass(text: str | None, *, time_floor: bool = False,
                          ) -> tuple[list[float], int]:
            times: list[float] = []
            exact = 0
            for (a, b), q in zip(plan, qvecs, strict=True):
                req = RecallRequest(agent_id=f"agent-{a}", query=text or texts[b], k=k)
                if time_floor:
                    floor.append(numpy_floor_ms(matrices[a], q, k))
                t1 = time.perf_counter()
                resp = await store.recall_by_vector(req, q)
                times.append((time.perf_counter() - t1) * 1000)
                sims = matrices[a] @ q
                want = [truth[a].ids[j] for j in np.argsort(-sims, kind="stable")[:k]]
                exact += [h.id for h in resp.results] == want
                recalled(1)
            return times, exact

        cold, exact_cold = await db_pass(VECTOR_ONLY_QUERY)
        warm, exact_warm = await db_pass(VECTOR_ONLY_QUERY, time_floor=True)
        hybrid, _ = await db_pass(None, time_floor=True)
        e2e: list[float] = []
        for j, (a, b) in enumerate(plan[:end_to_end]):
            req = RecallRequest(agent_id=f"agent-{a}", query=f"what about {texts[b]} ({j})", k=k)
            t1 = time.perf_counter()
            await store.recall(req)
            e2e.append((time.perf_counter() - t1) * 1000)
            recalled(1)
        cache_mb_used = store._caches.nbytes / 2**20
    finally:
        await store.aclose()
    file_mb = sum(p.stat().st_size for p in db_path.parent.glob(db_path.name + "*")) / 2**20
    distinct_cold = len({a for a, _ in plan})
    store_rate = n / ingest_s
    return {
        "n": n,
        "agents": agents,
        "rows_per_agent": n // agents,
        "k": k,
        "queries": len(plan),
        "db_recall_p50_ms": _pct(warm, 50),
        "db_recall_p95_ms": _pct(warm, 95),
        "db_recall_cold_p50_ms": _pct(cold[:distinct_cold], 50),
        "db_recall_cold_p95_ms": _pct(cold[:distinct_cold], 95),
        "db_recall_hybrid_p50_ms": _pct(hybrid, 50),
        "db_recall_hybrid_p95_ms": _pct(hybrid, 95),
        # The compute floor: numpy exact top-k over the same in-memory float32 matrix for
        # the same query vectors, timed just before each warm and hybrid recall so both
        # share whatever load the machine has.
        "numpy_floor_p50_ms": _pct(floor, 50),
        "vector_over_floor": _ratio(_pct(warm, 50), _pct(floor, 50)),
        "hybrid_over_floor": _ratio(_pct(hybrid, 50), _pct(floor, 50)),
        "recall_p50_ms": _pct(e2e, 50),
        "recall_p95_ms": _pct(e2e, 95),
        "ingest_per_s": round(store_rate, 1),
        "embed_per_s": round(embed_rate, 1),
        "ingest_with_embedding_per_s": round(1 / (1 / store_rate + 1 / embed_rate), 1)
        if embed_rate else None,
        "ingest_s": round(ingest_s, 1),
        # Each write batch's rate (request building included) against the rows each agent
        # held before it: a write path whose cost grows with the scope shows a falling rate.
        "ingest_by_scope": by_scope,
        "exact_match_rate": round((exact_cold + exact_warm) / (2 * len(plan)), 4),
        "file_mb": round(file_mb, 1),
        "cache_mb": round(cache_mb_used, 1),
        "cache_all_agents_mb_est": round(n * (embedder.dim * 4 + 240) / 2**20, 1),
        "cache_budget_mb": cache_mb,
        # With SqliteStore's default 1 GiB budget and agents queried uniformly at random,
        # this share of recalls finds its agent cached (the rest pay the cold load).
        "default_budget_warm_share_est": round(min(1.0, 1024 / (n * (embedder.dim * 4 + 240)
                                                                / 2**20)), 3),
        "embedder": embedder.name,
        "load_avg": [round(x, 2) for x in os.getloadavg()],
        "notes": (
            f"vectors are real {embedder.name} embeddings of {len(texts)} distinct generated "
            f"sentences plus Gaussian noise (norm {NOISE_NORM}, renormalised); texts are the "
            "base sentence plus the row number. ingest_per_s excludes the model (vectors "
            "passed to remember_many); ingest_with_embedding_per_s adds measured model "
            "throughput. db_* latencies exclude query embedding; db_recall_p50_ms is warm "
            "(agent scope already cached); cold = first recall of an agent (loads its scope "
            "from SQLite). exact_match_rate compares top-k ids, in order, with numpy brute "
            "force over the agent's generated vectors."
        ),
    }


def _table(r: dict[str, Any]) -> str:
    keys = [k for k in r if k != "notes"]
    width = max(len(k) for k in keys)
    return "\n".join([f"{k.ljust(width)}  {r[k]}" for k in keys] + ["", r["notes"]])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--agents", type=int, default=1)
    parser.add_argument("--base", type=int, default=10_000, help="distinct embedded texts")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--cache-mb", type=float, default=4096,
                        help="SqliteStore scope cache budget")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--db", type=Path, default=None, help="database file (default: temp)")
    parser.add_argument("--batch", type=int, default=5_000, help="memories per remember_many")
    parser.add_argument("--out", type=Path, default=None,
                        help="result file (default: results/scale-N-AGENTS.json)")
    args = parser.parse_args(argv)
    from memorywire.embed import default_embedder

    embedder = default_embedder()
    bars = Progress(*Progress.get_default_columns(), TimeElapsedColumn(),
                    console=Console(stderr=True), transient=True)
    with tempfile.TemporaryDirectory() as tmp, bars:
        db = args.db or Path(tmp) / "scale.db"
        result = anyio.run(lambda: run_scale(
            embedder, n=args.n, agents=args.agents, base=args.base, queries=args.queries,
            k=args.k, batch=args.batch, db_path=db, cache_mb=args.cache_mb,
            embed_cache=Path(tempfile.gettempdir()), progress=bars))
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = args.out or RESULTS / f"scale-{args.n}-{args.agents}.json"
    with out.open("w", encoding="utf-8") as fh:
        json.dump(result, fh, indent=2)
        fh.write("\n")
    print(json.dumps(result) if args.json else _table(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
