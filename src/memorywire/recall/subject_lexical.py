"""Subject lexical list: the named person's memories ranked by a standard stemmed BM25.

A question that names someone ("What books has Melanie read?") is mostly answered by what
that person said (``recall.subject_boost``), and the subject boost lifts those memories as a
block, in the store's order. That order is the hybrid's: the vector side weighs the whole
sentence, and the store's full-text side (SQLite FTS5, PostgreSQL ``ts_rank_cd``, the
in-memory store's word overlap) is tuned for a short key and for deciding "nothing
relevant". Two offline simulations (docs/benchmarks.md, round 7 "Entity-linked expansion"
and prof19 "control") found that a *second* lexical ranking of the named person's memories,
a textbook BM25 (Porter stems, Lucene's short English stop list, the memory's text with its
context key), fused on top of the store's order, raises LoCoMo R@5 on the fitted and the
held-out conversations alike; neither the store's own FTS5 list filtered to the speaker nor
a BM25 without stems or with the store's longer stop list reproduced the gain
(docs/benchmarks.md, "spk19").

So the rule costs no search: it ranks the pool the recall plan already fetched (the
``SUBJECT_POOL`` hits the subject boost asks for) by BM25, idf and mean length taken over
that pool, keeps the memories whose subject (``metadata.speaker`` / ``entity_name``) the
query names and that match at least one query word, and fuses that list (weight
:data:`SUBJECT_LEXICAL_WEIGHT`) with the pool's order (weight 1) by RRF, k = 60. At this
weight a memory outside the pool could not reach the first ``k`` anyway (its best share,
0.3/60, is below the pool's last place, 1/159), so ranking the pool loses nothing. Every
backend that runs the recall plan (SQLite, PostgreSQL, in-memory) runs the same rule on the
same texts. A query that names no one, or whose named person has no matching memory in the
pool, keeps its order; scores are never changed.

Stems are Snowball's Porter stemmer (``snowballstemmer``: pure Python, no dependencies), each
word stemmed once per process (a conversation repeats its vocabulary in every recall) and
each memory's text analysed once while it stays in a cache of 8,192 texts (LoCoMo's ten
conversations hold 5,882 turns; a cache smaller than a workload's turns is emptied by every
pass over them, and analysing a text afresh is most of the rule's cost: docs/benchmarks.md,
"spk19").
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import snowballstemmer

from memorywire.core.context_key import CONTEXT_FIELD
from memorywire.core.fusion import DEFAULT_RRF_K
from memorywire.core.timeline import HitT, HitView
from memorywire.recall.rule import RecallContext
from memorywire.recall.settings import SUBJECT_LEXICAL_WEIGHT
from memorywire.recall.subject_boost import SUBJECT_POOL, names_of, needs_pool, subject_words
from memorywire.recall.substance_prior import content_texts

__all__ = ["BM25_STOP_WORDS", "K1", "RULE", "SUBJECT_LEXICAL_WEIGHT", "SubjectLexical",
           "analysed", "bm25_scores", "subject_lexical_ranked"]

#: BM25's term-frequency saturation (``b`` is 0.75). Fitted with the weight; the values
#: tried barely differ (docs/benchmarks.md, "spk19").
K1 = 2.0
_B = 0.75
#: Lucene's classic English stop list, the analysis BM25 toolkits use by default. The store's
#: own longer list (``core.textsearch``: question words, "did", "remember", ...) cost recall
#: here (docs/benchmarks.md, "spk19").
BM25_STOP_WORDS = frozenset({
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is",
    "it", "no", "not", "of", "on", "or", "such", "that", "the", "their", "then", "there",
    "these", "they", "this", "to", "was", "will", "with",
})
_WORD = re.compile(r"\w+", re.UNICODE)
#: word -> Porter stem, filled as words are met (stemming is pure Python, and a
#: conversation repeats its vocabulary in every recall). Emptied when it holds
#: ``_MAX_STEMS`` words.
_stems: dict[str, str] = {}
_MAX_STEMS = 65536


def _terms(text: str) -> list[str]:
    """The text's words, stop words out, as stems. A Snowball stemmer keeps the word it works
    on in itself, so each call that meets a new word makes its own (cheap): recall plans
    run in worker threads."""
    stems = _stems
    stemmer: Any = None
    out = []
    for word in _WORD.findall(text.lower()):
        if word in BM25_STOP_WORDS:
            continue
        stem = stems.get(word)
        if stem is None:
            if stemmer is None:
                stemmer = snowballstemmer.stemmer("porter")
            if len(stems) >= _MAX_STEMS:
                stems.clear()
            stem = stems[word] = stemmer.stemWord(word)
        out.append(stem)
    return out


@lru_cache(maxsize=8192)
def analysed(text: str) -> tuple[dict[str, int], int]:
    """A text's stem frequencies and its length in stems (cached: a conversation's pool
    holds mostly memories its earlier questions ranked; a few KB a text, so the cache stays
    in the tens of MB)."""
    freqs: dict[str, int] = {}
    terms = _terms(text)
    for term in terms:
        freqs[term] = freqs.get(term, 0) + 1
    return freqs, len(terms)


def _text(hit: HitView) -> str:
    """What the rule matches: the hit's text, then its context key (as the full-text key)."""
    own = hit.content if isinstance(hit.content, str) else " ".join(content_texts(hit.content))
    context = (hit.metadata or {}).get(CONTEXT_FIELD)
    return f"{own}\n{context}" if isinstance(context, str) else own


