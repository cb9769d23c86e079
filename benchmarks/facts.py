"""Per-user fact memory asked by meaning: the store's defaults beside a plain vector search and
a stemmed BM25, on the same memories, one scope per user.

Corpus (``corpus/userfacts.jsonl`` and ``corpus/userfacts_questions.jsonl``, written here by
``userfacts_corpus.py``, whose docstring says how): 16 people, 20 memories each (8 about the
person over the four memory types, 12 everyday events), 10 questions per person that share no
content word with their answer but the person's name (or "user"), and 4 no-match probes per
person (a topic none of their memories holds). Each is phrased twice, with the name and in
mem0's "The user ..." style; people are split into dev and held-out halves (8 each).

Rows, each over exactly the same memories, scope and question:

* ``store-floor``: what a user gets, ``Memory("sqlite:///...")`` (the store behind
  ``SyncMemory.local``) with every default; memories written with their ids under one agent,
  ``user_id`` = the person; ``recall(k=5, user_id=...)`` as it answers (the relevance floor
  and gates on, so an answer may be empty);
* ``vector``: exact cosine top-5 in numpy over the same MiniLM vectors of the same text the
  store embeds (a procedure reads as its words), within the person's 20 memories; it never
  returns nothing;
* ``bm25``: the stemmed Okapi BM25 of ``_retrieval.py`` over the same 20 texts; a memory
  sharing no stem with the question scores 0 and is not returned.

Keys per row and split (``dev``, ``heldout``), overall, ``by_phrasing`` and ``by_type``:
``r_at_1`` / ``r_at_5`` (share of answerable questions whose memory is first / in the top 5),
``answerable_empty`` (share of answerable questions answered with nothing),
``no_match_empty`` (share of no-match probes answered with nothing), and the counts. The
``store-floor`` row also has a calibration table (returned hits by ``relevance`` band: how
many, how many correct; a no-match probe's hits are all wrong), how often its results come
ordered by ``relevance``, and, for dev only, the questions it misses.

    python benchmarks/facts.py [--json] [--out PATH]
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import anyio
from _retrieval import BM25, format_table, machine_info, mean, stemmed_tokenize, top_indices
from userfacts_corpus import MEMORIES, PHRASINGS, QUESTIONS, searchable_text

from memorywire.client import Memory
from memorywire.embed import default_embedder
from memorywire.embed.base import Embedder

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "facts.json"
AGENT = "assistant"
K = 5
ROWS = ("store-floor", "vector", "bm25")
SPLITS = ("dev", "heldout")
TYPES = ("semantic", "episodic", "procedural", "emotional")
BANDS = (0.0, 0.25, 0.5, 0.75, 1.0)

#: One question's answer: the ids, best first, and the relevance of each (store rows only).
Answer = tuple[list[str], list[float | None]]


def _load(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


async def _store_answers(memories: list[dict[str, Any]], questions: list[dict[str, Any]],
                         embedder: Embedder, folder: Path,
                         settings: Sequence[str] = ()) -> dict[str, Answer]:
    """The defaults' answers (``settings``: ``key=value`` store URL settings, for an
    ablation), one SQLite file per phrasing, keyed by ``phrasing/question``."""
    out: dict[str, Answer] = {}
    query = ("?" + "&".join(settings)) if settings else ""
    for phrasing in PHRASINGS:
        mem = Memory(f"sqlite:///{folder / f'{phrasing}.db'}{query}", embedder=embedder)
        try:
            for m in memories:
                if m["phrasing"] == phrasing:
                    await mem.remember(agent_id=AGENT, user_id=m["user"], type=m["type"],
                                       content=m["content"], id=m["id"])
            for q in questions:
                if q["phrasing"] == phrasing:
                    hits = (await mem.recall(agent_id=AGENT, user_id=q["user"],
                                             query=q["query"], k=K)).results
                    out[f"{phrasing}/{q['id']}"] = ([h.id for h in hits],
                                                    [h.relevance for h in hits])
        finally:
            await mem.aclose()
    return out


def _scoped(memories: list[dict[str, Any]], questions: list[dict[str, Any]],
            rank: Callable[[list[dict[str, Any]], list[dict[str, Any]]], list[list[str]]],
            ) -> dict[str, Answer]:
    """A baseline's answers: ``rank`` sees one person's memories and questions at a time."""
    out: dict[str, Answer] = {}
    scopes = sorted({(m["phrasing"], m["user"]) for m in memories})
    for phrasing, user in scopes:
        mine = [m for m in memories if (m["phrasing"], m["user"]) == (phrasing, user)]
        asked = [q for q in questions if (q["phrasing"], q["user"]) == (phrasing, user)]
        for q, ids in zip(asked, rank(mine, asked), strict=True):
            out[f"{phrasing}/{q['id']}"] = (ids, [None] * len(ids))
    return out


def vector_ranker(embedder: Embedder) -> Callable[[list[dict[str, Any]], list[dict[str, Any]]],
                                                   list[list[str]]]:
    def rank(mine: list[dict[str, Any]], asked: list[dict[str, Any]]) -> list[list[str]]:
        docs = embedder.embed([searchable_text(m) for m in mine])
        sims = embedder.embed([q["query"] for q in asked]) @ docs.T
        return [[mine[i]["id"] for i in top_indices(row, K)] for row in sims]
    return rank


def bm25_rank(mine: list[dict[str, Any]], asked: list[dict[str, Any]]) -> list[list[str]]:
    index = BM25([searchable_text(m) for m in mine], analyzer=stemmed_tokenize)
    out = []
    for q in asked:
        scores = index.scores(q["query"])
        out.append([mine[i]["id"] for i in top_indices(scores, K) if scores[i] > 0])
    return out


def _metrics(questions: Sequence[dict[str, Any]], answers: dict[str, Answer]) -> dict[str, Any]:
    answerable = [q for q in questions if q["relevant"]]
    probes = [q for q in questions if not q["relevant"]]

    def got(q: dict[str, Any]) -> list[str]:
        return answers[f"{q['phrasing']}/{q['id']}"][0]

    return {
        "r_at_1": mean([float(bool(got(q)[:1]) and got(q)[0] in q["relevant"])
                        for q in answerable]),
        "r_at_5": mean([float(any(g in q["relevant"] for g in got(q)[:K])) for q in answerable]),
        "answerable_empty": mean([float(not got(q)) for q in answerable]),
        "no_match_empty": mean([float(not got(q)) for q in probes]),
        "answerable": len(answerable),
        "no_match": len(probes),
    }


def _calibration(questions: Sequence[dict[str, Any]],
                 answers: dict[str, Answer]) -> dict[str, Any]:
    """Returned hits by relevance band, and how many of them answer their question."""
    bands = [{"from": lo, "to": hi, "hits": 0, "correct": 0}
             for lo, hi in itertools.pairwise(BANDS)]
    ordered = total = 0
    for q in questions:
        ids, rels = answers[f"{q['phrasing']}/{q['id']}"]
        known = [r for r in rels if r is not None]
        if ids:
            total += 1
            ordered += all(a >= b for a, b in itertools.pairwise(known))
        for mid, rel in zip(ids, rels, strict=True):
            if rel is None:
                continue
            band = bands[min(int(rel / 0.25), len(bands) - 1)]
            band["hits"] += 1
            band["correct"] += mid in q["relevant"]
    for band in bands:
        band["precision"] = round(band["correct"] / band["hits"], 4) if band["hits"] else None
    return {"bands": bands, "answers_ordered_by_relevance": ordered, "answers_with_hits": total}


def _report(questions: list[dict[str, Any]], answers: dict[str, Answer],
            store: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for split in SPLITS:
        mine = [q for q in questions if q["split"] == split]
        entry = _metrics(mine, answers)
        entry["by_phrasing"] = {p: _metrics([q for q in mine if q["phrasing"] == p], answers)
                                for p in PHRASINGS}
        entry["by_type"] = {t: _metrics([q for q in mine if q["type"] == t], answers)
                            for t in TYPES}
        if store:
            entry["calibration"] = _calibration(mine, answers)
            if split == "dev":
                entry["misses"] = [
                    {"id": q["id"], "phrasing": q["phrasing"], "query": q["query"],
                     "want": q["relevant"], "got": answers[f"{q['phrasing']}/{q['id']}"][0]}
                    for q in mine
                    if (q["relevant"] and not set(q["relevant"])
                        & set(answers[f"{q['phrasing']}/{q['id']}"][0][:1]))
                    or (not q["relevant"] and answers[f"{q['phrasing']}/{q['id']}"][0])]
        out[split] = entry
    return out


async def run(settings: Sequence[str] = ()) -> dict[str, Any]:
    memories, questions = _load(MEMORIES), _load(QUESTIONS)
    embedder = default_embedder()
    with tempfile.TemporaryDirectory() as tmp:
        store = await _store_answers(memories, questions, embedder, Path(tmp), settings)
    answers = {"store-floor": store,
               "vector": _scoped(memories, questions, vector_ranker(embedder)),
               "bm25": _scoped(memories, questions, bm25_rank)}
    one = [m for m in memories if m["phrasing"] == PHRASINGS[0]]
    return {
        "embedder": embedder.name,
        "k": K,
        "settings": list(settings),
        "corpus": {"people": len({m["user"] for m in memories}), "facts": len(one),
                   "memory_lines": len(memories), "question_lines": len(questions),
                   "phrasings": list(PHRASINGS)},
        "machine": machine_info(),
        "rows": {row: _report(questions, answers[row], row == "store-floor") for row in ROWS},
    }


def _table(r: dict[str, Any]) -> str:
    head = ["row", "split", "phrasing", "R@1", "R@5", "answerable empty", "no-match empty"]
    lines = []
    for row in ROWS:
        for split in SPLITS:
            e = r["rows"][row][split]
            lines.append([row, split, "both", e["r_at_1"], e["r_at_5"], e["answerable_empty"],
                          e["no_match_empty"]])
            for p in PHRASINGS:
                x = e["by_phrasing"][p]
                lines.append([row, split, p, x["r_at_1"], x["r_at_5"], x["answerable_empty"],
                              x["no_match_empty"]])
    by_type = [[row, split, t, *(r["rows"][row][split]["by_type"][t][k]
                                 for k in ("r_at_1", "r_at_5", "answerable_empty"))]
               for row in ROWS for split in SPLITS for t in TYPES]
    return "\n\n".join([
        format_table(head, lines),
        format_table(["row", "split", "type", "R@1", "R@5", "answerable empty"], by_type),
    ])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--out", type=Path, default=RESULTS,
                        help=f"result file (default {RESULTS.relative_to(HERE.parent)})")
    parser.add_argument("--setting", action="append", default=[], metavar="KEY=VALUE",
                        help="a store URL setting for the store-floor row (ablation; e.g. "
                             "entity_gate=false), repeatable; default: none (the defaults)")
    args = parser.parse_args(argv)
    result = anyio.run(run, args.setting)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("w", encoding="utf-8") as fh:
        json.dump(result, fh, indent=2)
        fh.write("\n")
    print(json.dumps(result) if args.json else _table(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
