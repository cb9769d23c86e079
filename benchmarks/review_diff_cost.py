r"""What the detector's scan costs the reviewer's diff of a staged remember, and in model runs.

One governed SQLite store, one agent and user holding ``--n`` facts (the sentences of
``remember_cost.py``); ``--reviews`` remembers are staged (``approval_required``) and each
one's review (``get_review``, as the review page asks for it) is built twice, alternately:
with the detector's scan switched off (``words_only``: the diff as it was before issue 17's
fix, the word rules on the recalled neighbours) and as shipped (``with_scan``: the same, plus
the store's conflict scan with cosines and a ``get`` per candidate). Reported: p50 / mean ms
of each, the median per-review difference, the model runs (the embedder's cache misses) of a
review built first (with the default model a new text costs one run, for the recall's query;
the scan embeds the same text and finds it cached) and the ``supersedes?`` rows each shows.
Then every staged item is rejected or approved and the model runs of those decisions counted
(issue 20: a decision builds no diff).

    python benchmarks/review_diff_cost.py [--n 600] [--reviews 30] [--json] [--out PATH]
        [--hashing]
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
from remember_cost import facts

import memorywire.governance.review as review_module
from memorywire.embed.base import Embedder
from memorywire.governance import GovernedStore, acting_as
from memorywire.store.sqlite import SqliteStore
from memorywire.wire.models import MemoryType, RememberRequest

_UPDATES = ["The user's {} {} changed to {} recently.", "These days the user's {} {} is {}."]


def _misses(embedder: Embedder) -> int:
    cache = getattr(embedder, "cache", None)
    return int(cache.misses) if cache is not None else 0


async def _no_scan(store: Any, req: RememberRequest) -> list[Any]:
    return []


async def _review(gov: GovernedStore, item_id: str, scan: bool) -> tuple[float, dict[str, Any]]:
    """ms and the review, with the detector's scan in the diff or (as before) without."""
    shipped = review_module.conflicts_for
    if not scan:
        review_module.conflicts_for = _no_scan  # type: ignore[assignment]
    try:
        t0 = time.perf_counter()
        got = await gov.get_review(item_id)
        return (time.perf_counter() - t0) * 1000, got
    finally:
        review_module.conflicts_for = shipped


async def run(n: int, reviews: int, embedder: Embedder) -> dict[str, Any]:
    old: list[float] = []
    new: list[float] = []
    runs_new: list[int] = []
    runs_old: list[int] = []
    flagged = flagged_old = 0
    with tempfile.TemporaryDirectory() as tmp:
        gov = GovernedStore(SqliteStore(Path(tmp) / "m.db", embedder=embedder),
                            Path(tmp) / "gov.db")
        try:
            await gov.inner.remember_many([RememberRequest(  # type: ignore[attr-defined]
                agent_id="a", user_id="u", type=MemoryType.SEMANTIC, content=t)
                for t in facts(n)])
            with acting_as("writer"):
                staged = []
                for i in range(reviews):
                    words = facts(n)[(i * 37) % n].removeprefix("The user's ").rstrip(".")
                    thing, aspect = words.split(" ")[:2]
                    text = _UPDATES[i % 2].format(thing, aspect, f"Value{i}")
                    req = RememberRequest(agent_id="a", user_id="u", type=MemoryType.SEMANTIC,
                                          content=text, approval_required=True)
                    staged.append((await gov.remember(req), req))
            for k, (resp, _) in enumerate(staged):
                before = _misses(embedder)
                if k % 2:  # alternate which goes first: the second finds the query cached
                    ms_new, review = await _review(gov, resp.id, True)
                    runs_new.append(_misses(embedder) - before)
                    ms_old, plain = await _review(gov, resp.id, False)
                else:
                    ms_old, plain = await _review(gov, resp.id, False)
                    runs_old.append(_misses(embedder) - before)
                    ms_new, review = await _review(gov, resp.id, True)
                old.append(ms_old)
                new.append(ms_new)
                flagged_old += sum(m["relation"] == "supersedes?"
                                   for m in plain["diff"]["modified"])
                flagged += sum(m["relation"] == "supersedes?" for m in review["diff"]["modified"])
            before = _misses(embedder)
            with acting_as("reviewer"):
                for k, (resp, _) in enumerate(staged):
                    if k % 2:
                        await gov.reject(resp.id, "reviewer", "benchmark")
                    else:
                        await gov.approve(resp.id, "reviewer", None)
            decision_runs = _misses(embedder) - before
        finally:
            await gov.aclose()
    return {
        "n": n,
        "reviews": reviews,
        "embedder": embedder.name,
        "words_only_ms": {"p50": round(statistics.median(old), 2),
                          "mean": round(statistics.fmean(old), 2)},
        "with_scan_ms": {"p50": round(statistics.median(new), 2),
                          "mean": round(statistics.fmean(new), 2)},
        "added_p50_ms": round(statistics.median(b - a for a, b in zip(old, new,
                                                                        strict=True)), 2),
        # of a review built first (nothing cached): the scan's embedding is the query's
        "model_runs_per_fresh_review": {"words_only": round(statistics.fmean(runs_old), 2),
                                        "with_scan": round(statistics.fmean(runs_new), 2)},
        "model_runs_in_decisions_beyond_the_writes": decision_runs,
        "supersedes_rows_per_review": {"words_only": round(flagged_old / reviews, 2),
                                       "with_scan": round(flagged / reviews, 2)},
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=600)
    ap.add_argument("--reviews", type=int, default=30)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--hashing", action="store_true", help="hashing embedder (no model)")
    args = ap.parse_args(argv)
    if args.hashing:
        from memorywire.embed.hashing import HashingEmbedder

        embedder: Embedder = HashingEmbedder()
    else:
        from memorywire.embed import default_embedder

        embedder = default_embedder()
    result = anyio.run(run, args.n, args.reviews, embedder)
    if args.out is not None:
        args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2) if args.json else "\n".join(
        f"{k:45} {v}" for k, v in result.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
