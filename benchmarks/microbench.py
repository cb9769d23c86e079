"""Microbenchmark: retrieval quality and latency of SqliteStore with the default embedder.

Corpus (benchmarks/corpus/, written for this project): 100 facts about 10 people covering all
four memory types, and 50 labelled queries (24 paraphrases, 10 exact restatements, 8
multi-hit, 8 about things never stored), and 24 no-match probes that name a stored person
but ask for something never stored ("What is Alice's shoe size?", corpus/nomatch_named.jsonl):
a cosine floor cannot tell "about Alice" from "answers the question", so these are the hard
case of "nothing relevant". corpus/named_check.jsonl is a second, smaller set written before
the entity gate's threshold was fitted and never tuned on: 12 more named no-match probes and
18 answerable paraphrases that share only the name with their fact ("What does Alice do for
a living?"), reported separately. corpus/named_dev.jsonl (13 name-only paraphrases, 8 named
no-match questions) is what the entity gate's thresholds were fitted on, with queries.jsonl.
All memories belong to one agent and every query searches all 100, so a query must find its
fact among the other 99.

Floor calibration. Floors are *not* tuned on the 50 test queries but on a separate set of
36 off-topic calibration questions (corpus/calibration.jsonl, general knowledge with no answer
in the corpus; the first 20 came with the corpus, 16 were added later without looking at
which test queries miss). The benchmark runs the store's defaults and reports, from the
calibration set alone: how many calibration questions the defaults answer (false positives),
the lexical floor the rule below would pick, and a "strict" floor (the best cosine any
calibration question reaches + 0.02, so none answers) with the quality it would give.

Lexical floor rule: a row that also matches the query in full text (store's own FTS5 query:
porter stems plus six-letter prefixes) may pass at a lower cosine. The lowest such floor
that admits no calibration question the cosine floor alone rejects is the best cosine such a
question reaches on a fact it matches in full text, + 0.02. ``--floor`` and
``--lexical-floor`` override the defaults. The test no-match probes only measure the result.

Governance: ``governed_recall_p50_ms`` / ``governed_ingest_p50_ms`` time the same calls
through a ``GovernedStore`` (audit on), paired call by call with a bare store in the same run
(``paired_bare_*``; ``governed_*_ratio`` is governed over bare).

Metrics: Recall@5 averages, over the 42 answerable queries, the share of relevant facts in the
top 5; Precision@5 averages the share of returned hits (at most 5) that are relevant; a
no-match probe passes when it returns nothing. Latency is end to end through the async API
(embedding included, the embedder's LRU cleared so no text is a cache hit), measured with
``time.perf_counter``; ``store_*`` latencies pass precomputed vectors (``remember_many(...,
vectors=)``, ``recall_by_vector``) to show what the store adds on top of the model.

    python benchmarks/microbench.py [--json] [--floor F] [--lexical-floor F]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeVar

import anyio
import apsw
import numpy as np

from memorywire.embed import default_embedder
from memorywire.embed.base import Embedder
from memorywire.governance import GovernedStore, acting_as
from memorywire.recall.settings import DEFAULT_RELEVANCE_FLOOR
from memorywire.store._common import content_to_storage, embed_text
from memorywire.store.sqlite import SqliteStore
from memorywire.store.sqlite.search import SQLITE_LEXICAL_FLOOR, lexical_rids
from memorywire.wire.models import MemoryType, RecallRequest, RememberRequest

HERE = Path(__file__).resolve().parent
CORPUS = HERE / "corpus"
RESULTS = HERE / "results" / "microbench.json"
AGENT = "assistant"
MARGIN = 0.02
T = TypeVar("T")


def _load(name: str) -> list[dict[str, Any]]:
    with (CORPUS / name).open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def _pct(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q)) if values else 0.0


@dataclass
class Calibration:
    """What the held-out calibration questions say about the floors (never the test set)."""

    best: list[float]  # per question: best cosine against any fact
    lexical_best: list[float]  # per question: best cosine among facts it matches in full text

    def strict_floor(self) -> float:
        """No calibration question returns anything: the best cosine any reaches + margin."""
        return round(max(self.best) + MARGIN, 3)

    def lexical_floor(self, floor: float) -> float:
        """Lowest floor for full-text matches that admits no question the cosine floor alone
        rejects: the best cosine such a question reaches on a fact it matches, + margin."""
        rejected = [lx for b, lx in zip(self.best, self.lexical_best, strict=True) if b < floor]
        return min(round(max(rejected, default=-1.0) + MARGIN, 3), floor)

    def false_positives(self, floor: float, lexical_floor: float) -> int:
        return sum(b >= floor or lx >= lexical_floor
                   for b, lx in zip(self.best, self.lexical_best, strict=True))


async def calibrate(embedder: Embedder, facts: list[dict[str, Any]], folder: Path) -> Calibration:
    path = folder / "calibrate.db"
    store = SqliteStore(path, embedder=embedder)
    try:
        await store.remember_many([
            RememberRequest(agent_id=AGENT, user_id=f["user"], type=f["type"],
                            content=f["content"], id=f["id"]) for f in facts])
    finally:
        await store.aclose()
    texts = [embed_text(MemoryType(f["type"]), content_to_storage(MemoryType(f["type"]),
                                                                   f["content"])) for f in facts]
    position = {f["id"]: i for i, f in enumerate(facts)}
    probes = [c["query"] for c in _load("calibration.jsonl")]
    sims = embedder.embed(probes) @ embedder.embed(texts).T
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        ids = dict(conn.execute("SELECT rid, id FROM memories").fetchall())
        lexical = [
            max((float(sims[i, position[ids[rid]]])
                 for rid in lexical_rids(conn, AGENT, probe, 1000)), default=-1.0)
            for i, probe in enumerate(probes)
        ]
    finally:
        conn.close()
    return Calibration([float(x) for x in sims.max(axis=1)], lexical)


def _forget_cached_embeddings(embedder: Embedder) -> None:
    """So timed calls pay for the model, not for a text the calibration already embedded."""
    cache = getattr(embedder, "cache", None)
    if cache is not None:
        cache.clear()


async def evaluate(store: SqliteStore, queries: list[dict[str, Any]]) -> dict[str, Any]:
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
    return {
        "recall_at_5": round(statistics.fmean(recalls), 4),
        "precision_at_5": round(statistics.fmean(precisions), 4),
        "no_match_empty": nomatch_ok,
        "no_match_total": nomatch_total,
        "recall_p50_ms": round(_pct(recall_ms, 50), 3),
        "recall_p95_ms": round(_pct(recall_ms, 95), 3),
        "recall_p99_ms": round(_pct(recall_ms, 99), 3),
        "misses": misses,
    }


async def empty_answers(store: SqliteStore, queries: list[dict[str, Any]]) -> dict[str, Any]:
    """How many of these no-match probes come back empty, and what the others returned."""
    misses = []
    for q in queries:
        got = [h.id for h in (await store.recall(
            RecallRequest(agent_id=AGENT, query=q["query"], k=5))).results]
        if got:
            misses.append({"query": q["query"], "got": got})
    return {"empty": len(queries) - len(misses), "total": len(queries), "misses": misses}


async def found_answers(store: SqliteStore, queries: list[dict[str, Any]]) -> dict[str, Any]:
    """How many of these answerable queries find their fact in the top 5."""
    misses = []
    for q in queries:
        got = [h.id for h in (await store.recall(
            RecallRequest(agent_id=AGENT, query=q["query"], k=5))).results]
        if not set(q["relevant"]) & set(got):
            misses.append({"query": q["query"], "got": got, "want": q["relevant"]})
    return {"found": len(queries) - len(misses), "total": len(queries), "misses": misses}


async def _ingest(store: SqliteStore, facts: list[dict[str, Any]]) -> list[float]:
    ingest_ms: list[float] = []
    for f in facts:
        req = RememberRequest(agent_id=AGENT, user_id=f["user"], type=f["type"],
                              content=f["content"], id=f["id"])
        t0 = time.perf_counter()
        await store.remember(req)
        ingest_ms.append((time.perf_counter() - t0) * 1000)
    return ingest_ms


async def _store_only(store: SqliteStore, embedder: Embedder, facts: list[dict[str, Any]],
                      queries: list[dict[str, Any]]) -> dict[str, float]:
    """Latency without the model (vectors computed beforehand): what the store itself adds."""
    texts = [embed_text(MemoryType(f["type"]), content_to_storage(MemoryType(f["type"]),
                                                                   f["content"])) for f in facts]
    fact_vecs = embedder.embed(texts)
    query_vecs = embedder.embed([q["query"] for q in queries])
    write_ms: list[float] = []
    for f, vec in zip(facts, fact_vecs, strict=True):
        req = RememberRequest(agent_id="store-only", user_id=f["user"], type=f["type"],
                              content=f["content"])
        t0 = time.perf_counter()
        await store.remember_many([req], vectors=vec[None, :])
        write_ms.append((time.perf_counter() - t0) * 1000)
    read_ms: list[float] = []
    for q, vec in zip(queries, query_vecs, strict=True):
        t0 = time.perf_counter()
        await store.recall_by_vector(RecallRequest(agent_id=AGENT, query=q["query"], k=5), vec)
        read_ms.append((time.perf_counter() - t0) * 1000)
    return {"store_remember_p50_ms": round(_pct(write_ms, 50), 3),
            "store_remember_p95_ms": round(_pct(write_ms, 95), 3),
            "store_recall_p50_ms": round(_pct(read_ms, 50), 3),
            "store_recall_p95_ms": round(_pct(read_ms, 95), 3)}


def _alternate(n: int, first: T, second: T) -> tuple[T, T]:
    """Which side goes first alternates, so neither gains from running warm after the other."""
    return (first, second) if n % 2 == 0 else (second, first)


async def _governed(embedder: Embedder, facts: list[dict[str, Any]],
                    queries: list[dict[str, Any]], folder: Path, floor: float,
                    lexical_floor: float) -> dict[str, Any]:
    """Governance's cost, paired: each fact and query goes through a bare SqliteStore and a
    GovernedStore around another one, alternately, the embedder cache cleared before each
    call, so load swings hit both sides alike. The governed side audits every write (intent
    before effect, awaited) and every recall (queued, group-committed by the worker). Which
    side runs first alternates call by call."""
    bare = SqliteStore(folder / "pair-bare.db", embedder=embedder,
                       recall=replace(SqliteStore.DEFAULT_RECALL, relevance_floor=floor,
                                      lexical_floor=lexical_floor))
    inner = SqliteStore(folder / "pair-governed.db", embedder=embedder,
                        recall=replace(SqliteStore.DEFAULT_RECALL, relevance_floor=floor,
                                       lexical_floor=lexical_floor))
    gov = GovernedStore(inner, folder / "governance.db")
    bare_w: list[float] = []
    gov_w: list[float] = []
    bare_r: list[float] = []
    gov_r: list[float] = []
    try:
        with acting_as("microbench"):
            for n, f in enumerate(facts):
                req = RememberRequest(agent_id=AGENT, user_id=f["user"], type=f["type"],
                                      content=f["content"], id=f["id"])
                for store, out in _alternate(n, (bare, bare_w), (gov, gov_w)):
                    _forget_cached_embeddings(embedder)
                    t0 = time.perf_counter()
                    await store.remember(req)
                    out.append((time.perf_counter() - t0) * 1000)
            for n, q in enumerate(queries * 2):
                req_q = RecallRequest(agent_id=AGENT, query=q["query"], k=5)
                for rstore, out in _alternate(n, (bare, bare_r), (gov, gov_r)):
                    _forget_cached_embeddings(embedder)
                    t0 = time.perf_counter()
                    await rstore.recall(req_q)
                    out.append((time.perf_counter() - t0) * 1000)
        entries = gov.verify()["entries"]
    finally:
        await gov.aclose()
        await bare.aclose()
    b_r, g_r = _pct(bare_r, 50), _pct(gov_r, 50)
    b_w, g_w = _pct(bare_w, 50), _pct(gov_w, 50)
    return {
        "paired_bare_recall_p50_ms": round(b_r, 3),
        "governed_recall_p50_ms": round(g_r, 3),
        "governed_recall_ratio": round(g_r / b_r, 3) if b_r else None,
        "paired_bare_ingest_p50_ms": round(b_w, 3),
        "governed_ingest_p50_ms": round(g_w, 3),
        "governed_ingest_ratio": round(g_w / b_w, 3) if b_w else None,
        "governed_audit_entries": entries,
    }


_COLD = """
import anyio
from memorywire.store.sqlite import SqliteStore
from memorywire.wire.models import RecallRequest
AGENT = {agent!r}
async def main(path, query):
    store = SqliteStore(path)
    try:
        await store.recall(RecallRequest(agent_id=AGENT, query=query))
    finally:
        await store.aclose()
