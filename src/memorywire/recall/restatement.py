"""Restated facts are one answer: a turn that says again what a higher hit of its session
said yields its place to the next distinct hit.

People repeat themselves within a conversation: a user states a goal, and three turns later
says it again in nearly the same words ("focus on completing my daily and weekly challenges
to earn more experience points and level up faster"). Both turns match the question alike
and session evidence lifts them together, so the second copy takes a place in the first k
that a turn saying something else could hold, and a question that needs two distinct turns
of the session (the old goal and the new one) loses the second. A near-copy of a hit that
is already returned is not a new answer.

So, among the first :data:`DUPLICATE_POOL` hits (best first), a hit whose session already has
a higher hit kept is a *restatement* when at least ``share`` of its word 5-grams occur in one
of those kept hits; a restatement moves behind the next hit that is not one (it stays in the
list, just below the distinct hit that follows it). Only a hit's own text is compared (its
content, not ``metadata.context``: two turns with the same reply are not the same
statement), only within one session (:func:`memorywire.recall.session_evidence.session_of`),
and a text of fewer than five words has no 5-grams and is never a restatement. Hits without a
session, and sessions with one hit, keep their places; scores are untouched.

Why word 5-grams and not the stored vectors: MiniLM puts two different turns of one session
on one topic as close together as a restatement, so a cosine rule, tried on LongMemEval S
dev120, never gained a question and lost several, while shared 5-grams of the turn's own
words single out a sentence said twice. The rule therefore reads only what every store's
hits carry, and behaves identically on SQLite, PostgreSQL and the in-memory store.

Why behind the next distinct hit and not behind the first k or the pool: the copy still says
something relevant, and which copy the reader (or a benchmark's marks) wants is not known;
moving every copy behind the pool lost LongMemEval oracle questions whose marked turn was
the lower copy, and moving it one place traded gains for losses (docs/benchmarks.md,
"dup19").

Off by default (``duplicate_share`` 0): no share gains or loses more than one question on
any benchmark, and one question at a threshold set between two pairs' shares is not evidence
that it generalises (the grid: docs/benchmarks.md, "dup19").
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from memorywire.core.timeline import HitT, HitView
from memorywire.recall.rule import RecallContext
from memorywire.recall.session_evidence import SESSION_POOL, session_of
from memorywire.recall.settings import DUPLICATE_SHARE
from memorywire.recall.substance_prior import content_texts

__all__ = ["DUPLICATE_POOL", "DUPLICATE_SHARE", "GRAM", "RULE", "Restatement", "restated_last",
           "word_grams"]

#: How many hits (best first) are looked at: the session evidence pool.
DUPLICATE_POOL = SESSION_POOL
#: Words per compared sequence.
GRAM = 5
_WORD = re.compile(r"\w+")


def word_grams(text: str, n: int = GRAM) -> frozenset[tuple[str, ...]]:
    """The lower-cased word ``n``-grams of ``text`` (none for fewer than ``n`` words).

    Built by ``zip`` over shifted word lists (the tuples made in C): a recall's pool holds
    tens of thousands of words, and a comprehension slicing each n-gram cost three times as
    much."""
    words = _WORD.findall(text.lower())
    return frozenset(zip(*(words[i:] for i in range(n)), strict=False))


def _grams(hit: HitView) -> frozenset[tuple[str, ...]]:
    return word_grams(" ".join(content_texts(hit.content)))


def restated_last(hits: Sequence[HitT], share: float = DUPLICATE_SHARE,
                  pool: int = DUPLICATE_POOL) -> list[HitT]:
    """``hits`` (best first) with each restatement among the first ``pool`` moved behind
    the next hit that is not one; the rest keep their order. Scores untouched."""
    if share <= 0:
        return list(hits)
    head = hits[:pool]
    sessions = [session_of(h) for h in head]
    # only a session with two hits or more can hold a restatement: the others' texts are
    # never read (most of a long conversation's pool)
    shared = {s for s, n in Counter(sessions).items() if s is not None and n > 1}
    if not shared:
        return list(hits)
    kept: dict[str, list[frozenset[tuple[str, ...]]]] = {}
    out: list[HitT] = []
    waiting: list[HitT] = []
    for hit, session in zip(head, sessions, strict=True):
        if session in shared:
            grams = _grams(hit)
            if grams and any(len(grams & other) >= share * len(grams)
                             for other in kept.get(session, ())):
                waiting.append(hit)
                continue
            kept.setdefault(session, []).append(grams)
        out.append(hit)
        out.extend(waiting)
        waiting.clear()
    return out + waiting + list(hits[pool:])


@dataclass(frozen=True)
class Restatement:
    """The rule: a hit restating a higher hit of its session yields its place to the next
    distinct hit (``duplicate_share``; off by default); asks for no pool."""

    name: str = "restatement"
    settings: tuple[str, ...] = ("duplicate_share",)

    def pool(self, context: RecallContext, found: Sequence[HitView] | None, asked: int) -> int:
        return 0

    def apply(self, hits: Sequence[HitT], context: RecallContext) -> list[HitT]:
        return restated_last(hits, context.settings.duplicate_share)


RULE = Restatement()
