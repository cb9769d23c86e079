"""What the entity gate costs a recall, and what it changes, on LoCoMo (issue 19).

Almost every LoCoMo question names a speaker ("When did Caroline ..."), so every default
recall there runs the rule. Two SqliteStores with the defaults hold the same turns (with the
same context keys and cached MiniLM vectors as ``locomo.py``), one with ``entity_gate=False``;
each question is recalled from both with the vector given (``recall_by_vector``), the side
that goes first alternating, so load swings hit both alike. Reported: recall p50/p95 of each
side and their ratio, how many recalls embedded the masked question, and how many lists the
gate emptied (LoCoMo's questions all have an answer, so each of those is a loss) and, of
those, how many held an evidence turn in the ungated top k (a lost answer, not only a lost
list); the emptied questions are listed.

    python benchmarks/entity_gate_cost.py --data ../shared/datasets/locomo/locomo10.json
        [--json] [--out PATH] [--limit-conversations N]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
import numpy as np
from _counting import CountingEmbedder
from _retrieval import default_cache, embed_cached, machine_info
from locomo import _metadata, load

from memorywire.embed import default_embedder
from memorywire.store.sqlite import SqliteStore
from memorywire.wire.models import MemoryType, RecallRequest, RememberRequest


def _pct(values: list[float], q: float) -> float:
    return round(float(np.percentile(values, q)), 3)


async def run(data: Path, limit: int | None, k: int) -> dict[str, Any]:
    convs, _ = load(data, limit)
    model = default_embedder()
    cache = default_cache(data)
    turn_vecs, _ = embed_cached(model, [t.content for c in convs for t in c.turns], cache)
    q_vecs, _ = embed_cached(model, [q.text for c in convs for q in c.questions], cache)
    counting = CountingEmbedder(model)
    times: dict[str, list[float]] = {"gate": [], "off": []}
    emptied = calls = n = 0
    lost: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        stores = {"gate": SqliteStore(Path(tmp) / "g.db", counting),
                  "off": SqliteStore(Path(tmp) / "o.db", counting,
                                     recall=replace(SqliteStore.DEFAULT_RECALL, entity_gate=False))}
        try:
            t_at = q_at = 0
            for conv in convs:
                reqs = [RememberRequest(agent_id=conv.sample_id, type=MemoryType.EPISODIC,
                                        content=t.content, id=t.dia_id,
                                        metadata=_metadata(conv.turns, i, True))
                        for i, t in enumerate(conv.turns)]
                vecs = turn_vecs[t_at:t_at + len(reqs)]
                t_at += len(reqs)
                for store in stores.values():
                    await store.remember_many(reqs, vectors=vecs)
                for q in conv.questions:
                    req = RecallRequest(agent_id=conv.sample_id, query=q.text, k=k)
                    order = ["gate", "off"] if n % 2 == 0 else ["off", "gate"]
                    got: dict[str, list[str]] = {}
                    for side in order:
                        before = counting.calls
                        started = time.perf_counter()
                        resp = await stores[side].recall_by_vector(req, q_vecs[q_at])
                        times[side].append((time.perf_counter() - started) * 1e3)
                        got[side] = [h.id for h in resp.results]
                        if side == "gate":
                            calls += counting.calls - before
                    if not got["gate"] and got["off"]:
                        emptied += 1
                        lost.append({"conversation": conv.sample_id, "question": q.text,
                                     "evidence_in_top_k": bool(set(q.evidence)
                                                               & set(got["off"]))})
                    q_at += 1
                    n += 1
        finally:
            for store in stores.values():
                await store.aclose()
    return {
        "benchmark": "entity_gate_cost", "data": str(data), "questions": n, "k": k,
        "gate_recall_p50_ms": _pct(times["gate"], 50),
        "gate_recall_p95_ms": _pct(times["gate"], 95),
        "off_recall_p50_ms": _pct(times["off"], 50),
        "off_recall_p95_ms": _pct(times["off"], 95),
        "p50_ratio": round(_pct(times["gate"], 50) / _pct(times["off"], 50), 3),
        "masked_embeddings": calls,
        "lists_emptied_by_gate": emptied,
        "emptied_with_evidence": sum(e["evidence_in_top_k"] for e in lost),
        "emptied": lost,
        "machine": machine_info(),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--limit-conversations", type=int, default=None)
    parser.add_argument("--k", type=int, default=10)
    args = parser.parse_args(argv)
    result = anyio.run(run, args.data, args.limit_conversations, args.k)
    if args.out is not None:
        args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result) if args.json else "\n".join(f"{k}: {v}" for k, v in result.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
