"""Contradiction candidates without an LLM: "same subject, different value".

Two statements contradict when most of their content words agree (they talk about the same
subject) but a few differ (the value changed), or when they agree except for a negation.
Concretely, on lower-cased content words (stop words dropped, numbers kept):

- *shared* = words in both, *old_only* / *new_only* = words in one only;
- similarity = ``|shared| / |shared ∪ old_only ∪ new_only|`` (Jaccard);
- a single number swapped for another with everything else equal is a candidate;
- otherwise a candidate needs similarity ≥ :data:`MIN_SIMILARITY`, at least two shared words, and
  either a negation in exactly one side, or both sides having a differing word with neither
  side differing by more than :data:`MAX_VALUE_WORDS` words (a value is a name, a number, a
  short phrase; a long difference is a different statement, not a changed value).

Unrelated near neighbours ("favourite airline is KLM" / "favourite hotel is Hilton") share
the frame but not the subject word, so their similarity stays below the bar. The why string
names what differs, for the reviewer.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["MIN_SIMILARITY", "Candidate", "find_conflicts"]

MIN_SIMILARITY = 0.5
MAX_VALUE_WORDS = 3

_WORD = re.compile(r"[a-z0-9]+(?:[.'][a-z0-9]+)*")
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


def _words(text: str) -> tuple[set[str], bool]:
    tokens = _WORD.findall(text.lower())
    negated = any(t in _NEGATIONS for t in tokens)
    return {t for t in tokens if t not in _STOP and t not in _NEGATIONS}, negated


def judge(old: str, new: str) -> tuple[float, str] | None:
    """``(similarity, why)`` when ``new`` looks like a changed value of ``old``."""
    old_w, old_neg = _words(old)
    new_w, new_neg = _words(new)
    shared = old_w & new_w
    union = old_w | new_w
    if not shared:
        return None
    sim = len(shared) / len(union)
    old_only, new_only = sorted(old_w - new_w), sorted(new_w - old_w)
    if old_only and new_only and all(w.isdigit() for w in old_only + new_only) \
            and len(old_only) == len(new_only) == 1:
        return sim, f"same subject ({', '.join(sorted(shared))}), number differs: " \
                    f"{old_only[0]} → {new_only[0]}"
    if len(shared) < 2 or sim < MIN_SIMILARITY:
        return None
    if old_neg != new_neg:
        return sim, "negation differs" + (f" ({', '.join(old_only + new_only)})"
                                          if old_only or new_only else "")
    if not old_only or not new_only:
        return None
    if len(old_only) > MAX_VALUE_WORDS or len(new_only) > MAX_VALUE_WORDS:
        return None
    kind = "number" if any(w.isdigit() for w in old_only + new_only) else "value"
    return sim, f"same subject ({', '.join(sorted(shared))}), {kind} differs: " \
                f"{' '.join(old_only)} → {' '.join(new_only)}"


def find_conflicts(new: str, stored: Iterable[tuple[str, str]],
                   limit: int = 5) -> list[Candidate]:
    """The stored ``(id, text)`` pairs that ``new`` seems to contradict, most similar first."""
    out = []
    for id, text in stored:
        verdict = judge(text, new)
        if verdict is not None:
            out.append(Candidate(id=id, similarity=round(verdict[0], 4), why=verdict[1]))
    out.sort(key=lambda c: (-c.similarity, c.id))
    return out[:limit]