def bm25_scores(query: str, texts: Sequence[str], k1: float | None = None) -> list[float]:
    """Okapi BM25 of each text against the query, idf (Lucene's, always positive) and mean
    length over ``texts``; a query word repeated counts once per occurrence."""
    k1 = K1 if k1 is None else k1
    docs = [analysed(t) for t in texts]
    n = len(docs)
    if not n:
        return []
    avg = sum(length for _, length in docs) / n or 1.0
    scores = [0.0] * n
    for term in _terms(query):
        having = [(i, freqs[term]) for i, (freqs, _) in enumerate(docs) if term in freqs]
        if not having:
            continue
        idf = math.log(1.0 + (n - len(having) + 0.5) / (len(having) + 0.5))
        for i, tf in having:
            norm = k1 * (1.0 - _B + _B * docs[i][1] / avg)
            scores[i] += idf * tf * (k1 + 1.0) / (tf + norm)
    return scores


def subject_lexical_ranked(hits: Sequence[HitT], query: str, names: frozenset[str],
                           weight: float = SUBJECT_LEXICAL_WEIGHT) -> list[HitT]:
    """``hits`` (best first) fused with the named subjects' memories ranked by BM25."""
    if not names or weight <= 0 or not hits:
        return list(hits)
    named = [bool(subject_words(h) & names) for h in hits]
    if not any(named):
        return list(hits)
    scores = bm25_scores(query, [_text(h) for h in hits])
    listed = sorted((i for i in range(len(hits)) if named[i] and scores[i] > 0),
                    key=lambda i: (-scores[i], i))
    if not listed:
        return list(hits)
    fused = [1.0 / (DEFAULT_RRF_K + rank) for rank in range(len(hits))]
    for rank, i in enumerate(listed):
        fused[i] += weight / (DEFAULT_RRF_K + rank)
    return [hits[i] for i in sorted(range(len(hits)), key=lambda i: (-fused[i], i))]


@dataclass(frozen=True)
class SubjectLexical:
    """The rule: the named person's memories ranked by a stemmed BM25 over the pool
    (``subject_lexical_weight``); it ranks the same :data:`SUBJECT_POOL` the subject boost
    asks for, so it needs that pool too, and nothing more."""

    name: str = "subject_lexical"
    settings: tuple[str, ...] = ("subject_lexical_weight",)

    def pool(self, context: RecallContext, found: Sequence[HitView] | None, asked: int) -> int:
        if found is None or context.settings.subject_lexical_weight <= 0:
            return 0
        return SUBJECT_POOL if needs_pool(names_of(context), found, asked) else 0

    def apply(self, hits: Sequence[HitT], context: RecallContext) -> list[HitT]:
        weight = context.settings.subject_lexical_weight
        return subject_lexical_ranked(hits, context.req.query,
                                      names_of(context) if weight > 0 else frozenset(), weight)


RULE = SubjectLexical()
