"""The four ``SqliteStore`` set-ups the long-conversation retrieval benchmarks (LoCoMo,
LongMemEval) compare, written and queried the same way by both, with the timings they report.

Kept apart from ``_retrieval.py``, whose pieces are plain data in and out: this module opens
stores. Both scripts must compare exactly the same set-ups, or their rows would not mean the
same thing; so the set-ups and their description live here once.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from _retrieval import percentile

from memorywire.embed.base import Embedder
from memorywire.recall.settings import RECOMMENDED_TAIL_GAP
from memorywire.store.sqlite import SqliteStore
from memorywire.wire.models import RecallRequest, RememberRequest

__all__ = ["DESCRIPTION", "StoreVariants", "store_timing"]

DESCRIPTION = ("SqliteStore (hybrid RRF); 'store' with relevance_floor=lexical_floor=-1 "
               "(off), 'store-floor' with the defaults (list gate, tail_gap="
               f"{RECOMMENDED_TAIL_GAP}), 'store-perrow' the per-row floors of earlier "
               "releases (tail_gap=None), 'store-plain' floors off and no metadata.context")
#: The rows whose recall latency is reported, and the timing key each goes to.
_TIMED = {"store": "store_recall_ms", "store-plain": "plain_recall_ms",
          "store-floor": "floor_recall_ms"}


class StoreVariants:
    """``store``, ``store-floor``, ``store-perrow`` and ``store-plain`` under ``tmp``.

    ``feedback_weight`` None keeps the store's default; ``settings`` (e.g.
    ``session_weight``) go to every row's store alike, so the rows differ only in what their
    names say. ``timing`` accumulates write seconds and per-query recall milliseconds; a
    script may add keys of its own to it. ``returned`` keeps every row's ``[id, score,
    relevance]`` per question, best first (what ``--hits`` writes).
    """

    def __init__(self, tmp: Path, embedder: Embedder, *, lexical_weight: float,
                 feedback_weight: float | None, **settings: Any) -> None:
        fw = {} if feedback_weight is None else {"feedback_weight": feedback_weight}
        common = replace(SqliteStore.DEFAULT_RECALL, lexical_weight=lexical_weight, **fw,
                         **settings)
        off = replace(common, relevance_floor=-1.0, lexical_floor=-1.0)
        self.stores = {
            "store": SqliteStore(tmp / "floor-off.db", embedder, recall=off),
            "store-floor": SqliteStore(tmp / "floor-default.db", embedder, recall=common),
            "store-perrow": SqliteStore(tmp / "floor-perrow.db", embedder,
                                        recall=replace(common, tail_gap=None)),
            "store-plain": SqliteStore(tmp / "plain.db", embedder, recall=off),
        }
        self.timing: dict[str, Any] = {"write_s": 0.0, "store_recall_ms": [],
                                       "plain_recall_ms": [], "floor_recall_ms": [],
                                       "plain_write_s": 0.0}
        self.returned: dict[str, list[list[tuple[str, float, float | None]]]] = {
            name: [] for name in self.stores}

    async def remember(self, reqs: Sequence[RememberRequest], plain: Sequence[RememberRequest],
                       vectors: npt.NDArray[np.float32]) -> None:
        """``reqs`` into the three context rows, ``plain`` (no metadata.context) into
        ``store-plain``; the writes of ``store`` and ``store-plain`` are timed."""
        started = time.perf_counter()
        await self.stores["store"].remember_many(reqs, vectors=vectors)
        self.timing["write_s"] += time.perf_counter() - started
        await self.stores["store-floor"].remember_many(reqs, vectors=vectors)
        await self.stores["store-perrow"].remember_many(reqs, vectors=vectors)
        started = time.perf_counter()
        await self.stores["store-plain"].remember_many(plain, vectors=vectors)
        self.timing["plain_write_s"] += time.perf_counter() - started

    async def recall(self, req: RecallRequest,
                     qvec: npt.NDArray[np.float32]) -> dict[str, list[str]]:
        """Each row's hit ids for ``req``, best first."""
        ranked: dict[str, list[str]] = {}
        for name, store in self.stores.items():
            started = time.perf_counter()
            resp = await store.recall_by_vector(req, qvec)
            if name in _TIMED:
                self.timing[_TIMED[name]].append((time.perf_counter() - started) * 1e3)
            ranked[name] = [h.id for h in resp.results]
            self.returned[name].append([(h.id, h.score, h.relevance) for h in resp.results])
        return ranked

    async def aclose(self) -> None:
        for store in self.stores.values():
            await store.aclose()


def store_timing(timing: dict[str, Any], n_texts: int, embed_s: float, embedded: int, *,
                 recall_p95: bool = False) -> dict[str, Any]:
    """The write rates and recall latencies in :attr:`StoreVariants.timing` of a run over
    ``n_texts`` texts, of which ``embedded`` were embedded in ``embed_s`` seconds (none when
    all came from the cache)."""
    write_s, plain_s = timing["write_s"], timing["plain_write_s"]
    out: dict[str, Any] = {
        "store_write_s": round(write_s, 2),
        "store_write_per_s": round(n_texts / write_s, 1) if write_s else None,
        "ingest_per_s_with_embedding": round(n_texts / (embed_s + write_s), 1)
        if embedded and write_s else None,
        "store_recall_p50_ms": percentile(timing["store_recall_ms"], 50),
    }
    if recall_p95:
        out["store_recall_p95_ms"] = percentile(timing["store_recall_ms"], 95)
    # the defaults (store-floor): the list gate and the entity gate's extra work
    out["floor_recall_p50_ms"] = percentile(timing["floor_recall_ms"], 50)
    # the same store without metadata.context, measured in the same run
    out["plain_write_per_s"] = round(n_texts / plain_s, 1) if plain_s else None
    out["plain_recall_p50_ms"] = percentile(timing["plain_recall_ms"], 50)
    return out
