"""LoCoMo retrieval: does recall find the dialogue turns that hold a question's evidence?

Data: ``locomo10.json`` from snap-research/LoCoMo (CC BY-NC 4.0; download it yourself, it is
never shipped with memorywire). Every turn of a conversation becomes one episodic memory
(content ``"speaker: text"``, metadata ``dia_id``, session number and date) of one agent per
conversation, written with ``SqliteStore.remember_many``. For every question the top k turns
are compared with its evidence ``dia_id`` list; the score is the fraction of evidence turns
retrieved (turns as units, as in the paper's Table 3), averaged per category.

Retrievers, all over exactly the same turns and the same MiniLM vectors:

* ``store``: ``SqliteStore`` recall (vector k-NN + FTS5 BM25 fused by RRF) with the relevance
  floor off (``relevance_floor=lexical_floor=-1``): a benchmark of ranking must not let the
  "nothing relevant" gate hide rows;
* ``store-floor``: the same store with its default floors, i.e. what a caller gets out of the
  box (fewer than k rows when the floor refuses some);
* ``vector``: MiniLM cosine by numpy, no fusion;
* ``bm25``: the Okapi BM25 of ``_retrieval.py``, no vectors.

Vectors are computed once (``embed_cached``) and handed to ``remember_many(vectors=...)`` and
``recall_by_vector``; the store would compute the same vectors itself, this only avoids
paying the model twice. Evidence ids are normalised (``"D8:6; D9:17"`` is two ids,
``"D:11:26"`` is ``D11:26``, ``"D30:05"`` is ``D30:5``); ids that name no turn are dropped and
questions left without evidence are skipped; every change is listed in the output.

    python benchmarks/locomo.py --data ../shared/datasets/locomo/locomo10.json [--k 5 10]
        [--json] [--limit-conversations N] [--vector-cache PATH] [--out PATH] [--hits FILE]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import numpy.typing as npt
from _retrieval import (
    BM25,
    add_ablation_arguments,
    add_embedder_argument,
    add_hits_argument,
    add_out_argument,
    add_vector_cache_argument,
    bootstrap_ci,
    calibration,
    default_cache,
    embed_cached,
    embedder_of,
    format_table,
    given,
    machine_info,
    mean,
    out_name,
    percentile,
    recall_at_k,
    stderr,
    stemmed_tokenize,
    store_settings,
    top_indices,
    write_hits,
    write_result,
)
from _store_variants import DESCRIPTION as STORE_DESCRIPTION
from _store_variants import StoreVariants, store_timing

from memorywire.core.context_key import MAX_CONTEXT_CHARS
from memorywire.embed import default_embedder
from memorywire.embed.base import Embedder
from memorywire.wire.models import MemoryType, RecallRequest, RememberRequest

HERE = Path(__file__).resolve().parent
#: ``--lexical-weight``: SqliteStore's RRF weight of the full-text list in every store row.
LEXICAL_WEIGHT = 1.0
#: ``--feedback-weight``: SqliteStore's pseudo-relevance feedback weight (None: its default).
FEEDBACK_WEIGHT: float | None = None
#: ``--session-weight``, ``--substance-weight``, ... : the re-ranking settings every store row
#: gets, as the flags gave them (None: the store's default).
SETTINGS: dict[str, float | None] = {}
SETTING_NAMES = ("session_weight", "subject_weight", "substance_weight", "turn_weight",
                 "duplicate_share", "subject_lexical_weight")
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
RETRIEVERS = ("store", "store-floor", "store-perrow", "store-plain", "vector", "bm25",
              "bm25-stemmed")
#: Maharana et al. 2024, Table 3: DRAGON retriever, dialogue turns as units.
PUBLISHED = {"DRAGON (paper, turns)": {5: 0.567, 10: 0.662},
             "DRAGON (paper, session summaries)": {5: 0.721, 10: 0.847}}
_ID = re.compile(r"D:?(\d+):(\d+)")


@dataclass
class Turn:
    dia_id: str
    speaker: str
    text: str
    session: int
    date: str

    @property
    def content(self) -> str:
        return f"{self.speaker}: {self.text}"


@dataclass
class Question:
    text: str
    category: int
    evidence: list[str]


@dataclass
class Conversation:
    sample_id: str
    turns: list[Turn]
    questions: list[Question] = field(default_factory=list)


def normalise_evidence(raw: list[str], known: set[str]) -> tuple[list[str], list[str]]:
    """Split joined ids, repair ``D:11:26`` and zero-padded turns; return (kept, dropped)."""
    kept: list[str] = []
    dropped: list[str] = []
    for entry in raw:
        for part in re.split(r"[;,\s]+", entry.strip()):
            if not part:
                continue
            m = _ID.fullmatch(part)
            norm = f"D{int(m.group(1))}:{int(m.group(2))}" if m else part
            if norm in known:
                if norm not in kept:
                    kept.append(norm)
            else:
                dropped.append(part)
    return kept, dropped


def load(path: Path, limit: int | None = None) -> tuple[list[Conversation], dict[str, Any]]:
    with path.open(encoding="utf-8") as fh:
        data = json.load(fh)
    convs: list[Conversation] = []
    skipped: list[dict[str, Any]] = []
    normalised: list[dict[str, Any]] = []
    for sample in data[:limit]:
        conv = sample["conversation"]
        sessions = sorted(int(k.split("_")[1]) for k, v in conv.items()
                          if re.fullmatch(r"session_\d+", k) and isinstance(v, list))
        turns = [Turn(t["dia_id"], t["speaker"], t["text"], n,
                      conv.get(f"session_{n}_date_time", ""))
                 for n in sessions for t in conv[f"session_{n}"]]
        known = {t.dia_id for t in turns}
        out = Conversation(sample["sample_id"], turns)
        for qa in sample["qa"]:
            raw = list(qa.get("evidence") or [])
            kept, dropped = normalise_evidence(raw, known)
            where = {"conversation": out.sample_id, "question": qa["question"],
                     "category": qa["category"], "evidence": raw}
            if not kept:
                skipped.append({**where, "reason": "empty evidence" if not raw
                                else "no evidence id names a turn"})
                continue
            if kept != raw:
                normalised.append({**where, "used": kept, "dropped": dropped})
            out.questions.append(Question(qa["question"], int(qa["category"]), kept))
        convs.append(out)
    return convs, {"skipped": skipped, "normalised": normalised}


def _metadata(turns: list[Turn], i: int, context: bool) -> dict[str, Any]:
    """A turn's metadata; with ``context``, the previous and next turn of its session as
    ``metadata.context`` (the store's context key, ``memorywire.core.context_key``)."""
    t = turns[i]
    out: dict[str, Any] = {"dia_id": t.dia_id, "session": t.session, "date": t.date,
                           "speaker": t.speaker}
    if context:
        near = [turns[j].content for j in (i - 1, i + 1)
                if 0 <= j < len(turns) and turns[j].session == t.session]
        if near:
            out["context"] = "\n".join(near)[:MAX_CONTEXT_CHARS]
    return out


async def _rank_all(convs: list[Conversation], turn_vecs: npt.NDArray[np.float32],
                    q_vecs: npt.NDArray[np.float32], embedder: Embedder, depth: int,
                    tmp: Path, context: bool = True, hits: dict[str, Any] | None = None,
                    ) -> tuple[dict[str, list[list[str]]], dict[str, Any]]:
    variants = StoreVariants(tmp, embedder, lexical_weight=LEXICAL_WEIGHT,
                             feedback_weight=FEEDBACK_WEIGHT, **given(SETTINGS))
    ranks: dict[str, list[list[str]]] = {name: [] for name in RETRIEVERS}
    timing = variants.timing
    timing["bm25_ms"] = []
    try:
        t_at = q_at = 0
        for conv in convs:
            vecs = turn_vecs[t_at:t_at + len(conv.turns)]
            t_at += len(conv.turns)
            reqs = [RememberRequest(agent_id=conv.sample_id, type=MemoryType.EPISODIC,
                                    content=t.content, id=t.dia_id,
                                    metadata=_metadata(conv.turns, i, context))
                    for i, t in enumerate(conv.turns)]
            plain = [RememberRequest(agent_id=r.agent_id, type=r.type, content=r.content,
                                     id=r.id, metadata=_metadata(conv.turns, i, False))
                     for i, r in enumerate(reqs)]
            await variants.remember(reqs, plain, vecs)
            bm25 = BM25([t.content for t in conv.turns])
            bm25s = BM25([t.content for t in conv.turns], analyzer=stemmed_tokenize)
            ids = [t.dia_id for t in conv.turns]
            for q in conv.questions:
                qvec = q_vecs[q_at]
                q_at += 1
                req = RecallRequest(agent_id=conv.sample_id, query=q.text, k=depth)
                for name, hit_ids in (await variants.recall(req, qvec)).items():
                    ranks[name].append(hit_ids)
                ranks["vector"].append([ids[i] for i in top_indices(vecs @ qvec, depth)])
                started = time.perf_counter()
                ranks["bm25"].append([ids[i] for i in bm25.top(q.text, depth)])
                timing["bm25_ms"].append((time.perf_counter() - started) * 1e3)
                ranks["bm25-stemmed"].append([ids[i] for i in bm25s.top(q.text, depth)])
    finally:
        await variants.aclose()
    if hits is not None:
        hits.update(ranks=ranks, store_hits=variants.returned)
    return ranks, timing


def score(questions: list[Question], ranked: list[list[str]], k: int) -> dict[str, Any]:
    by_cat: dict[int, list[float]] = {c: [] for c in CATEGORIES}
    for q, r in zip(questions, ranked, strict=True):
        by_cat.setdefault(q.category, []).append(recall_at_k(r, q.evidence, k))
    core = [v for c, vals in by_cat.items() if c != 5 for v in vals]
    return {"overall_1_4": mean(core),
            "overall_1_4_ci95": bootstrap_ci(core),
            "all_1_5": mean([v for vals in by_cat.values() for v in vals]),
            "by_category": {str(c): mean(v) for c, v in sorted(by_cat.items())},
            "by_category_ci95": {str(c): bootstrap_ci(v) for c, v in sorted(by_cat.items())}}


async def run(data: Path, ks: list[int], limit: int | None,
              vector_cache: Path | None, embedder: Embedder | None = None,
              context: bool = True, hits: dict[str, Any] | None = None) -> dict[str, Any]:
    """The benchmark's result; with ``hits`` (a dict), every ranking goes into it too."""
    started_all = time.perf_counter()
    machine = machine_info()
    convs, notes = load(data, limit)
    questions = [q for c in convs for q in c.questions]
    embedder = embedder or default_embedder()
    stderr(f"{len(convs)} conversations, {sum(len(c.turns) for c in convs)} turns, "
           f"{len(questions)} questions")
    turn_vecs, tstats = embed_cached(embedder, [t.content for c in convs for t in c.turns],
                                     vector_cache, log=stderr)
    q_vecs, qstats = embed_cached(embedder, [q.text for q in questions], vector_cache)
    captured: dict[str, Any] = {} if hits is None else hits
    with tempfile.TemporaryDirectory() as tmp:
        ranks, timing = await _rank_all(convs, turn_vecs, q_vecs, embedder, max(ks), Path(tmp),
                                        context, captured)
    n_turns = len(turn_vecs)
    results = {name: {f"k{k}": score(questions, ranks[name], k) for k in ks}
               for name in RETRIEVERS}
    return {
        "benchmark": "locomo",
        "date": date.today().isoformat(),
        "data": data.name,
        "embedder": embedder.name,
        "store": STORE_DESCRIPTION,
        "lexical_weight": LEXICAL_WEIGHT,
        "feedback_weight": FEEDBACK_WEIGHT,
        **SETTINGS,
        "context": "previous and next turn of the session as metadata.context" if context
                   else "none (--no-context)",
        "conversations": len(convs),
        "turns": n_turns,
        "questions_scored": len(questions),
        "questions_by_category": {str(c): sum(q.category == c for q in questions)
                                  for c in CATEGORIES},
        "skipped": notes["skipped"],
        "normalised": notes["normalised"],
        "ks": ks,
        "results": results,
        # the defaults' relevance, judged against the evidence turns (first 5 hits)
        "calibration": {"store-floor": calibration(captured["store_hits"]["store-floor"],
                                                   [set(q.evidence) for q in questions])},
        "published": {name: {f"k{k}": v for k, v in vals.items()}
                      for name, vals in PUBLISHED.items()},
        "timing": {
            "wall_s": round(time.perf_counter() - started_all, 1),
            "embed_turns_s": round(tstats.seconds, 1),
            "turns_embedded": tstats.embedded,
            "embed_per_s": round(tstats.per_s, 1),
            "embed_queries_s": round(qstats.seconds, 1),
            **store_timing(timing, n_turns, tstats.seconds, tstats.embedded, recall_p95=True),
            "bm25_query_p50_ms": percentile(timing["bm25_ms"], 50),
        },
        "machine": {**machine, "load_avg_1m_end": machine_info()["load_avg_1m"]},
    }


def table(r: dict[str, Any]) -> str:
    cats = [str(c) for c in CATEGORIES if c != 5]
    headers = ["retriever", "k", *(f"{c} {CATEGORIES[int(c)]}" for c in cats), "overall 1-4",
               "5 adversarial", "all 1-5"]
    rows: list[list[Any]] = []
    for k in r["ks"]:
        for name in RETRIEVERS:
            s = r["results"][name][f"k{k}"]
            rows.append([name, k, *(s["by_category"][c] for c in cats), s["overall_1_4"],
                         s["by_category"]["5"], s["all_1_5"]])
        for name, vals in r["published"].items():
            if f"k{k}" in vals:
                rows.append([name, k, *([None] * len(cats)), vals[f"k{k}"], None, None])
    t = r["timing"]
    lines = [
        f"LoCoMo ({r['data']}): {r['conversations']} conversations, {r['turns']} turns, "
        f"{r['questions_scored']} questions scored, {len(r['skipped'])} skipped, "
        f"{len(r['normalised'])} evidence lists normalised; embedder {r['embedder']}",
        "score = fraction of evidence turns in the top k",
        "",
        format_table(headers, rows),
        "",
        f"wall {t['wall_s']} s; embedded {t['turns_embedded']} turns in {t['embed_turns_s']} s "
        f"({t['embed_per_s']}/s); store write {t['store_write_per_s']} turns/s; ingest with "
        f"embedding {t['ingest_per_s_with_embedding']} turns/s; store recall p50 "
        f"{t['store_recall_p50_ms']} ms; load {r['machine']['load_avg_1m']} -> "
        f"{r['machine']['load_avg_1m_end']} on {r['machine']['cpus']} CPUs",
    ]
    lines += [f"skipped: {s['conversation']} {s['evidence']} ({s['reason']}): {s['question']}"
              for s in r["skipped"]]
    lines += [f"normalised: {n['conversation']} {n['evidence']} -> {n['used']}"
              + (f" (dropped {n['dropped']})" if n["dropped"] else "") for n in r["normalised"]]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--data", type=Path, required=True, help="path to locomo10.json")
    parser.add_argument("--k", type=int, nargs="+", default=[5, 10])
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--limit-conversations", type=int, default=None)
    add_vector_cache_argument(parser)
    add_out_argument(parser, "locomo[-limitN].json")
    parser.add_argument("--no-context", action="store_true",
                        help="write turns without metadata.context (store-plain always has none)")
    add_ablation_arguments(parser)
    add_embedder_argument(parser)
    parser.add_argument("--subject-weight", type=float, default=None,
                        help="SqliteStore subject_weight for every store row (ablation; 0 = no "
                             "speaker/subject boost; default: the store's)")
    add_hits_argument(parser)
    args = parser.parse_args(argv)
    global LEXICAL_WEIGHT, FEEDBACK_WEIGHT, SETTINGS
    LEXICAL_WEIGHT = args.lexical_weight
    FEEDBACK_WEIGHT = args.feedback_weight
    SETTINGS = store_settings(args, SETTING_NAMES)
    if not args.data.is_file():
        parser.error(f"--data {args.data}: no such file")
    embedder = embedder_of(parser, args.embedder)
    hits: dict[str, Any] = {}
    result = anyio.run(run, args.data, sorted(set(args.k)), args.limit_conversations,
                       args.vector_cache or default_cache(args.data), embedder,
                       not args.no_context, hits)
    write_hits(args.hits, hits)
    suffix = f"-limit{args.limit_conversations}" if args.limit_conversations else ""
    return write_result(result, args.out, out_name(f"locomo{suffix}.json", embedder),
                        as_json=args.json, table=table)


if __name__ == "__main__":
    sys.exit(main())
