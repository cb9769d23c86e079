r"""Recall latency of SqliteStore with vectors given: issue 19's baseline against the defaults.

Issue 19 asks that recall p50 (vectors given, so the model is not timed) stay within 1.5x of
the store before its retrieval work: no context keys, no pseudo-relevance feedback. This
script builds the same stores as ``benchmarks/locomo.py`` and ``benchmarks/longmemeval.py``
(their loading code, their turns, their vector caches: nothing is embedded again when a cache
exists) once per variant and times recall in one process, interleaved: every question is
asked of every variant in turn (the order rotated per question and repetition), so each
variant sees the same machine load. The stores' writes are timed too (vectors given, each
conversation or haystack written to every variant in turn from the variant's own copy of
the requests, the order rotated): issue 19's
ingest rate is the ``context`` variant's against the ``baseline``'s (``write_ratio``).

Variants, all with the relevance floors off as the benchmarks' ``store`` row (a floor can
cut the list and, with the entity gate, call the model, which is not the store's cost):

* ``baseline``: turns without ``metadata.context``, ``feedback_weight=0``,
  ``session_weight=0``, ``subject_weight=0``, ``substance_weight=0``, ``turn_weight=0`` and
  ``subject_lexical_weight=0`` (the issue's "today");
* ``context``: turns with ``metadata.context`` as the benchmarks write it, no feedback, no
  session evidence, no subject boost, no substance prior, no turn focus, no subject lexical
  list;
* ``no-turn``: the defaults without turn focus (``turn_weight=0``, the store before it;
  what turn focus itself costs is ``defaults`` against this);
* ``no-subject-lexical``: the defaults without the subject lexical list
  (``subject_lexical_weight=0``, the store before spk19; what the list costs is
  ``defaults`` against this);
* ``defaults``: context, the store's default feedback, session evidence, subject boost,
  substance prior, turn focus and subject lexical list (the store now);
* ``restated`` (only with ``--duplicate-share S``): the defaults with ``duplicate_share=S``
  (``recall.restatement``, off by default); what that rule costs is ``restated`` against
  ``defaults``.

LoCoMo asks every ``--locomo-stride``-th question (k=10, its deepest cut); LongMemEval asks
every scored question (or the first ``--longmemeval-limit``, question types interleaved) with
k = the whole haystack (~245 turns), as its benchmark does. Each variant is warmed once per
question before timing (the first recall of an agent loads its vectors). The ratio is p50 /
baseline p50.

``--hits PATH`` also writes what the warm-up recalls returned (ids, scores, relevance,
metadata, per variant and question): run it on two versions of the store and compare the
files to show that a change left the rankings and the wire output as they were.

    python benchmarks/recall_latency.py --locomo ../shared/datasets/locomo/locomo10.json \
        --longmemeval ../shared/datasets/longmemeval/longmemeval_s_dev120.json.gz \
        [--repeat 3] [--json] [--out PATH] [--hits PATH]
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from datetime import date
from pathlib import Path
from typing import Any

import anyio
import locomo
import longmemeval
import numpy as np
import numpy.typing as npt
from _retrieval import (
    add_out_argument,
    default_cache,
    embed_cached,
    format_table,
    machine_info,
    stderr,
    write_result,
)

from memorywire.embed import default_embedder
from memorywire.embed.base import Embedder
from memorywire.store.sqlite import SqliteStore
from memorywire.wire.models import MemoryType, RecallRequest, RememberRequest

VARIANTS = ("baseline", "context", "no-turn", "no-subject-lexical", "defaults")
GOAL_RATIO = 1.5


@dataclass
class Ask:
    """One timed question: the request and its query vector."""

    req: RecallRequest
    vec: npt.NDArray[np.float32]


#: One conversation's (or haystack's) turns as the variants write them: with context, without
#: (the baseline), and their vectors.
Batch = tuple[list[RememberRequest], list[RememberRequest], npt.NDArray[np.float32]]


def _stores(tmp: Path, embedder: Embedder,
            duplicate_share: float | None = None) -> dict[str, SqliteStore]:
    def store(name: str, **changes: float) -> SqliteStore:
        return SqliteStore(tmp / f"{name}.db", embedder, recall=replace(
            SqliteStore.DEFAULT_RECALL, relevance_floor=-1.0, lexical_floor=-1.0, **changes))

    #: The issue's "today": no feedback and no re-ranking rule.
    bare = dict.fromkeys(("feedback_weight", "session_weight", "subject_weight",
                          "substance_weight", "turn_weight", "subject_lexical_weight"), 0.0)
    stores = {"baseline": store("baseline", **bare),
              "context": store("context", **bare),
              "no-turn": store("no-turn", turn_weight=0.0),
              "no-subject-lexical": store("no-subject-lexical", subject_lexical_weight=0.0),
              "defaults": store("defaults")}
    if duplicate_share is not None:
        stores["restated"] = store("restated", duplicate_share=duplicate_share)
    return stores


def _locomo(path: Path, embedder: Embedder, stride: int,
            cache: Path | None) -> tuple[list[Batch], list[Ask]]:
    convs, _ = locomo.load(path)
    turn_vecs, _ = embed_cached(embedder, [t.content for c in convs for t in c.turns], cache)
    questions = [(c.sample_id, q.text) for c in convs for q in c.questions]
    q_vecs, _ = embed_cached(embedder, [text for _, text in questions], cache)
    batches: list[Batch] = []
    at = 0
    for conv in convs:
        vecs = turn_vecs[at:at + len(conv.turns)]
        at += len(conv.turns)
        batches.append((
            [RememberRequest(agent_id=conv.sample_id, type=MemoryType.EPISODIC,
                             content=t.content, id=t.dia_id,
                             metadata=locomo._metadata(conv.turns, i, True))
             for i, t in enumerate(conv.turns)],
            [RememberRequest(agent_id=conv.sample_id, type=MemoryType.EPISODIC,
                             content=t.content, id=t.dia_id,
                             metadata=locomo._metadata(conv.turns, i, False))
             for i, t in enumerate(conv.turns)],
            vecs))
    asks = [Ask(RecallRequest(agent_id=agent, query=text, k=10), q_vecs[i])
            for i, (agent, text) in enumerate(questions) if i % stride == 0]
    return batches, asks


def _longmemeval(path: Path, embedder: Embedder, limit: int | None,
                 cache: Path | None) -> tuple[list[Batch], list[Ask]]:
    questions, _ = longmemeval.load(path, limit)
    vecs, _ = embed_cached(embedder, [t.content for q in questions for t in q.turns], cache)
    q_vecs, _ = embed_cached(embedder, [q.text for q in questions], cache)
    batches: list[Batch] = []
    asks: list[Ask] = []
    at = 0
    for q, qvec in zip(questions, q_vecs, strict=True):
        mine = vecs[at:at + len(q.turns)]
        at += len(q.turns)
        plain = [RememberRequest(agent_id=q.qid, type=MemoryType.EPISODIC, content=t.content,
                                 id=f"t{i}", metadata={"session": t.session, "key": t.key,
                                                       "date": t.date})
                 for i, t in enumerate(q.turns)]
        with_context = [
            r.model_copy(update={"metadata": {**(r.metadata or {}),
                                              "context": t.reply[:longmemeval.REPLY_CHARS]}})
            if t.reply.strip() else r for r, t in zip(plain, q.turns, strict=True)]
        batches.append((with_context, plain, mine))
        asks.append(Ask(RecallRequest(agent_id=q.qid, query=q.text,
                                      k=min(len(q.turns), 1000)), qvec))
    return batches, asks


async def _time(stores: dict[str, SqliteStore], batches: Sequence[Batch], asks: Sequence[Ask],
                repeat: int) -> dict[str, Any]:
    build: dict[str, float] = dict.fromkeys(stores, 0.0)
    names = list(stores)
    for b, (with_context, plain, vecs) in enumerate(batches):
        # Each variant writes its own copy of the requests and vectors, in rotated order: a
        # second write of the same objects runs up to 2x faster than the first (measured:
        # the same plain turns to two stores, 490 vs 983 turns/s), so shared objects or a
        # fixed order would charge that to whichever variant writes first.
        own = {name: (copy.deepcopy(plain if name == "baseline" else with_context),
                      vecs.copy()) for name in names}
        for name in names[b % len(names):] + names[:b % len(names)]:
            reqs, mine = own[name]
            started = time.perf_counter()
            await stores[name].remember_many(reqs, vectors=mine)
            build[name] += time.perf_counter() - started
    turns = sum(len(plain) for _, plain, _ in batches)
    hits: dict[str, list[Any]] = {name: [] for name in names}
    for ask in asks:  # warm: the first recall of an agent loads its vectors
        for name, store in stores.items():
            resp = await store.recall_by_vector(ask.req, ask.vec)
            hits[name].append([[h.id, h.score, h.relevance, h.metadata]
                               for h in resp.results])
    load_start = machine_info()["load_avg_1m"]
    ms: dict[str, list[float]] = {name: [] for name in names}
    for rep in range(repeat):
        for i, ask in enumerate(asks):
            shift = (i + rep) % len(names)
            for name in names[shift:] + names[:shift]:
                started = time.perf_counter()
                await stores[name].recall_by_vector(ask.req, ask.vec)
                ms[name].append((time.perf_counter() - started) * 1e3)
    base = float(np.percentile(ms["baseline"], 50))
    return {
        "questions": len(asks), "repeat": repeat, "k": sorted({a.req.k for a in asks}),
        "load_avg_1m_start": load_start, "load_avg_1m_end": machine_info()["load_avg_1m"],
        "variants": {name: {
            "p50_ms": round(float(np.percentile(v, 50)), 3),
            "p95_ms": round(float(np.percentile(v, 95)), 3),
            "mean_ms": round(float(np.mean(v)), 3),
            "ratio_p50": round(float(np.percentile(v, 50)) / base, 3),
            "write_s": round(build[name], 2),
            "write_turns_per_s": round(turns / build[name], 1),
            "write_ratio": round(build["baseline"] / build[name], 3)}
            for name, v in ms.items()},
        "hits": hits,
    }


async def _bench(load: Callable[[], tuple[list[Batch], list[Ask]]], embedder: Embedder,
                 repeat: int, duplicate_share: float | None = None) -> dict[str, Any]:
    batches, asks = load()
    with tempfile.TemporaryDirectory() as tmp:
        stores = _stores(Path(tmp), embedder, duplicate_share)
        try:
            return await _time(stores, batches, asks, repeat)
        finally:
            for store in stores.values():
                await store.aclose()


async def run(locomo_path: Path | None, lme_path: Path | None, *, stride: int,
              limit: int | None,
              repeat: int, embedder: Embedder | None = None,
              cache_root: Path | None = None,
              duplicate_share: float | None = None) -> dict[str, Any]:
    """``cache_root`` holds one vector cache folder per dataset (default: the benchmarks'
    own, ``_retrieval.default_cache``, so their cached vectors are reused)."""
    started = time.perf_counter()
    machine = machine_info()
    embedder = embedder or default_embedder()

    def cache(path: Path) -> Path:
        return default_cache(path) if cache_root is None else cache_root / path.name

    benches: dict[str, Callable[[], Awaitable[dict[str, Any]]]] = {}
    if locomo_path is not None:
        benches["locomo"] = lambda: _bench(
            lambda: _locomo(locomo_path, embedder, stride, cache(locomo_path)), embedder,
            repeat, duplicate_share)
    if lme_path is not None:
        benches["longmemeval_s"] = lambda: _bench(
            lambda: _longmemeval(lme_path, embedder, limit, cache(lme_path)), embedder, repeat,
            duplicate_share)
    results: dict[str, Any] = {}
    for name, bench in benches.items():
        stderr(f"{name}: building and timing")
        results[name] = await bench()
    return {
        "benchmark": "recall_latency",
        "date": date.today().isoformat(),
        "embedder": embedder.name,
        "data": {"locomo": locomo_path.name if locomo_path else None,
                 "longmemeval": lme_path.name if lme_path else None},
        "locomo_stride": stride, "longmemeval_limit": limit,
        "variants": {"baseline": "no metadata.context, feedback_weight=0, session_weight=0, "
                                 "subject_weight=0, substance_weight=0, turn_weight=0, "
                                 "subject_lexical_weight=0 (issue 19's today)",
                     "context": "metadata.context, feedback_weight=0, session_weight=0, "
                                "subject_weight=0, substance_weight=0, turn_weight=0, "
                                "subject_lexical_weight=0",
                     "no-turn": "the defaults with turn_weight=0 (the store before turn19)",
                     "no-subject-lexical": "the defaults with subject_lexical_weight=0 "
                                           "(the store before spk19)",
                     "defaults": "metadata.context, default feedback, session evidence, "
                                 "subject boost, substance prior, turn focus and subject "
                                 "lexical list (the store now)",
                     **({"restated": f"the defaults with duplicate_share={duplicate_share}"}
                        if duplicate_share is not None else {}),
                     "all": "relevance_floor=lexical_floor=-1 (the benchmarks' 'store' row), "
                            "recall_by_vector (model not timed)"},
        "goal_ratio_p50": GOAL_RATIO,
        "results": results,
        "wall_s": round(time.perf_counter() - started, 1),
        "machine": {**machine, "load_avg_1m_end": machine_info()["load_avg_1m"]},
    }


def table(r: dict[str, Any]) -> str:
    rows: list[list[Any]] = []
    for bench, res in r["results"].items():
        for name in [n for n in (*VARIANTS, "restated") if n in res["variants"]]:
            v = res["variants"][name]
            met = None if name == "baseline" else (
                "met" if v["ratio_p50"] <= r["goal_ratio_p50"] else "not met")
            rows.append([bench, name, res["questions"], v["p50_ms"], v["p95_ms"],
                         v["ratio_p50"], met, v["write_turns_per_s"], v["write_ratio"],
                         f"{res['load_avg_1m_start']} -> {res['load_avg_1m_end']}"])
    m = r["machine"]
    return "\n".join([
        "SqliteStore recall with vectors given, floors off; interleaved, same process "
        f"(embedder {r['embedder']})",
        "",
        format_table(["benchmark", "variant", "questions", "p50 ms", "p95 ms", "x baseline",
                      f"<= {r['goal_ratio_p50']}x", "writes turns/s", "writes x baseline",
                      "load 1m"], rows),
        "",
        f"wall {r['wall_s']} s; load {m['load_avg_1m']} -> {m['load_avg_1m_end']} on "
        f"{m['cpus']} CPUs",
    ])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--locomo", type=Path, default=None, help="path to locomo10.json")
    parser.add_argument("--longmemeval", type=Path, default=None,
                        help="path to longmemeval_s_dev120.json.gz")
    parser.add_argument("--locomo-stride", type=int, default=5,
                        help="time every N-th LoCoMo question (default 5)")
    parser.add_argument("--longmemeval-limit", type=int, default=None,
                        help="time the first N LongMemEval questions (default: all)")
    parser.add_argument("--repeat", type=int, default=3, help="timed passes over the questions")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    add_out_argument(parser, "recall_latency.json")
    parser.add_argument("--hits", type=Path, default=None,
                        help="also write every variant's returned hits here (to compare "
                             "rankings and metadata before and after a change)")
    parser.add_argument("--duplicate-share", type=float, default=None,
                        help="also time 'restated': the defaults with this duplicate_share "
                             "(recall.restatement; off by default)")
    args = parser.parse_args(argv)
    if args.locomo is None and args.longmemeval is None:
        parser.error("name at least one of --locomo, --longmemeval")
    for flag, path in (("--locomo", args.locomo), ("--longmemeval", args.longmemeval)):
        if path is not None and not path.is_file():
            parser.error(f"{flag} {path}: no such file")
    for flag, n in (("--locomo-stride", args.locomo_stride),
                    ("--longmemeval-limit", args.longmemeval_limit or 1),
                    ("--repeat", args.repeat)):
        if n < 1:
            parser.error(f"{flag} must be at least 1, got {n}")
    result = anyio.run(lambda: run(args.locomo, args.longmemeval, stride=args.locomo_stride,
                                   limit=args.longmemeval_limit, repeat=args.repeat,
                                   duplicate_share=args.duplicate_share))
    hits = {bench: res.pop("hits") for bench, res in result["results"].items()}
    if args.hits is not None:
        args.hits.parent.mkdir(parents=True, exist_ok=True)
        args.hits.write_text(json.dumps(hits) + "\n", encoding="utf-8")
    return write_result(result, args.out, "recall_latency.json", as_json=args.json, table=table)


if __name__ == "__main__":
    sys.exit(main())
