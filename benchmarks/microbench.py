"""Microbenchmark: retrieval quality and latency of SqliteStore with the default embedder.

Corpus (benchmarks/corpus/, written for this project): 100 facts about 10 people covering all
four memory types, and 50 labelled queries (24 paraphrases, 10 exact restatements, 8
multi-hit, 8 about things never stored). All memories belong to one agent and every query
searches all 100, so a query must find its fact among the other 99.

Relevance floor calibration. The floor is *not* tuned on the 50 test queries. It is derived
from a separate set of 20 off-topic calibration questions (corpus/calibration.jsonl, general
knowledge with no answer in the corpus): floor = the highest cosine any calibration question
reaches against any stored fact, plus a 0.02 margin, i.e. "just above the best score a
known-irrelevant question gets". The store's default (``DEFAULT_RELEVANCE_FLOOR``) is this
number rounded; ``--floor`` overrides it. The test no-match probes are a different set of
questions and only measure the result.

Metrics: Recall@5 averages, over the 42 answerable queries, the share of relevant facts in the
top 5; Precision@5 averages the share of returned hits (at most 5) that are relevant; a
no-match probe passes when it returns nothing. Latency is end to end through the async API
(embedding included), measured with ``time.perf_counter``.

    python benchmarks/microbench.py [--json] [--floor F]
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
import numpy as np

from memorywire.embed import default_embedder
from memorywire.embed.base import Embedder
from memorywire.store._common import DEFAULT_RELEVANCE_FLOOR, content_to_storage, embed_text
from memorywire.store.sqlite import SqliteStore
from memorywire.wire.models import MemoryType, RecallRequest, RememberRequest

HERE = Path(__file__).resolve().parent
CORPUS = HERE / "corpus"
RESULTS = HERE / "results" / "microbench.json"
AGENT = "assistant"
MARGIN = 0.02


def _load(name: str) -> list[dict[str, Any]]:
    with (CORPUS / name).open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def _pct(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q)) if values else 0.0


def calibrate_floor(embedder: Embedder, facts: list[dict[str, Any]]) -> float:
    texts = [embed_text(MemoryType(f["type"]), content_to_storage(MemoryType(f["type"]),
                                                                   f["content"])) for f in facts]
    fact_vecs = embedder.embed(texts)
    probes = embedder.embed([c["query"] for c in _load("calibration.jsonl")])
    return round(float((probes @ fact_vecs.T).max()) + MARGIN, 3)


async def run(floor: float | None) -> dict[str, Any]:
    facts, queries = _load("facts.jsonl"), _load("queries.jsonl")
    embedder = default_embedder()
    calibrated = calibrate_floor(embedder, facts)
    used = calibrated if floor is None else floor
    with tempfile.TemporaryDirectory() as tmp:
        store = SqliteStore(Path(tmp) / "bench.db", embedder=embedder, relevance_floor=used,
                            lexical_floor=used)
        try:
            ingest_ms: list[float] = []
            for f in facts:
                req = RememberRequest(agent_id=AGENT, user_id=f["user"], type=f["type"],
                                      content=f["content"], id=f["id"])
                t0 = time.perf_counter()
                await store.remember(req)
                ingest_ms.append((time.perf_counter() - t0) * 1000)
            batch = [RememberRequest(agent_id="batch", user_id=f["user"], type=f["type"],
                                     content=f["content"]) for f in facts] * 3
            t0 = time.perf_counter()
            await store.remember_many(batch)
            batch_rate = len(batch) / (time.perf_counter() - t0)

            for q in queries[:5]:  # warm the scope cache and the model
                await store.recall(RecallRequest(agent_id=AGENT, query=q["query"]))
            recall_ms: list[float] = []
            recalls: list[float] = []
            precisions: list[float] = []
            nomatch_ok = nomatch_total = 0
            misses: list[dict[str, Any]] = []
            for q in queries:
                t0 = time.perf_counter()
                resp = await store.recall(RecallRequest(agent_id=AGENT, query=q["query"], k=5))
                recall_ms.append((time.perf_counter() - t0) * 1000)
                got = [h.id for h in resp.results]
                relevant = set(q["relevant"])
                if not relevant:
                    nomatch_total += 1
                    nomatch_ok += not got
                    if got:
                        misses.append({"query": q["query"], "got": got})
                    continue
                found = relevant & set(got)
                recalls.append(len(found) / len(relevant))
                precisions.append(len(found) / len(got) if got else 0.0)
                if found != relevant:
                    misses.append({"query": q["query"], "got": got, "want": sorted(relevant)})
        finally:
            await store.aclose()
    return {
        "embedder": embedder.name,
        "store": "sqlite",
        "facts": len(facts),
        "queries": len(queries),
        "relevance_floor": used,
        "calibrated_floor": calibrated,
        "default_floor": DEFAULT_RELEVANCE_FLOOR,
        "recall_at_5": round(statistics.fmean(recalls), 4),
        "precision_at_5": round(statistics.fmean(precisions), 4),
        "no_match_empty": nomatch_ok,
        "no_match_total": nomatch_total,
        "ingest_p50_ms": round(_pct(ingest_ms, 50), 3),
        "ingest_p95_ms": round(_pct(ingest_ms, 95), 3),
        "ingest_p99_ms": round(_pct(ingest_ms, 99), 3),
        "batch_ingest_per_s": round(batch_rate, 1),
        "recall_p50_ms": round(_pct(recall_ms, 50), 3),
        "recall_p95_ms": round(_pct(recall_ms, 95), 3),
        "recall_p99_ms": round(_pct(recall_ms, 99), 3),
        "misses": misses,
    }


def _table(r: dict[str, Any]) -> str:
    rows = [
        ("embedder", r["embedder"]),
        ("relevance floor (calibrated)", f"{r['relevance_floor']:.3f}"),
        ("Recall@5", f"{r['recall_at_5']:.3f}"),
        ("Precision@5", f"{r['precision_at_5']:.3f}"),
        ("no-match probes empty", f"{r['no_match_empty']}/{r['no_match_total']}"),
        ("ingest p50/p95/p99 ms",
         f"{r['ingest_p50_ms']:.2f} / {r['ingest_p95_ms']:.2f} / {r['ingest_p99_ms']:.2f}"),
        ("batched ingest memories/s", f"{r['batch_ingest_per_s']:.0f}"),
        ("recall p50/p95/p99 ms",
         f"{r['recall_p50_ms']:.2f} / {r['recall_p95_ms']:.2f} / {r['recall_p99_ms']:.2f}"),
    ]
    width = max(len(k) for k, _ in rows)
    lines = [f"{k.ljust(width)}  {v}" for k, v in rows]
    lines += [f"miss: {m}" for m in r["misses"]]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--floor", type=float, default=None, help="override the cosine floor")
    args = parser.parse_args(argv)
    result = anyio.run(run, args.floor)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    with RESULTS.open("w", encoding="utf-8") as fh:
        json.dump(result, fh, indent=2)
        fh.write("\n")
    print(json.dumps(result) if args.json else _table(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
