r"""One side of ``reference_latency.py``: write a plan's turns into SqliteStore and time recall.

Run as a script, in a process of its own, with ``PYTHONPATH`` naming the ``src`` folder of
the memorywire to measure: the parent runs it once with the sources of an old commit and once
with today's, because two versions of one package cannot be imported into one process. So
this file imports nothing of the benchmarks and, of memorywire, only what every version since
the first session has had under the same name: ``SqliteStore`` (constructor, ``remember_many``
with ``vectors=``, ``recall_by_vector``, ``aclose``; its floors given as one keyword each before
recall30 and as one ``recall`` value since, see ``_floors_off``), the wire's ``RememberRequest``,
``RecallRequest`` and ``MemoryType``, and the embedders. What differs between versions (which
request fields exist) is already settled in the plan: each side reads the requests written
for it.

The plan (a folder the parent writes): ``plan.json`` with ``batches`` (per conversation or
haystack: its agent and the span of its rows in ``turns.npy``), ``requests`` (per flavour:
the turns of each batch as request fields, and one recall request per question, its vector
the same row of ``questions.npy``), ``timed`` (which questions are timed) and ``embedder``.

Two rows, as the benchmarks build them: ``store`` (relevance and lexical floors off) and
``store-floor`` (the constructor's defaults). Writes: each batch to each row from the row's
own request objects, the order of the rows rotated per batch; wall and CPU time (all threads
of the process) per row. Recall: each question once, untimed, right after its own batch is
written (as the benchmarks ask; its hit ids are returned, for scoring), then, with every
batch written, one more untimed pass and ``repeat`` timed passes over the timed questions,
the rows' order rotated. The model is never needed when vectors are given; a store that
calls it anyway (today's entity gate may, with the default floors) is counted, not hidden
(``model_calls``).

    PYTHONPATH=SRC python benchmarks/_reference_child.py --plan DIR --flavour reference \
        [--repeat 3] [--warm all|timed]

Prints one JSON object on stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
from _counting import CountingEmbedder

ROWS = ("store", "store-floor")


def make_embedder(spec: str) -> CountingEmbedder:
    """``minilm`` (the package's default embedder) or ``hashing:DIM`` (tests)."""
    if spec == "minilm":
        from memorywire.embed import default_embedder
        return CountingEmbedder(default_embedder())
    kind, _, dim = spec.partition(":")
    if kind == "hashing" and dim.isdigit():
        from memorywire.embed.hashing import HashingEmbedder
        return CountingEmbedder(HashingEmbedder(int(dim)))
    raise ValueError(f"unknown embedder {spec!r} (minilm or hashing:DIM)")


def _rotated(names: Sequence[str], shift: int) -> list[str]:
    s = shift % len(names)
    return [*names[s:], *names[:s]]


def _floors_off(path: Path, embedder: Any) -> Any:
    """A SqliteStore with both floors off, in the shape this version's constructor takes
    them: one keyword per setting before recall30, one ``recall`` value since."""
    from memorywire.store.sqlite import SqliteStore

    defaults = getattr(SqliteStore, "DEFAULT_RECALL", None)
    if defaults is None:
        return SqliteStore(path, embedder, relevance_floor=-1.0, lexical_floor=-1.0)
    return SqliteStore(path, embedder,
                       recall=replace(defaults, relevance_floor=-1.0, lexical_floor=-1.0))


async def measure(plan_dir: Path, flavour: str, repeat: int, warm_all: bool) -> dict[str, Any]:
    import memorywire
    from memorywire.store.sqlite import SqliteStore
    from memorywire.wire.models import MemoryType, RecallRequest, RememberRequest

    plan = json.loads((plan_dir / "plan.json").read_text(encoding="utf-8"))
    turn_vecs = np.load(plan_dir / "turns.npy")
    q_vecs = np.load(plan_dir / "questions.npy")
    reqs = plan["requests"][flavour]
    embedder = make_embedder(plan["embedder"])
    out: dict[str, Any] = {"memorywire": memorywire.__file__, "flavour": flavour,
                           "pid": os.getpid(), "load_avg_1m_start": os.getloadavg()[0]}
    with tempfile.TemporaryDirectory(prefix="mw-ref-child-") as tmp:
        stores = {"store": _floors_off(Path(tmp) / "store.db", embedder),
                  "store-floor": SqliteStore(Path(tmp) / "store-floor.db", embedder)}
        try:
            wall = dict.fromkeys(ROWS, 0.0)
            cpu = dict.fromkeys(ROWS, 0.0)
            turns = 0
            asks = [RecallRequest(**a) for a in reqs["asks"]]
            timed = plan["timed"]
            untimed = set(range(len(asks))) if warm_all else set(timed)
            by_agent: dict[str, list[int]] = {}
            for i, a in enumerate(reqs["asks"]):
                if i in untimed:
                    by_agent.setdefault(a["agent_id"], []).append(i)
            ids: dict[str, dict[str, list[str]]] = {row: {} for row in ROWS}
            for b, (batch, fields) in enumerate(zip(plan["batches"], reqs["turns"],
                                                    strict=True)):
                vecs = turn_vecs[batch["start"]:batch["end"]]
                turns += len(fields)
                own = {row: ([RememberRequest(agent_id=batch["agent_id"],
                                              type=MemoryType.EPISODIC, **f) for f in fields],
                             vecs.copy()) for row in ROWS}
                for row in _rotated(ROWS, b):
                    rq, mine = own[row]
                    c0, w0 = time.process_time(), time.perf_counter()
                    await stores[row].remember_many(rq, vectors=mine)
                    wall[row] += time.perf_counter() - w0
                    cpu[row] += time.process_time() - c0
                # Asked right after its own batch, before the next is written, as the
                # benchmarks ask: FTS5's BM25 weighs a word by the whole table, so the
                # rankings (and the R@k of the check) are theirs only in that state.
                for i in by_agent.get(batch["agent_id"], []):
                    for row in ROWS:
                        resp = await stores[row].recall_by_vector(asks[i], q_vecs[i])
                        ids[row][str(i)] = [h.id for h in resp.results]
            for i in timed:  # warm again: a later batch's write may have dropped a cache
                for row in ROWS:
                    await stores[row].recall_by_vector(asks[i], q_vecs[i])
            untimed_calls = embedder.texts
            ms: dict[str, list[float]] = {row: [] for row in ROWS}
            for rep in range(repeat):
                for n, i in enumerate(timed):
                    for row in _rotated(ROWS, n + rep):
                        started = time.perf_counter()
                        await stores[row].recall_by_vector(asks[i], q_vecs[i])
                        ms[row].append((time.perf_counter() - started) * 1e3)
            out.update({
                "turns": turns,
                "rows": {row: {"write_s": wall[row], "write_cpu_s": cpu[row],
                               "recall_ms": ms[row], "ids": ids[row]} for row in ROWS},
                "model_calls": {"untimed": untimed_calls,
                                "timed": embedder.texts - untimed_calls},
            })
        finally:
            for store in stores.values():
                await store.aclose()
    out["load_avg_1m_end"] = os.getloadavg()[0]
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--plan", type=Path, required=True)
    parser.add_argument("--flavour", required=True)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--warm", choices=("all", "timed"), default="timed")
    args = parser.parse_args(argv)
    result = asyncio.run(measure(args.plan, args.flavour, args.repeat, args.warm == "all"))
    json.dump(result, sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