anyio.run(main, *__import__("sys").argv[1:])
""".replace("{agent!r}", repr(AGENT))


def _cold_start_ms(db: Path, query: str) -> float:
    """A new Python process: import, open the store, load the model, first recall, exit."""
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", _COLD, str(db), query], check=True)
        best = min(best, (time.perf_counter() - t0) * 1000)
    return round(best, 1)


async def run(floor: float | None, lexical_floor: float | None) -> dict[str, Any]:
    facts, queries = _load("facts.jsonl"), _load("queries.jsonl")
    embedder = default_embedder()
    used = DEFAULT_RELEVANCE_FLOOR if floor is None else floor
    used_lexical = SQLITE_LEXICAL_FLOOR if lexical_floor is None else lexical_floor
    with tempfile.TemporaryDirectory() as tmp:
        cal = await calibrate(embedder, facts, Path(tmp))
        _forget_cached_embeddings(embedder)
        store = SqliteStore(Path(tmp) / "bench.db", embedder=embedder,
                            recall=replace(SqliteStore.DEFAULT_RECALL, relevance_floor=used,
                                           lexical_floor=used_lexical))
        try:
            ingest_ms = await _ingest(store, facts)
            batch = [RememberRequest(agent_id="batch", user_id=f["user"], type=f["type"],
                                     content=f["content"]) for f in facts] * 3
            _forget_cached_embeddings(embedder)
            t0 = time.perf_counter()
            await store.remember_many(batch)
            batch_rate = len(batch) / (time.perf_counter() - t0)
            for q in queries[:5]:  # warm the scope cache and the model
                await store.recall(RecallRequest(agent_id=AGENT, query=q["query"]))
            _forget_cached_embeddings(embedder)
            quality = await evaluate(store, queries)
            named = await empty_answers(store, _load("nomatch_named.jsonl"))
            check = _load("named_check.jsonl")
            check_named = await empty_answers(
                store, [q for q in check if not q["relevant"]])
            check_found = await found_answers(store, [q for q in check if q["relevant"]])
            dev = _load("named_dev.jsonl")
            dev_named = await empty_answers(store, [q for q in dev if not q["relevant"]])
            dev_found = await found_answers(store, [q for q in dev if q["relevant"]])
            store_only = await _store_only(store, embedder, facts, queries)
        finally:
            await store.aclose()
        governed = await _governed(embedder, facts, queries, Path(tmp), used, used_lexical)
        cold_start_ms = _cold_start_ms(Path(tmp) / "bench.db", queries[0]["query"])
        strict = cal.strict_floor()
        strict_store = SqliteStore(Path(tmp) / "strict.db", embedder=embedder,
                                   recall=replace(SqliteStore.DEFAULT_RECALL,
                                                  relevance_floor=strict, lexical_floor=strict))
        try:
            await strict_store.remember_many([
                RememberRequest(agent_id=AGENT, user_id=f["user"], type=f["type"],
                                content=f["content"], id=f["id"]) for f in facts])
            strict_quality = await evaluate(strict_store, queries)
        finally:
            await strict_store.aclose()
    return {
        "embedder": embedder.name,
        "store": "sqlite",
        "facts": len(facts),
        "queries": len(queries),
        "calibration_questions": len(cal.best),
        "relevance_floor": used,
        "lexical_floor": used_lexical,
        "default_floor": DEFAULT_RELEVANCE_FLOOR,
        "default_lexical_floor": SQLITE_LEXICAL_FLOOR,
        "calibrated_lexical_floor": cal.lexical_floor(used),
        "calibration_false_positives": cal.false_positives(used, used_lexical),
        "load_avg": [round(x, 2) for x in os.getloadavg()],
        **{k: v for k, v in quality.items() if k != "misses"},
        "named_no_match_empty": named["empty"],
        "named_no_match_total": named["total"],
        "named_no_match_misses": named["misses"],
        "dev_named_no_match_empty": dev_named["empty"],
        "dev_named_no_match_total": dev_named["total"],
        "dev_named_paraphrase_found": dev_found["found"],
        "dev_named_paraphrase_total": dev_found["total"],
        "check_named_no_match_empty": check_named["empty"],
        "check_named_no_match_total": check_named["total"],
        "check_named_no_match_misses": check_named["misses"],
        "check_named_paraphrase_found": check_found["found"],
        "check_named_paraphrase_total": check_found["total"],
        "check_named_paraphrase_misses": check_found["misses"],
        "ingest_p50_ms": round(_pct(ingest_ms, 50), 3),
        "ingest_p95_ms": round(_pct(ingest_ms, 95), 3),
        "ingest_p99_ms": round(_pct(ingest_ms, 99), 3),
        "batch_ingest_per_s": round(batch_rate, 1),
        **store_only,
        **governed,
        "cold_start_to_first_recall_ms": cold_start_ms,
        "misses": quality["misses"],
        "strict": {
            "floor": strict,
            "note": "both floors = best cosine any calibration question reaches + margin, so "
                    "no calibration question returns anything",
            **{k: v for k, v in strict_quality.items() if not k.startswith("recall_p")},
        },
    }


def _table(r: dict[str, Any]) -> str:
    rows = [
        ("embedder", r["embedder"]),
        ("relevance floor / lexical floor", f"{r['relevance_floor']:.3f} / "
         f"{r['lexical_floor']:.3f}"),
        ("calibration questions answered",
         f"{r['calibration_false_positives']}/{r['calibration_questions']}"),
        ("Recall@5", f"{r['recall_at_5']:.3f}"),
        ("Precision@5", f"{r['precision_at_5']:.3f}"),
        ("no-match probes empty", f"{r['no_match_empty']}/{r['no_match_total']}"),
        ("named no-match probes empty (corpus/nomatch_named.jsonl)",
         f"{r['named_no_match_empty']}/{r['named_no_match_total']}"),
        ("dev set (corpus/named_dev.jsonl, the entity gate was fitted on it): named "
         "no-match empty / name-only paraphrases found",
         f"{r['dev_named_no_match_empty']}/{r['dev_named_no_match_total']} / "
         f"{r['dev_named_paraphrase_found']}/{r['dev_named_paraphrase_total']}"),
        ("check set (corpus/named_check.jsonl, never tuned on): named no-match empty",
         f"{r['check_named_no_match_empty']}/{r['check_named_no_match_total']}"),
        ("check set: answerable paraphrases sharing only the name, found in top 5",
         f"{r['check_named_paraphrase_found']}/{r['check_named_paraphrase_total']}"),
        ("ingest p50/p95/p99 ms",
         f"{r['ingest_p50_ms']:.2f} / {r['ingest_p95_ms']:.2f} / {r['ingest_p99_ms']:.2f}"),
        ("batched ingest memories/s", f"{r['batch_ingest_per_s']:.0f}"),
        ("store only (no model): remember / recall p50 ms",
         f"{r['store_remember_p50_ms']:.2f} / {r['store_recall_p50_ms']:.2f}"),
        ("cold start to first recall ms (new process, best of 3)",
         f"{r['cold_start_to_first_recall_ms']:.0f}"),
        ("recall p50/p95/p99 ms",
         f"{r['recall_p50_ms']:.2f} / {r['recall_p95_ms']:.2f} / {r['recall_p99_ms']:.2f}"),
        ("governed vs bare recall p50 ms (paired)",
         f"{r['governed_recall_p50_ms']:.2f} / {r['paired_bare_recall_p50_ms']:.2f}"
         f" = {r['governed_recall_ratio']:.3f}x"),
        ("governed vs bare remember p50 ms (paired)",
         f"{r['governed_ingest_p50_ms']:.2f} / {r['paired_bare_ingest_p50_ms']:.2f}"
         f" = {r['governed_ingest_ratio']:.3f}x"),
    ]
    width = max(len(k) for k, _ in rows)
    lines = [f"{k.ljust(width)}  {v}" for k, v in rows]
    lines += [f"miss: {m}" for m in r["misses"]]
    st = r["strict"]
    lines.append(f"strict floor {st['floor']:.3f}: Recall@5 {st['recall_at_5']:.3f}, "
                 f"Precision@5 {st['precision_at_5']:.3f}, no-match "
                 f"{st['no_match_empty']}/{st['no_match_total']}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--floor", type=float, default=None, help="override the cosine floor")
    parser.add_argument("--lexical-floor", type=float, default=None,
                        help="override the floor for rows that also match in full text")
    args = parser.parse_args(argv)
    result = anyio.run(run, args.floor, args.lexical_floor)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    with RESULTS.open("w", encoding="utf-8") as fh:
        json.dump(result, fh, indent=2)
        fh.write("\n")
    print(json.dumps(result) if args.json else _table(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
