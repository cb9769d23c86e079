"""Entity-aware ranking: a question that names a person ranks that person's memories higher.

"What did Caroline research?" is almost always answered by something Caroline said or
something said about her: on LoCoMo nearly every evidence turn of a question that names one
speaker was spoken by that speaker (docs/benchmarks.md, round 7 "entities"). Neither list of
the hybrid search knows that: the name is one word of the full-text key among many, and it
moves the query vector towards every turn of a conversation between two people equally. The memory's
*subject* is the missing signal, and a store already holds it when the writer said so:

* ``metadata.speaker`` — who said it (a conversation turn; LoCoMo's loader writes it);
* ``metadata.entity_name`` — what the memory is about (the key ``merge`` resolves entity
  names against, wire-v0).

A memory's subject words are the words of those values, lower-cased. The query names a
subject when one of its :func:`memorywire.core.entity_gate.named_words` (words written with a
capital, as names are) is such a word. The boost is soft, by rank fusion like the time boost:
the store's order is one list, the memories whose subject the query names (in the store's
order) a second list of weight :data:`SUBJECT_WEIGHT`, fused with RRF (k = 60). When no hit,
or every hit, has a named subject (a question about both people of a conversation, a store
whose memories carry no subject) the order is unchanged. Scores are never changed.

When the query writes a name and the store's first answer holds memories with a subject, the
store is asked again for :data:`SUBJECT_POOL` hits, so that a named subject's memory ranked
below ``k`` can move up (:func:`needs_pool`); a store whose memories carry no subject is
asked once, as before, and its order never changes. The values are fitted on LoCoMo
conversations 0-4 (docs/benchmarks.md, round 7).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from memorywire.core.entity_gate import named_words
from memorywire.core.fusion import boosted
from memorywire.core.timeline import HitT, HitView
from memorywire.recall.rule import RecallContext
from memorywire.recall.settings import SUBJECT_WEIGHT

__all__ = ["RULE", "SUBJECT_KEYS", "SUBJECT_POOL", "SUBJECT_WEIGHT", "SubjectBoost", "names_in",
           "names_of", "needs_pool", "subject_ranked", "subject_words"]

#: How many hits a store is asked for when the query names someone (so the boost has
#: memories below ``k`` to lift): the smallest pool at the best recall of the fit
#: (docs/benchmarks.md, round 7 "entities").
SUBJECT_POOL = 100
#: The metadata keys whose string values name a memory's subject.
SUBJECT_KEYS = ("speaker", "entity_name")
_WORD = re.compile(r"[^\W_]+", re.UNICODE)


def names_in(query: str, weight: float = SUBJECT_WEIGHT) -> frozenset[str]:
    """The names a boost of ``weight`` would look for in the memories' subjects (none when
    the boost is off)."""
    return named_words(query) if weight > 0 else frozenset()


def needs_pool(names: frozenset[str], hits: Sequence[HitView], k: int) -> bool:
    """Whether the store should be asked again for :data:`SUBJECT_POOL` hits: the query
    names someone, the first answer was asked for fewer (``k``), and some hit has a subject
    at all (a store that records none would only pay for a longer list it cannot re-rank)."""
    return bool(names) and k < SUBJECT_POOL and any(subject_words(h) for h in hits)


def subject_words(hit: HitView) -> frozenset[str]:
    """Lower-cased words of the hit's ``metadata.speaker`` and ``metadata.entity_name``."""
    meta = hit.metadata or {}
    words: frozenset[str] = frozenset()
    for key in SUBJECT_KEYS:
        value = meta.get(key)
        if isinstance(value, str):
            words |= _words(value)
    return words


@lru_cache(maxsize=4096)
def _words(value: str) -> frozenset[str]:
    """A subject value's lower-cased words; a conversation repeats its few speakers on every
    turn, and a pool re-ranks 100 of them per recall."""
    return frozenset(w.lower() for w in _WORD.findall(value))


def subject_ranked(hits: Sequence[HitT], names: frozenset[str],
                   weight: float = SUBJECT_WEIGHT) -> list[HitT]:
    """``hits`` (best first) re-ranked with the memories of a named subject boosted."""
    if not names or weight <= 0:
        return list(hits)
    inside = [bool(subject_words(h) & names) for h in hits]
    return boosted(hits, inside, weight)


def names_of(context: RecallContext) -> frozenset[str]:
    """The names the recall's question writes (once per recall; both subject rules read
    them)."""
    return context.derived("subject_boost.names", lambda: named_words(context.req.query))


@dataclass(frozen=True)
class SubjectBoost:
    """The rule: the memories of the person the question names first (``subject_weight``);
    asks for :data:`SUBJECT_POOL` hits when the question writes a name and the first answer
    holds memories with a subject."""

    name: str = "subject_boost"
    settings: tuple[str, ...] = ("subject_weight",)

    def pool(self, context: RecallContext, found: Sequence[HitView] | None, asked: int) -> int:
        if found is None or context.settings.subject_weight <= 0:
            return 0
        return SUBJECT_POOL if needs_pool(names_of(context), found, asked) else 0

    def apply(self, hits: Sequence[HitT], context: RecallContext) -> list[HitT]:
        weight = context.settings.subject_weight
        return subject_ranked(hits, names_of(context) if weight > 0 else frozenset(), weight)


RULE = SubjectBoost()
