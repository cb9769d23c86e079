"""Pseudo-relevance feedback: a second, lexical-only retrieval round for multi-hop questions.

A question often names one thing and needs evidence that names another: "What did Melanie
paint after the camping trip?" finds the camping turn, while the painting turn shares only
"Melanie" with the question. The first round's best hits carry the bridge: rare words (a
place, a pet's name, an event) that the question does not say. So a recall takes the
full-text keys of its first round's ``FEEDBACK_DEPTH`` best hits, picks up to
``FEEDBACK_TERMS`` of their words that the query lacks and at least ``FEEDBACK_MIN_SEEDS``
of them hold, rarest first among those matching
between 2 and ``FEEDBACK_MAX_ROWS`` rows (a word only the hit itself holds finds nothing new;
a common word finds everything), and ranks the full text again by the query plus those
words. That list joins the RRF with weight ``FEEDBACK_WEIGHT``. Where the first round kept
every match's score (its MATCH bounded by the agent's row-id range), the second MATCH holds
only the new words and the scores are added (:func:`fused_scores`): the same list, without
scoring the query's rows twice.

Why lexical only: a second vector round needs another embedding (the model dominates recall
time) and was measured as a loss on LoCoMo in round 2 (the expanded vector drifts to the
hits' topic); a second full-text round costs a few FTS5 counts and one MATCH of a few words.

Rows found only by the feedback round are not lexical matches of the *question*, so the
relevance floors judge them by their cosine alone, and they never decide whether anything
relevant was found (that stays with the first round).
"""

from __future__ import annotations

import heapq
import json
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from memorywire.core.textsearch import query_terms
from memorywire.store.sqlite.contexts import CONTEXT_SQL, row_lexical_text

__all__ = [
    "FEEDBACK_DEPTH",
    "FEEDBACK_MAX_ROWS",
    "FEEDBACK_MIN_SEEDS",
    "FEEDBACK_TERMS",
    "FEEDBACK_WEIGHT",
    "expansion_terms",
    "feedback_query",
    "fused_scores",
]

#: How many of the first round's best hits lend their words.
FEEDBACK_DEPTH = 3
#: At most this many words are added to the query.
FEEDBACK_TERMS = 6
#: A word matching more rows than this is too common to point anywhere.
FEEDBACK_MAX_ROWS = 50
#: A word must occur in at least this many of the seeds: a word of one seed alone (a name in
#: one short fact) drags that fact's neighbours in; one that several seeds share is the
#: topic's. With 1, the microbench lost a true answer (Recall@5 0.994).
FEEDBACK_MIN_SEEDS = 2
#: RRF weight of the feedback list (the first round's lists weigh 1.0 each).
FEEDBACK_WEIGHT = 0.5

#: Words of one hit read (its key may be long: a reply or neighbouring turns) ...
_HIT_TERMS = 48
#: ... and at most this many candidates counted in the index, those in more hits first,
#: then the longest (a cheap stand-in for rarity; each count is one capped FTS5 query).
_CANDIDATES = 24


def _key(word: str) -> str:
    """Words sharing six leading letters count as one (the index's prefix matching)."""
    return word[:6]


def _hit_texts(conn: Any, rids: Sequence[int]) -> list[str]:
    rows = {rid: (mtype, stored, meta, context)
            for rid, mtype, stored, meta, context in conn.execute(
                f"SELECT rid, type, content, metadata, {CONTEXT_SQL} FROM memories "
                "WHERE rid IN (SELECT value FROM json_each(?))", (json.dumps(list(rids)),))}
    return [row_lexical_text(*rows[r]) for r in rids if r in rows]


def expansion_terms(count: Callable[[str, int], int], query: str, texts: Sequence[str], *,
                    terms: int, max_rows: int,
                    count_many: Callable[[Sequence[str], int], Sequence[int]] | None = None,
                    ) -> list[str]:
    """Words of ``texts`` the query lacks, those in more hits first, then the rarest,
    keeping only words in 2 to ``max_rows`` rows of the full-text index (``count(word,
    cap)`` counts a word's rows up to ``cap``; ``count_many(words, cap)``, when given,
    counts them all at once, e.g. in one statement)."""
    asked = {_key(w) for w in query_terms(query, max_terms=64)}
    seen_in: dict[str, int] = {}
    word_of: dict[str, str] = {}
    for text in texts:
        for word in {_key(w): w for w in query_terms(text, max_terms=_HIT_TERMS)
                     if len(w) > 2 and not w.isdigit()}.values():
            key = _key(word)
            if key not in asked:
                seen_in[key] = seen_in.get(key, 0) + 1
                word_of.setdefault(key, word)
    seen_in = {k: n for k, n in seen_in.items() if n >= FEEDBACK_MIN_SEEDS}
    picked = sorted(seen_in, key=lambda k: (-seen_in[k], -len(word_of[k]), k))[:_CANDIDATES]
    words = [word_of[key] for key in picked]
    counts = (count_many(words, max_rows + 1) if count_many is not None
              else [count(w, max_rows + 1) for w in words])
    scored: list[tuple[int, int, str]] = []
    for key, n in zip(picked, counts, strict=True):
        if 2 <= n <= max_rows:
            scored.append((-seen_in[key], n, word_of[key]))
    scored.sort()
    return [w for _, _, w in scored[:terms]]


def feedback_query(conn: Any, count: Callable[[str, int], int], query: str,
                   seed_rids: Sequence[int], *,
                   depth: int | None = None, terms: int | None = None,
                   max_rows: int | None = None,
                   count_many: Callable[[Sequence[str], int], Sequence[int]] | None = None,
                   ) -> list[str]:
    """The words the second round adds to the query (none: no second round).

    Knobs default to the module constants, read at call time (benchmarks vary them)."""
    depth = FEEDBACK_DEPTH if depth is None else depth
    terms = FEEDBACK_TERMS if terms is None else terms
    max_rows = FEEDBACK_MAX_ROWS if max_rows is None else max_rows
    if depth <= 0 or terms <= 0 or not seed_rids:
        return []
    return expansion_terms(count, query, _hit_texts(conn, seed_rids[:depth]), terms=terms,
                           max_rows=max_rows, count_many=count_many)


def fused_scores(first: Sequence[tuple[int, float]],
                 added: Sequence[tuple[int, float]]) -> Iterator[int]:
    """The second round's ranking (query OR added words), best first, from the first round's
    BM25 scores (``first``: every row the query's words match, best first) and those of a
    MATCH of the added words alone (``added``).

    FTS5's ``bm25()`` is a sum over the query's phrases, each term depending only on that
    phrase, the row and table-wide statistics, and a phrase a row lacks adds exactly zero;
    so a row's score for the OR of both sets is its two scores added. Asking FTS5 for the
    union instead scores every row of the query's words a second time (~1.5 ms of a 4 ms
    LoCoMo recall). Sums can differ from FTS5's own in the last bit (the additions are
    grouped differently), which could reorder only rows whose scores tie to 1e-16; equal
    scores keep row-id order, as FTS5's sort gives them (checked on all 1,778 LoCoMo
    questions that get feedback: the same lists as FTS5's). Only the added words' rows move,
    so they are sorted alone and merged lazily into the first round's order: the caller
    reads a few dozen rows of a list that may hold thousands."""
    base = dict(first)
    moved = {rid: base.get(rid, 0.0) + score for rid, score in added}
    kept = ((score, rid) for rid, score in first if rid not in moved)
    for _, rid in heapq.merge(kept, sorted((score, rid) for rid, score in moved.items())):
        yield rid
