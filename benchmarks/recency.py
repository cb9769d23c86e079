r"""LongMemEval S dev: does preferring recent memories help knowledge-update questions, and
what does it cost the other question types?

Every question's haystack (its user turns, one episodic memory each, ``valid_from`` = the
session's date) goes into a SqliteStore (floors off, as in longmemeval.py); recall ranks
every turn. The ranking is then re-scored by a *recency prior*: ``score * (1 + beta * r)``,
``r`` in 0..1 the turn's ``valid_from`` placed between the haystack's first and last
session. ``beta = 0`` is the store as it is. Separately, ``auto`` accepts the conflicts the
store reports on write as superseded (the ``conflicts = auto`` policy) and recalls with
``include_superseded`` (superseded turns rank after current ones).

Reported per variant: the knowledge-update share where the newest answer session's best
turn ranks above the oldest's (as benchmarks/knowledge_update.py), and session
``recall_all@5`` / ``@10`` per question type and overall (as benchmarks/longmemeval.py).

    python benchmarks/recency.py [--data PATH] [--betas 0 0.01 0.02 0.05] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
from _retrieval import default_cache, embed_cached, stderr
from knowledge_update import _ms, _newer_first
from longmemeval import Question, load, score

from memorywire.embed import default_embedder
from memorywire.store.sqlite import SqliteStore
from memorywire.store.timeline import supersede
from memorywire.wire.models import MemoryType, RecallHit, RecallRequest, RememberRequest

DATA = Path("/work/shared/datasets/longmemeval/longmemeval_s_dev120.json.gz")


def prior(hits: list[RecallHit], beta: float) -> list[RecallHit]:
    """The hits re-ordered by ``score * (1 + beta * recency)``."""
    times = [h.valid_from or 0 for h in hits]
    lo, hi = min(times, default=0), max(times, default=0)
    span = max(hi - lo, 1)
    return sorted(hits, key=lambda h: -h.score * (1 + beta * ((h.valid_from or lo) - lo) / span))


async def _rank(q: Question, vecs: Any, qvec: Any, tmp: Path, auto: bool,
                betas: list[float]) -> dict[str, list[str]]:
    store = SqliteStore(tmp / f"{q.qid}-{auto}.db", default_embedder(),
                        recall=replace(SqliteStore.DEFAULT_RECALL, relevance_floor=-1.0,
                                       lexical_floor=-1.0))
    try:
        order = sorted(range(len(q.turns)), key=lambda i: (_ms(q.turns[i].date), i))
        sessions: dict[str, list[int]] = {}
        for i in order:
            sessions.setdefault(q.turns[i].session, []).append(i)
        for idx in sessions.values():
            reqs = [RememberRequest(agent_id="a", type=MemoryType.EPISODIC, id=f"t{i}",
                                    content=q.turns[i].content, valid_from=_ms(q.turns[i].date))
                    for i in idx]
            for r in await store.remember_many(reqs, vectors=vecs[idx]):
                olds = [c.id for c in r.conflicts or []]
                if auto and olds:
                    await supersede(store, "a", r.id, olds)
        req = RecallRequest(agent_id="a", query=q.text, k=min(len(q.turns), 1000),
                            include_superseded=auto)
        hits = (await store.recall_by_vector(req, qvec)).results
    finally:
        await store.aclose()
    keys = lambda hs: [q.turns[int(h.id[1:])].key for h in hs]  # noqa: E731
    if auto:
        return {"auto": keys(hits)}
    return {f"beta={b:g}": keys(prior(hits, b)) for b in betas}


async def run(data: Path, betas: list[float]) -> dict[str, Any]:
    questions, _ = load(data)
    embedder = default_embedder()
    cache = default_cache(data)
    vecs, _ = embed_cached(embedder, [t.content for q in questions for t in q.turns], cache,
                           log=stderr)
    qvecs, _ = embed_cached(embedder, [q.text for q in questions], cache)
    ranked: dict[str, list[list[str]]] = {}
    at = 0
    with tempfile.TemporaryDirectory() as d:
        for q, qvec in zip(questions, qvecs, strict=True):
            mine = vecs[at:at + len(q.turns)]
            at += len(q.turns)
            for auto in (False, True):
                for name, keys in (await _rank(q, mine, qvec, Path(d), auto, betas)).items():
                    ranked.setdefault(name, []).append(keys)
    out: dict[str, Any] = {"data": data.name, "questions": len(questions), "variants": {}}
    for name, ranks in ranked.items():
        s = score(questions, ranks, [5, 10])
        newer = []
        for q, keys in zip(questions, ranks, strict=True):
            if q.qtype == "knowledge-update":
                sess_of = {t.key: t.session for t in q.turns}
                got = _newer_first(q, list(dict.fromkeys(sess_of[k] for k in keys)))
                if got is not None:
                    newer.append(got)
        out["variants"][name] = {
            "ku_newer_above_older": round(sum(newer) / max(len(newer), 1), 4),
            "ku_scored": len(newer),
            "session_recall_all@5": round(s["overall"]["session_recall_all@5"], 4),
            "session_recall_all@10": round(s["overall"]["session_recall_all@10"], 4),
            "by_type@5": {t: round(v["session_recall_all@5"] or 0, 4)
                          for t, v in s["by_type"].items()},
        }
    return out


def table(r: dict[str, Any]) -> str:
    types = sorted(next(iter(r["variants"].values()))["by_type@5"])
    head = f"{'variant':<11} {'KU newer>older':>14} {'R@5':>6} {'R@10':>6} " + \
        " ".join(f"{t[:12]:>12}" for t in types)
    rows = [f"LongMemEval {r['data']}: {r['questions']} questions; per type session "
            "recall_all@5", head]
    for name, v in r["variants"].items():
        rows.append(f"{name:<11} {v['ku_newer_above_older']:>14.3f} "
                    f"{v['session_recall_all@5']:>6.3f} {v['session_recall_all@10']:>6.3f} "
                    + " ".join(f"{v['by_type@5'][t]:>12.3f}" for t in types))
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--betas", type=float, nargs="+", default=[0.0, 0.01, 0.02, 0.05, 0.1])
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    result = anyio.run(run, args.data, args.betas)
    if args.out is not None:
        args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=2) if args.json else table(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
