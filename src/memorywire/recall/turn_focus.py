"""Turn focus: inside a session, the turn that says it comes before the turns around it.

Session evidence (:mod:`memorywire.recall.session_evidence`) lifts every hit of a session that
holds several good hits, and a context key (a turn's reply or neighbours joined to its
full-text key) lets a turn match through what was said around it. Both find the right
*session*; neither says which of its turns holds the answer. A session about a road trip
has a dozen turns on routes and stops, and their long replies match the question as well as
the one turn that says "I drove six hours to Tybee Island". On LongMemEval S dev120, few
of the failed questions' answer turns were the first hit of their own session, while a BM25
of each turn's *own* words (the user's message, no context) put the answer turn first in its
session more often than the store's order did (docs/benchmarks.md, "turn19").

So the rule re-ranks each session's hits among the places that session already holds: the
store's order within the session is one list (RRF, k = 60), the same hits ranked by how well
their own text matches the question's words are a second list of weight
:data:`TURN_WEIGHT`. A session keeps exactly its places, so which sessions come first (and
so which sessions a recall of k returns) is unchanged; only which of a session's turns takes
its first place changes. Hits without a session, and sessions with one hit, keep their
place. Scores are untouched.

It acts only on a session whose hits are found mostly through their context: the contexts
hold at least :data:`CONTEXT_SHARE` times the characters of the hits' own texts (a long
reply to a short user turn, as in nearly every LongMemEval session). There the store's
full-text rank says how well the *reply* matched. Where the context is a line or two around
the turn (LoCoMo's previous and next turn, which nearly all sessions hold at well under that
share) the store's own order already weighs the turn's words, and the rule only cost recall
there; such a session, and a store without context keys, keeps its order (the shares and
the cost: docs/benchmarks.md, "turn19").

The own-text match is BM25 over the re-ranked hits (the first :data:`TURN_POOL`, as session
evidence): a query word (:func:`memorywire.core.textsearch.query_terms`, stop words out)
matches a word of the hit when they are equal, or equal but for a plural ``s``/``es``, or,
for a query word of at least :data:`PREFIX_MIN_WORD` letters, when the hit's word starts
with its first :data:`PREFIX_LEN` letters (the truncation stemming of SQLite's full-text
leg). Its idf is taken over those hits, so a word every hit holds counts for little.

The weight was fitted on LongMemEval S dev120 and checked on LongMemEval oracle and LoCoMo
(docs/benchmarks.md, "turn19").
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass

from memorywire.core.context_key import CONTEXT_FIELD
from memorywire.core.fusion import DEFAULT_RRF_K
from memorywire.core.textsearch import query_terms
from memorywire.core.timeline import HitT, HitView
from memorywire.recall.rule import RecallContext
from memorywire.recall.session_evidence import SESSION_POOL, session_of
from memorywire.recall.settings import TURN_WEIGHT
from memorywire.recall.substance_prior import content_texts

__all__ = ["CONTEXT_SHARE", "PREFIX_LEN", "PREFIX_MIN_WORD", "RULE", "TURN_POOL", "TURN_WEIGHT",
           "TurnFocus", "context_led", "own_scores", "turn_focused"]

#: How many times its hits' own text a session's contexts must hold for the rule to act:
#: the lowest share at which LoCoMo's short contexts are left alone while LongMemEval's
#: long replies still get the rule (docs/benchmarks.md, "turn19").
CONTEXT_SHARE = 4.0
#: How many hits (best first) are re-ranked: the session evidence pool.
TURN_POOL = SESSION_POOL
#: A query word this long also matches the words sharing its first ``PREFIX_LEN`` letters.
PREFIX_MIN_WORD = 7
PREFIX_LEN = 6
_K1 = 1.2
_B = 0.75


def _is_word(char: str) -> bool:
    return char.isalnum() or char == "_"


def _whole(text: str, at: int, end: int, prefix: bool) -> bool:
    """Whether the match of a query word at ``text[at:end]`` starts a word and, unless it is
    a prefix, ends one (a plural ``s``/``es`` allowed)."""
    if at and _is_word(text[at - 1]):
        return False
    if prefix:
        return True
    rest = text[end:end + 3]
    for suffix in ("", "s", "es"):
        if rest.startswith(suffix) and (len(rest) == len(suffix)
                                         or not _is_word(rest[len(suffix)])):
            return True
    return False


def own_scores(query: str, hits: Sequence[HitView]) -> list[float]:
    """BM25 of each hit's own text against the query's words, idf over ``hits``.

    The texts are joined and lower-cased once and each query word is found with ``str.find``
    (a few dozen occurrences per recall), not by a regex over every word of every hit: the
    pool of a long conversation holds tens of thousands of characters, and this runs on
    every recall."""
    keys = [(t[:PREFIX_LEN], True) if len(t) >= PREFIX_MIN_WORD else (t, False)
            for t in query_terms(query)]
    texts = [" ".join(content_texts(h.content)) for h in hits]
    if not keys or not texts:
        return [0.0] * len(hits)
    starts: list[int] = []
    at = 0
    for text in texts:
        starts.append(at)
        at += len(text) + 1
    joined = "\0".join(texts).lower()
    counts: list[dict[int, int]] = [{} for _ in texts]
    for term, (key, prefix) in enumerate(keys):
        found = joined.find(key)
        while found >= 0:
            end = found + len(key)
            if _whole(joined, found, end, prefix):
                tf = counts[bisect_right(starts, found) - 1]
                tf[term] = tf.get(term, 0) + 1
            found = joined.find(key, end)
    n = len(texts)
    df: dict[int, int] = {}
    for tf in counts:
        for term in tf:
            df[term] = df.get(term, 0) + 1
    idf = {t: math.log(1.0 + (n - d + 0.5) / (d + 0.5)) for t, d in df.items()}
    avg = (at - n) / n or 1.0  # mean characters per text: BM25's length norm, without split
    scores = []
    for tf, text in zip(counts, texts, strict=True):
        norm = _K1 * (1.0 - _B + _B * len(text) / avg)
        scores.append(sum(idf[t] * c * (_K1 + 1.0) / (c + norm) for t, c in tf.items()))
    return scores


def _own_chars(hit: HitView) -> int:
    return sum(len(text) for text in content_texts(hit.content))


def _context_chars(hit: HitView) -> int:
    context = (hit.metadata or {}).get(CONTEXT_FIELD)
    return len(context) if isinstance(context, str) else 0


def context_led(hits: Sequence[HitView], share: float = CONTEXT_SHARE) -> bool:
    """Whether ``hits`` (one session's) hold at least ``share`` times their own text's
    characters in their contexts: found mostly through what was said around them."""
    context = sum(_context_chars(h) for h in hits)
    return context > 0 and context >= share * sum(_own_chars(h) for h in hits)


def turn_focused(hits: Sequence[HitT], query: str, weight: float = TURN_WEIGHT,
                 pool: int = TURN_POOL) -> list[HitT]:
    """``hits`` (best first) with each context-led session's hits among the first ``pool``
    re-ordered within the places the session holds; the rest keep their place. Scores
    untouched."""
    head = list(hits[:pool])
    if weight <= 0:
        return list(hits)
    places: dict[str, list[int]] = {}
    for rank, hit in enumerate(head):
        session = session_of(hit)
        if session is not None:
            places.setdefault(session, []).append(rank)
    shared = [p for p in places.values()
              if len(p) > 1 and context_led([head[r] for r in p])]
    if not shared:
        return list(hits)
    own = own_scores(query, head)
    out = list(head)
    for slots in shared:
        by_own = sorted(slots, key=lambda r: (-own[r], r))
        own_rank = {r: i for i, r in enumerate(by_own)}
        fused = sorted(range(len(slots)), key=lambda i: (
            -(1.0 / (DEFAULT_RRF_K + i) + weight / (DEFAULT_RRF_K + own_rank[slots[i]])), i))
        for place, i in zip(slots, fused, strict=True):
            out[place] = head[slots[i]]
    return out + list(hits[pool:])


@dataclass(frozen=True)
class TurnFocus:
    """The rule: within a context-led session, the turn whose own words match the question
    takes the session's first place (``turn_weight``); asks for no pool."""

    name: str = "turn_focus"
    settings: tuple[str, ...] = ("turn_weight",)

    def pool(self, context: RecallContext, found: Sequence[HitView] | None, asked: int) -> int:
        return 0

    def apply(self, hits: Sequence[HitT], context: RecallContext) -> list[HitT]:
        return turn_focused(hits, context.req.query, context.settings.turn_weight)


RULE = TurnFocus()
