"""Contradiction candidates without an LLM: "same subject, different value".

Two statements contradict when they talk about the same subject but give it a different
value, or when they agree except for a negation. Words are split (stop words dropped) into
*subject* words (lower-case: "favourite", "airline", "lives", "cats") and *value* words
(names and numbers: capitalised after the first word, or holding a digit: "KLM", "Berlin",
"3", "S24"):

- similarity = Jaccard overlap of the subject words; a candidate needs at least
  :data:`MIN_SIMILARITY` (more than one shared subject word in three);
- and either a negation in exactly one side, or each side having a word the other lacks,
  neither more than :data:`MAX_VALUE_WORDS` (a value is a name, a number, a short phrase; a
  long difference is another statement, and a pure addition is more detail, not a change).

Unrelated near neighbours share the frame but not the subject ("favourite airline is KLM" /
"favourite hotel chain is Hilton": one subject word in four), so they stay below the bar.
Known blind spots: a paraphrase with no subject word in common ("works at X" → "has a new
job at Y") is missed, and two subjects sharing a frame word can be confused. The why string
names what differs, for the reviewer.
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

__all__ = ["MIN_SIMILARITY", "Candidate", "find_conflicts"]

MIN_SIMILARITY = 0.4
MAX_VALUE_WORDS = 3

_WORD = re.compile(r"[A-Za-z0-9]+(?:[.'-][A-Za-z0-9]+)*")
_NEGATIONS = frozenset({"not", "no", "never", "don't", "doesn't", "isn't", "didn't", "won't",
                        "aren't", "wasn't", "cannot", "can't", "nor", "without"})
_STOP = frozenset(" ".join((
    "a an the is are was were be been being am of to in on at for with by from and or as that",
    "this these those it its it's user user's users he she they we i you his her their our my",
    "your me him them has have had do does did will would should can could now currently also",
    "just still then there here so very really",
)).split())


@dataclass(frozen=True)
class Candidate:
    id: str
    similarity: float
    why: str


@dataclass(frozen=True)
class _Parsed:
    subject: frozenset[str]
    values: frozenset[str]
    negated: bool
    words: frozenset[str]  # subject | values, kept because every comparison needs it


@lru_cache(maxsize=65536)
def _parse(text: str) -> _Parsed:
    """Content words split into *subject* words (lower-case) and *value* words (names and
    numbers: capitalised after the first word, or holding a digit)."""
    tokens = _WORD.findall(text)
    subject, values, negated = set(), set(), False
    for n, tok in enumerate(tokens):
        low = tok.lower()
        if low in _NEGATIONS:
            negated = True
        elif low in _STOP:
            continue
        elif any(ch.isdigit() for ch in tok) or (n > 0 and tok[0].isupper()):
            values.add(low)
        else:
            subject.add(low)
    return _Parsed(frozenset(subject), frozenset(values), negated, frozenset(subject | values))


def judge(old: str, new: str) -> tuple[float, str] | None:
    """``(similarity, why)`` when ``new`` looks like a changed value of ``old``; the
    similarity is the Jaccard overlap of their subject words."""
    a, b = _parse(old), _parse(new)
    sim = _score(a, b)
    return None if sim is None else (sim, _why(a, b))


def _score(a: _Parsed, b: _Parsed) -> float | None:
    """The similarity when ``b`` looks like a changed value of ``a`` (see :func:`judge`);
    split from the why string so a scan builds strings only for the candidates it keeps."""
    if not a.subject or not b.subject:
        return None
    shared = len(a.subject & b.subject)
    sim = shared / (len(a.subject) + len(b.subject) - shared)
    if sim < MIN_SIMILARITY:
        return None
    if a.negated != b.negated:
        return sim
    old_only = a.words - b.words
    new_only = b.words - a.words
    if not old_only or not new_only:
        return None  # identical, or only added detail: not a different value
    if len(old_only) > MAX_VALUE_WORDS or len(new_only) > MAX_VALUE_WORDS:
        return None
    return sim


def _why(a: _Parsed, b: _Parsed) -> str:
    about = ", ".join(sorted(a.subject & b.subject))
    if a.negated != b.negated:
        return f"same subject ({about}), negation differs"
    old_only = sorted(a.words - b.words)
    new_only = sorted(b.words - a.words)
    kind = "number" if any(w.isdigit() for w in old_only + new_only) else "value"
    return f"same subject ({about}), {kind} differs: {' '.join(old_only)} → " \
           f"{' '.join(new_only)}"


def find_conflicts(new: str, stored: Iterable[tuple[str, str]],
                   limit: int = 5) -> list[Candidate]:
    """The stored ``(id, text)`` pairs that ``new`` seems to contradict, most similar first.

    Scores every pair but writes the why string only for the ``limit`` kept: in a scope of
    look-alike notes most pairs qualify, and the strings cost more than the scores.
    """
    b = _parse(new)
    scored = []
    for id, text in stored:
        a = _parse(text)
        if b.subject.isdisjoint(a.subject):
            continue  # the common case, decided without building a verdict
        sim = _score(a, b)
        if sim is not None:
            scored.append((-round(sim, 4), id, a))
    return [Candidate(id=id, similarity=-neg, why=_why(a, b))
            for neg, id, a in heapq.nsmallest(limit, scored, key=lambda t: (t[0], t[1]))]
