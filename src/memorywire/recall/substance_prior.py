"""Substance prior: a memory that states something outranks an equally ranked remark.

A conversation written one turn per memory is full of short remarks ("Wow, thanks John!",
"That sounds fun, what did you read?") between the turns that state facts. Both lists of
the hybrid search favour the remarks: the full-text list because BM25 divides by a turn's
length, the vector list because a short remark that repeats the question's topic word sits
as close to the question as a long turn whose words are spread over the facts it states.
So the answer to "What books has John read?" (a turn naming "Dune" among thirty other
words) ranks below "Books can be so captivating!".

On LoCoMo (conversations 0-4, categories 1-4, the store's order) a hit of at least
:data:`SUBSTANCE_WORDS` words holds evidence several times as often as a shorter one at the
same ranks (docs/benchmarks.md, "recall30": the shares). The prior is that signal, soft, by
rank fusion like the subject boost: the store's order is one list (RRF,
k = 60), the hits of at least :data:`SUBSTANCE_WORDS` words (in the store's order) a second
list of weight :data:`SUBSTANCE_WEIGHT`. It re-ranks only the hits the recall already
fetched (no search of its own), and scores are untouched. When no hit, or every hit, is
that long (a store of short facts, a store of long documents) the order is unchanged, so
the prior only acts where lengths are mixed.

Words are what whitespace separates (``str.split``: the check runs on every hit of the pool
of every recall, where a regex cost too much, docs/benchmarks.md "hop19b"): a text written
without spaces between words (Chinese, Japanese) counts as few words, so such a store is
left in its order rather than judged on a measure that does not fit it.
The values are fitted on LoCoMo conversations 0-4 and checked on 5-9 and LongMemEval
(docs/benchmarks.md, "hop19b").
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from memorywire.core.fusion import boosted
from memorywire.core.timeline import HitT, HitView
from memorywire.recall.rule import RecallContext
from memorywire.recall.settings import SUBSTANCE_WEIGHT

__all__ = ["RULE", "SUBSTANCE_WEIGHT", "SUBSTANCE_WORDS", "SubstancePrior", "content_texts",
           "substance_ranked", "substantive"]

#: How many words make a hit substantive. Fitted with the weight, on a flat optimum
#: (docs/benchmarks.md, "hop19b").
SUBSTANCE_WORDS = 25


def content_texts(value: Any) -> Iterator[str]:
    """The strings inside a content (a structured one's values, not its keys, which are the
    same few field names in every memory of its kind)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from content_texts(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from content_texts(item)


def substantive(hit: HitView, words: int = SUBSTANCE_WORDS) -> bool:
    """Whether the hit's content has at least ``words`` words."""
    if isinstance(hit.content, str):  # the common case, without the generator
        # At most ``words`` pieces: the rest of a long turn stays one piece, unsplit.
        return len(hit.content.split(None, max(words - 1, 0))) >= words
    count = 0
    for text in content_texts(hit.content):
        count += len(text.split())
        if count >= words:
            return True
    return False


def substance_ranked(hits: Sequence[HitT], weight: float = SUBSTANCE_WEIGHT) -> list[HitT]:
    """``hits`` (best first) re-ranked with the substantive ones boosted; scores untouched."""
    if weight <= 0:
        return list(hits)
    return boosted(hits, [substantive(h) for h in hits], weight)


@dataclass(frozen=True)
class SubstancePrior:
    """The rule: a hit long enough to state something rises (``substance_weight``); it
    re-ranks what the other rules fetched and asks for no pool."""

    name: str = "substance_prior"
    settings: tuple[str, ...] = ("substance_weight",)

    def pool(self, context: RecallContext, found: Sequence[HitView] | None, asked: int) -> int:
        return 0

    def apply(self, hits: Sequence[HitT], context: RecallContext) -> list[HitT]:
        return substance_ranked(hits, context.settings.substance_weight)


RULE = SubstancePrior()
