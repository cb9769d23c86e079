r"""LongMemEval retrieval: does recall rank the sessions (and turns) that hold the answer?

Data: LongMemEval (Wu et al., ICLR 2025, MIT; download it yourself from the cleaned release,
it is never shipped with memorywire): ``longmemeval_s_dev120.json.gz`` (120 questions of the S
setting with full ~48-session haystacks) or ``longmemeval_oracle.json.gz``.

Scoring follows the official ``run_retrieval.py`` / ``eval_utils.py``:

* keys are the *user* turns of each haystack session (assistant turns are not indexed);
* abstention questions (``_abs``) are skipped;
* gold sessions are the answer sessions with at least one user turn marked ``has_answer``;
  gold turns are those user turns. Questions whose evidence sits only in assistant turns
  have no gold item; the official script would score them recall_all = 1 (an empty "all")
  and NDCG = 0, we leave them out and list them;
* Recall = ``recall_all@k`` (every gold item in the top k), NDCG = ``ndcg_any@k``.

One agent per question holds that question's haystack (its user turns as episodic memories,
metadata ``session`` (the session id, which the store's session evidence groups by), turn
number and date). Recall ranks every turn (k = number of turns), and
the session ranking is the turn ranking collapsed to each session's best turn (first
occurrence). The official turn-to-session conversion yields the same session recall; its
NDCG differs slightly because it scores repeated turns of a session, not distinct sessions.

Retrievers over the same turns and vectors: ``store`` (SqliteStore hybrid RRF, relevance and
lexical floors -1 = off), ``store-floor`` (default floors), ``vector`` (MiniLM cosine by numpy),
``bm25`` (``_retrieval.BM25``, lower-cased word tokens; the official BM25 splits on spaces).

    python benchmarks/longmemeval.py \
        --data ../shared/datasets/longmemeval/longmemeval_s_dev120.json.gz
        [--k 5 10] [--json] [--limit N] [--vector-cache PATH] [--out PATH] [--hits FILE]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime
from itertools import zip_longest
from pathlib import Path
from typing import Any, TextIO

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
    dedupe,
    default_cache,
    embed_cached,
    embedder_of,
    format_table,
    given,
    machine_info,
    mean,
    ndcg_any_at_k,
    out_name,
    recall_all_at_k,
    recall_any_at_k,
    stderr,
    stemmed_tokenize,
    store_settings,
    top_indices,
    write_hits,
    write_result,
)
from _store_variants import DESCRIPTION as STORE_DESCRIPTION
from _store_variants import StoreVariants, store_timing

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
SETTING_NAMES = ("session_weight", "substance_weight", "turn_weight", "duplicate_share",
                 "subject_lexical_weight")
RETRIEVERS = ("store", "store-floor", "store-perrow", "store-plain", "vector", "bm25",
              "bm25-stemmed")
#: ``--no-time``: False writes no session date as valid_from and sends no asked_at.
TIME_AWARE = True
#: How much of the assistant's reply a user turn carries as metadata.context (characters).
REPLY_CHARS = int(os.environ.get("MW_BENCH_REPLY_CHARS", "2000"))
TURN_EXTRA_K = 50
#: Wu et al. 2025, Table 9, on the *M* setting (not S): (Recall, NDCG) per k; round@5 Recall.
PUBLISHED: dict[str, dict[str, Any]] = {
    "BM25 (paper, M)": {"session": {5: (0.634, 0.516), 10: (0.710, 0.540)}, "turn_recall_5": 0.472},
    "Contriever (paper, M)": {"session": {5: (0.723, 0.634), 10: (0.823, 0.663)},
                              "turn_recall_5": 0.589},
    "Stella V5 1.5B (paper, M)": {"session": {5: (0.720, 0.594), 10: (0.794, 0.615)},
                                  "turn_recall_5": 0.660},
}


@dataclass
class Turn:
    key: str  # official id: "<session_id>_<1-based turn index in the session>"
    session: str
    content: str
    date: str
    #: The assistant turn that answers this user turn ("" when none follows).
    reply: str = ""


@dataclass
class Question:
    qid: str
    qtype: str
    text: str
    turns: list[Turn]
    gold_sessions: set[str]
    gold_turns: set[str]
    #: ``question_date``: when the question is asked (the reference of "last Saturday").
    date: str = ""


def _open(path: Path) -> TextIO:
    if path.suffix == ".gz":
        return gzip.open(path, "rt", encoding="utf-8")
    return path.open(encoding="utf-8")


def parse(entry: dict[str, Any]) -> Question:
    turns: list[Turn] = []
    gold_sessions: set[str] = set()
    gold_turns: set[str] = set()
    answers = set(entry["answer_session_ids"])
    for sid, session, when in zip(entry["haystack_session_ids"], entry["haystack_sessions"],
                                  entry["haystack_dates"], strict=True):
        for i, turn in enumerate(session):
            if turn["role"] != "user" or not turn["content"].strip():
                continue
            key = f"{sid}_{i + 1}"
            after = session[i + 1] if i + 1 < len(session) else None
            reply = after["content"] if after and after["role"] == "assistant" else ""
            turns.append(Turn(key, sid, turn["content"], when, reply))
            if sid in answers and turn.get("has_answer"):
                gold_sessions.add(sid)
                gold_turns.add(key)
    return Question(entry["question_id"], entry["question_type"], entry["question"], turns,
                    gold_sessions, gold_turns, entry.get("question_date", ""))


def date_ms(text: str) -> int | None:
    """LongMemEval's ``"2023/05/20 (Sat) 00:29"`` as epoch ms (UTC; the data has no zone)."""
    try:
        day, _, clock = text.split(" ")
        when = datetime.strptime(f"{day} {clock}", "%Y/%m/%d %H:%M")
    except ValueError:
        return None
    return int(when.replace(tzinfo=UTC).timestamp() * 1000)


