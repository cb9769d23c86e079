r"""LongMemEval knowledge-update: does the session with the newest value outrank the old one?

For each knowledge-update question of the dev split (two answer sessions: an old value and a
newer one), every user turn of the haystack is an episodic memory in SQLite, written session
by session in date order with the session's date as ``valid_from``. Measured: the share of
questions where the newer answer session's best turn ranks above the older one's.

* ``before``: plain recall over every turn (no supersession; the behaviour before issue 17);
* ``after``: each session's turns are remembered in one batch; the ``conflicts`` the store
  reports are accepted as superseded (auto-supersede policy), and recall runs with
  ``include_superseded`` so a superseded turn still ranks, after every current one.

    python benchmarks/knowledge_update.py \
        [--data ../shared/datasets/longmemeval/longmemeval_s_dev120.json.gz] [--json]
        [--vector-cache PATH]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
from _retrieval import embed_cached, stderr
from longmemeval import Question, load

from memorywire.embed import default_embedder
from memorywire.store.sqlite import SqliteStore
from memorywire.store.timeline import supersede
from memorywire.wire.models import MemoryType, RecallRequest, RememberRequest

DATA = Path("/work/shared/datasets/longmemeval/" \
    "longmemeval_s_dev120.json.gz")


def _ms(date: str) -> int:
    """LongMemEval dates look like ``2023/05/20 (Sat) 02:21``."""
    day, _, hm = date.partition(" (")
    clock = hm.split(") ")[-1] if ") " in hm else "00:00"
    return int(datetime.strptime(f"{day} {clock}", "%Y/%m/%d %H:%M")
               .replace(tzinfo=UTC).timestamp() * 1000)


def _newer_first(q: Question, ranked_sessions: list[str]) -> bool | None:
    dates = {t.session: _ms(t.date) for t in q.turns}
    gold = sorted(q.gold_sessions, key=lambda s: dates[s])
    if len(gold) < 2:
        return None
    old, new = gold[0], gold[-1]
    pos = {s: i for i, s in reversed(list(enumerate(ranked_sessions)))}
    return pos.get(new, 10**9) < pos.get(old, 10**9)


_ACCEPTED: list[int] = []


async def _one(q: Question, vecs: Any, qvec: Any, tmp: Path, after: bool) -> bool | None:
    store = SqliteStore(tmp / f"{q.qid}-{after}.db", default_embedder(),
                        recall=replace(SqliteStore.DEFAULT_RECALL, relevance_floor=-1.0,
                                       lexical_floor=-1.0))
    try:
        order = sorted(range(len(q.turns)), key=lambda i: (_ms(q.turns[i].date), i))
        sessions: dict[str, list[int]] = {}
        for i in order:
            sessions.setdefault(q.turns[i].session, []).append(i)
        for idx in sessions.values():
            reqs = [RememberRequest(
                agent_id="a", type=MemoryType.EPISODIC, content=q.turns[i].content, id=f"t{i}",
                valid_from=_ms(q.turns[i].date) if after else None) for i in idx]
            resps = await store.remember_many(reqs, vectors=vecs[idx])
            if after:
                for r in resps:
                    olds = [c.id for c in r.conflicts or []]
                    if olds:
                        await supersede(store, "a", r.id, olds)
                        _ACCEPTED.append(len(olds))
        req = RecallRequest(agent_id="a", query=q.text, k=min(len(q.turns), 1000),
                            include_superseded=after)
        hits = (await store.recall_by_vector(req, qvec)).results
        ranked = list(dict.fromkeys(q.turns[int(h.id[1:])].session for h in hits))
        return _newer_first(q, ranked)
    finally:
        await store.aclose()


async def run(data: Path, cache: Path | None) -> dict[str, Any]:
    questions, _ = load(data)
    ku = [q for q in questions if q.qtype == "knowledge-update"]
    embedder = default_embedder()
    texts = [t.content for q in ku for t in q.turns]
    vecs, _ = embed_cached(embedder, texts, cache, log=stderr)
    qvecs, _ = embed_cached(embedder, [q.text for q in ku], cache)
    out: dict[str, list[bool]] = {"before": [], "after": []}
    at = 0
    with tempfile.TemporaryDirectory() as d:
        for q, qvec in zip(ku, qvecs, strict=True):
            mine = vecs[at:at + len(q.turns)]
            at += len(q.turns)
            for mode in ("before", "after"):
                got = await _one(q, mine, qvec, Path(d), mode == "after")
                if got is not None:
                    out[mode].append(got)
    return {"questions": len(ku), "scored": len(out["before"]),
            "turns": len(texts), "turns_superseded_after": sum(_ACCEPTED),
            **{f"newer_above_older_{m}": round(sum(v) / max(len(v), 1), 4)
               for m, v in out.items()}}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--vector-cache", type=Path, default=None, help="an .npz to reuse vectors")
    args = ap.parse_args(argv)
    result = anyio.run(run, args.data, args.vector_cache)
    print(json.dumps(result, indent=2) if args.json else
          "\n".join(f"{k}: {v}" for k, v in result.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
