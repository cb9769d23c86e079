"""Is a question about someone answered, or only "about" them? Decided without the subject.

A question's *subject words* are the words that tell the scope's memories apart no better
than chance: a name the scope knows ("What is Marta's trade?" in Marta's memories), or a word
most of the scope holds ("the user" in mem0-style memories, "The user works as ..."). Such a
word carries most of the cosine between the question and every memory of the scope, so the
cosine floor cannot tell an answer from a memory that merely shares the subject: per-user
facts asked by meaning reach their answer at cosines as low as 0.2 while a question on a
topic never stored ("What is Marta's favourite colour?") reaches 0.4-0.7 on her memories
(docs/benchmarks.md, "rank31b").

So a store decides "nothing relevant" for such a question from what is left when the subject
is taken out:

* **Lexical evidence**: one of the best hits holds a subject word and one of the question's
  other content words (matched as :func:`memorywire.core.entity_gate.same_word` does); the
  list stands.
* **Masked meaning**: the question with its subject words cut out (the *masked* question,
  embedded once) is compared with the stored vectors of the scope's memories that hold a
  subject word. The list stands when the best cosine reaches ``SUBJECT_MIN_COSINE``, or stands
  ``SUBJECT_MIN_GAP`` above the median of those memories (an answer stands out among the
  person's memories; a question about something never stored is equally far from all).

When the list stands it is ranked with the floors off (every memory shares the subject, so
the floors would only cut answers at random); otherwise the answer is empty. A question with
nothing but its subject ("Tell me about Marta") is not judged here.

The two constants are the default MiniLM model's, fitted on the dev half of the per-user fact
corpus only (``benchmarks/facts.py``): the point of the trade curve where at most 1% of the
answerable dev questions come back empty. Another embedder needs its own.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from memorywire.core.entity_gate import held_words, named_words
from memorywire.core.relevance import RELEVANCE_SLOPE
from memorywire.core.textsearch import query_terms

__all__ = [
    "SUBJECT_AGREEMENT",
    "SUBJECT_MIN_COSINE",
    "SUBJECT_MIN_GAP",
    "SUBJECT_MIN_ROWS",
    "SUBJECT_RELEVANCE_MIDPOINT",
    "Subject",
    "lexical_evidence",
    "masked_stands_out",
    "subject_of",
    "subject_relevance",
]

#: The masked question answers something when its best cosine with a subject memory reaches
#: this (default MiniLM) ...
SUBJECT_MIN_COSINE = 0.22
#: ... or when that best cosine stands this far above the median over the subject memories.
SUBJECT_MIN_GAP = 0.08
#: The median says nothing over fewer memories than this; below it only the cosine decides.
SUBJECT_MIN_ROWS = 5

#: In a scope about the subject, the full-text list counts only when its best row shares this
#: many of the question's other words: one everyday word ("work", "home") shared with a
#: filler memory says nothing, and rank-only fusion would let it outvote the vector list.
SUBJECT_AGREEMENT = 2
#: A hit's ``relevance`` in a scope about the subject is 0.5 where its masked cosine stands
#: this far above the scope's median (dev half of the fact corpus: the hits at or above it
#: were right 86% of the time).
SUBJECT_RELEVANCE_MIDPOINT = 0.225

_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)


@dataclass(frozen=True)
class Subject:
    """A question split into its subject words and the rest of what it asks."""

    words: frozenset[str]
    rest: tuple[str, ...]
    masked: str


def subject_of(query: str, known: Iterable[str], common: Iterable[str]) -> Subject | None:
    """The question's subject: the names it writes (``named_words``) that are among
    ``known`` (words the scope holds), and its words among ``common`` (words most of the
    scope holds); ``None`` when it has none, or asks nothing beyond them."""
    known_set = frozenset(known)
    words = frozenset(w for w in named_words(query) if w in known_set) | frozenset(common)
    if not words:
        return None
    rest = tuple(t for t in query_terms(query) if t not in words)
    if not rest:
        return None
    masked = _TOKEN.sub(lambda m: "" if m.group(0).lower() in words else m.group(0), query)
    masked = " ".join(masked.replace("'s", " ").replace("\u2019s", " ").split())
    if not query_terms(masked):
        return None
    return Subject(words, rest, masked)


def lexical_evidence(subject: Subject, texts: Sequence[str]) -> bool:
    """Whether one of ``texts`` (the best hits' full-text keys) holds a subject word and
    one of the question's other words."""
    for text in texts:
        held = held_words(text)
        if any(held.holds(w) for w in subject.words) and any(
                held.matches(r) for r in subject.rest):
            return True
    return False


def masked_stands_out(cosines: npt.NDArray[np.float32]) -> bool:
    """Whether the masked question's cosines with the subject memories (unit vectors, so
    cosines) name something: the best reaches ``SUBJECT_MIN_COSINE``, or stands
    ``SUBJECT_MIN_GAP`` above their median (over at least ``SUBJECT_MIN_ROWS``)."""
    if cosines.size == 0:
        return False
    top = float(cosines.max())
    if top >= SUBJECT_MIN_COSINE:
        return True
    return cosines.size >= SUBJECT_MIN_ROWS and top - float(np.median(cosines)) >= SUBJECT_MIN_GAP


def subject_relevance(cosine: float, median: float) -> float:
    """A hit's relevance in a scope about the subject: how far its masked cosine stands
    above the scope's median, on the same logistic slope as
    :func:`memorywire.core.relevance.relevance`."""
    x = RELEVANCE_SLOPE * (cosine - median - SUBJECT_RELEVANCE_MIDPOINT)
    return 1.0 / (1.0 + math.exp(-x)) if x >= 0 else math.exp(x) / (1.0 + math.exp(x))