def _round_robin(entries: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """Interleave question types, so ``--limit`` keeps the type mix of the full set."""
    by_type: dict[str, list[dict[str, Any]]] = {}
    for e in entries:
        by_type.setdefault(e["question_type"], []).append(e)
    for group in zip_longest(*by_type.values()):
        yield from (e for e in group if e is not None)


def load(path: Path, limit: int | None = None) -> tuple[list[Question], dict[str, Any]]:
    with _open(path) as fh:
        data = json.load(fh)
    picked = [e for e in _round_robin(data) if not e["question_id"].endswith("_abs")]
    questions = [parse(e) for e in picked[:limit]]
    no_gold = [{"question_id": q.qid, "question_type": q.qtype} for q in questions
               if not q.gold_sessions]
    return ([q for q in questions if q.gold_sessions],
            {"total": len(data), "abstention": sum(e["question_id"].endswith("_abs") for e in data),
             "no_gold_in_user_turns": no_gold})


async def _rank_all(questions: list[Question], vecs: npt.NDArray[np.float32],
                    q_vecs: npt.NDArray[np.float32], embedder: Embedder,
                    tmp: Path, context: bool = True, hits: dict[str, Any] | None = None,
                    ) -> tuple[dict[str, list[list[str]]], dict[str, Any]]:
    """Turn rankings (official keys, best first) per retriever, one list per question; with
    ``hits``, those and the store rows' returned hits go into it too."""
    variants = StoreVariants(tmp, embedder, lexical_weight=LEXICAL_WEIGHT,
                             feedback_weight=FEEDBACK_WEIGHT, **given(SETTINGS))
    ranks: dict[str, list[list[str]]] = {name: [] for name in RETRIEVERS}
    try:
        at = 0
        for q, qvec in zip(questions, q_vecs, strict=True):
            mine = vecs[at:at + len(q.turns)]
            at += len(q.turns)
            # Positional ids: a haystack may hold the same session twice.
            plain = [RememberRequest(agent_id=q.qid, type=MemoryType.EPISODIC, content=t.content,
                                     id=f"t{i}", metadata={"session": t.session,
                                                           "key": t.key, "date": t.date},
                                     valid_from=date_ms(t.date) if TIME_AWARE else None)
                     for i, t in enumerate(q.turns)]
            reqs = [r.model_copy(update={"metadata": {**(r.metadata or {}),
                                                      "context": t.reply[:REPLY_CHARS]}})
                    if context and t.reply.strip() else r
                    for r, t in zip(plain, q.turns, strict=True)]
            await variants.remember(reqs, plain, mine)
            depth = min(len(q.turns), 1000)
            req = RecallRequest(agent_id=q.qid, query=q.text, k=depth,
                                asked_at=date_ms(q.date) if TIME_AWARE else None)
            for name, hit_ids in (await variants.recall(req, qvec)).items():
                ranks[name].append([q.turns[int(i[1:])].key for i in hit_ids])
            ranks["vector"].append([q.turns[i].key for i in top_indices(mine @ qvec, depth)])
            ranks["bm25"].append([q.turns[i].key
                                  for i in BM25([t.content for t in q.turns]).top(q.text, depth)])
            stemmed = BM25([t.content for t in q.turns], analyzer=stemmed_tokenize)
            ranks["bm25-stemmed"].append([q.turns[i].key for i in stemmed.top(q.text, depth)])
    finally:
        await variants.aclose()
    if hits is not None:
        hits.update(ranks=ranks, store_hits=variants.returned)
    return ranks, variants.timing


def _session_of(q: Question) -> dict[str, str]:
    return {t.key: t.session for t in q.turns}


def score(questions: list[Question], ranked: list[list[str]], ks: list[int]) -> dict[str, Any]:
    turn_ks = sorted({*ks, TURN_EXTRA_K})
    per_q: list[dict[str, float]] = []
    for q, turns in zip(questions, ranked, strict=True):
        sess_of = _session_of(q)
        sessions = dedupe(sess_of[key] for key in turns)
        m: dict[str, float] = {}
        for k in ks:
            m[f"session_recall_all@{k}"] = recall_all_at_k(sessions, q.gold_sessions, k)
            m[f"session_recall_any@{k}"] = recall_any_at_k(sessions, q.gold_sessions, k)
            m[f"session_ndcg_any@{k}"] = ndcg_any_at_k(sessions, q.gold_sessions, k)
        for k in turn_ks:
            m[f"turn_recall_all@{k}"] = recall_all_at_k(turns, q.gold_turns, k)
            m[f"turn_ndcg_any@{k}"] = ndcg_any_at_k(turns, q.gold_turns, k)
        per_q.append(m)
    names = list(per_q[0]) if per_q else []
    overall = {n: mean([m[n] for m in per_q]) for n in names}
    ci95 = {n: bootstrap_ci([m[n] for m in per_q]) for n in names if "recall_all" in n}
    by_type: dict[str, dict[str, float | None]] = {}
    for qtype in sorted({q.qtype for q in questions}):
        rows = [m for q, m in zip(questions, per_q, strict=True) if q.qtype == qtype]
        by_type[qtype] = {f"{level}_recall_all@{k}": mean([m[f"{level}_recall_all@{k}"]
                                                           for m in rows])
                          for level in ("session", "turn") for k in ks}
    return {"overall": overall, "overall_ci95": ci95, "by_type": by_type}


async def run(data: Path, ks: list[int], limit: int | None,
              vector_cache: Path | None, embedder: Embedder | None = None,
              context: bool = True, hits: dict[str, Any] | None = None) -> dict[str, Any]:
    """The benchmark's result; with ``hits`` (a dict), every ranking goes into it too."""
    started_all = time.perf_counter()
    machine = machine_info()
    questions, notes = load(data, limit)
    embedder = embedder or default_embedder()
    texts = [t.content for q in questions for t in q.turns]
    stderr(f"{len(questions)} questions, {len(texts)} user turns "
           f"({len(set(texts))} distinct texts)")
    vecs, tstats = embed_cached(embedder, texts, vector_cache, log=stderr)
    q_vecs, qstats = embed_cached(embedder, [q.text for q in questions], vector_cache)
    captured: dict[str, Any] = {} if hits is None else hits
    with tempfile.TemporaryDirectory() as tmp:
        ranks, timing = await _rank_all(questions, vecs, q_vecs, embedder, Path(tmp), context,
                                        captured)
    floor_hits = [[(q.turns[int(mid[1:])].key, s, r) for mid, s, r in rows]
                  for q, rows in zip(questions, captured["store_hits"]["store-floor"],
                                     strict=True)]
    results = {name: score(questions, ranks[name], ks) for name in RETRIEVERS}
    return {
        "benchmark": "longmemeval",
        "date": date.today().isoformat(),
        "data": data.name,
        "limit": limit,
        "embedder": embedder.name,
        "lexical_weight": LEXICAL_WEIGHT,
        "feedback_weight": FEEDBACK_WEIGHT,
        **SETTINGS,
        "time": "session dates as valid_from, question_date as asked_at" if TIME_AWARE
                else "none (--no-time)",
        "context": f"the assistant reply (first {REPLY_CHARS} characters) as metadata.context"
                   if context else "none (--no-context)",
        "store": STORE_DESCRIPTION,
        "questions_in_file": notes["total"],
        "abstention_in_file": notes["abstention"],
        "questions_scored": len(questions),
        "no_gold_in_user_turns": notes["no_gold_in_user_turns"],
        "questions_by_type": {t: sum(q.qtype == t for q in questions)
                              for t in sorted({q.qtype for q in questions})},
        "user_turns": len(texts),
        "ks": ks,
        "session_ranking": "turn ranking collapsed to each session's best turn",
        "results": results,
        # the defaults' relevance, judged against the gold turns (first 5 hits)
        "calibration": {"store-floor": calibration(floor_hits,
                                                   [q.gold_turns for q in questions])},
        "published": {name: {"session": {f"k{k}": {"recall_all": r, "ndcg_any": n}
                                         for k, (r, n) in vals["session"].items()},
                             "turn_recall_all@5": vals["turn_recall_5"]}
                      for name, vals in PUBLISHED.items()},
        "timing": {
            "wall_s": round(time.perf_counter() - started_all, 1),
            "texts_embedded": tstats.embedded,
            "embed_turns_s": round(tstats.seconds, 1),
            "embed_per_s": round(tstats.per_s, 1),
            "embed_queries_s": round(qstats.seconds, 1),
            **store_timing(timing, len(texts), tstats.seconds, tstats.embedded),
        },
        "machine": {**machine, "load_avg_1m_end": machine_info()["load_avg_1m"]},
    }


def table(r: dict[str, Any]) -> str:
    ks = r["ks"]
    turn_ks = sorted({*ks, TURN_EXTRA_K})
    headers = ["retriever",
               *(f"S R@{k}" for k in ks), *(f"S NDCG@{k}" for k in ks),
               *(f"T R@{k}" for k in turn_ks), *(f"T NDCG@{k}" for k in turn_ks)]
    rows: list[list[Any]] = []
    for name in RETRIEVERS:
        o = r["results"][name]["overall"]
        rows.append([name, *(o[f"session_recall_all@{k}"] for k in ks),
                     *(o[f"session_ndcg_any@{k}"] for k in ks),
                     *(o[f"turn_recall_all@{k}"] for k in turn_ks),
                     *(o[f"turn_ndcg_any@{k}"] for k in turn_ks)])
    for name, p in r["published"].items():
        sess = p["session"]
        rows.append([name, *(sess.get(f"k{k}", {}).get("recall_all") for k in ks),
                     *(sess.get(f"k{k}", {}).get("ndcg_any") for k in ks),
                     *(p["turn_recall_all@5"] if k == 5 else None for k in turn_ks),
                     *(None for _ in turn_ks)])
    types = list(r["questions_by_type"])
    type_rows = [[name, *(r["results"][name]["by_type"][t][f"session_recall_all@{ks[0]}"]
                          for t in types)] for name in RETRIEVERS]
    t = r["timing"]
    return "\n".join([
        f"LongMemEval ({r['data']}{', limit ' + str(r['limit']) if r['limit'] else ''}): "
        f"{r['questions_scored']} questions scored, {r['user_turns']} user turns; "
        f"{len(r['no_gold_in_user_turns'])} without a gold user turn left out; "
        f"embedder {r['embedder']}",
        "S = session level (recall_all / ndcg_any), T = turn level; published rows are on the "
        "M setting",
        "",
        format_table(headers, rows),
        "",
        f"session recall_all@{ks[0]} by question type",
        format_table(["retriever", *types], type_rows),
        "",
        f"wall {t['wall_s']} s; embedded {t['texts_embedded']} texts in {t['embed_turns_s']} s "
        f"({t['embed_per_s']}/s); store write {t['store_write_per_s']} turns/s; ingest with "
        f"embedding {t['ingest_per_s_with_embedding']} turns/s; store recall p50 "
        f"{t['store_recall_p50_ms']} ms; load {r['machine']['load_avg_1m']} -> "
        f"{r['machine']['load_avg_1m_end']} on {r['machine']['cpus']} CPUs",
    ])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--data", type=Path, required=True,
                        help="longmemeval_s_dev120.json.gz or longmemeval_oracle.json.gz")
    parser.add_argument("--k", type=int, nargs="+", default=[5, 10])
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--limit", type=int, default=None,
                        help="first N non-abstention questions, question types interleaved")
    add_vector_cache_argument(parser)
    add_out_argument(parser, "<data stem>[-limitN].json")
    parser.add_argument("--no-context", action="store_true",
                        help="write user turns without the assistant's reply as "
                             "metadata.context (store-plain always has none)")
    add_ablation_arguments(parser)
    add_embedder_argument(parser)
    parser.add_argument("--no-time", action="store_true",
                        help="write no session date as valid_from and send no asked_at "
                             "(time-aware ranking off; ablation)")
    add_hits_argument(parser)
    args = parser.parse_args(argv)
    global LEXICAL_WEIGHT, FEEDBACK_WEIGHT, SETTINGS, TIME_AWARE
    TIME_AWARE = not args.no_time
    LEXICAL_WEIGHT = args.lexical_weight
    FEEDBACK_WEIGHT = args.feedback_weight
    SETTINGS = store_settings(args, SETTING_NAMES)
    if not args.data.is_file():
        parser.error(f"--data {args.data}: no such file")
    embedder = embedder_of(parser, args.embedder)
    hits: dict[str, Any] = {}
    result = anyio.run(run, args.data, sorted(set(args.k)), args.limit,
                       args.vector_cache or default_cache(args.data), embedder,
                       not args.no_context, hits)
    write_hits(args.hits, hits)
    stem = args.data.name.removesuffix(".gz").removesuffix(".json")
    if not stem.startswith("longmemeval"):
        stem = f"longmemeval_{stem}"
    suffix = f"-limit{args.limit}" if args.limit else ""
    return write_result(result, args.out, out_name(f"{stem}{suffix}.json", embedder),
                        as_json=args.json, table=table)


if __name__ == "__main__":
    sys.exit(main())
