"""Turning a free-text query into a safe FTS5 ``MATCH`` expression.

A recall query is prose, not FTS syntax: quotes, ``NEAR``, ``*``, ``-`` or a column filter
typed by a user must never reach FTS5 as operators (at best an error, at worst a different
query). Each remaining term is therefore emitted as a quoted string, stop words are dropped
so "what is my ..." does not match every row, and the terms are ORed so a paraphrase sharing
one rare word still ranks by BM25.
"""

from __future__ import annotations

import re

from memorywire.core.memo import ClearingMemo

__all__ = ["MAX_TERMS", "STOP_WORDS", "fts_query", "query_terms"]

MAX_TERMS = 16

_WORD = re.compile(r"[^\W_]+", re.UNICODE)

_STOP_TEXT = """
    a about above after again against all am an and any are as at be because been before being
    below between both but by can could did do does doing down during each few for from further
    had has have having he her here hers herself him himself his how i if in into is it its
    itself just me more most my myself no nor not now of off on once only or other our ours
    ourselves out over own same she should so some such than that the their theirs them
    themselves then there these they this those through to too under until up very was we were
    what when where which while who whom why will with would you your yours yourself yourselves
    s t d ll m re ve tell know anything something thing things does did please remember recall
"""
STOP_WORDS = frozenset(_STOP_TEXT.split())


#: Texts whose terms were already split (a recall splits its question and the same hit texts
#: several times, and the next recall of the scope meets the same hits).
_memo: ClearingMemo[tuple[str, int], tuple[str, ...]] = ClearingMemo(2048)


def query_terms(text: str, *, max_terms: int = MAX_TERMS) -> list[str]:
    """Lower-cased distinct content words in first-seen order, at most ``max_terms``."""
    key = (text, max_terms)
    terms = _memo.get(key)
    if terms is None:
        terms = _memo.put(key, _split(text, max_terms))
    return list(terms)


def _split(text: str, max_terms: int) -> tuple[str, ...]:
    seen: dict[str, None] = {}
    for word in _WORD.findall(text.lower()):
        if word in STOP_WORDS or word in seen:
            continue
        seen[word] = None
        if len(seen) >= max_terms:
            break
    return tuple(seen)


def _quote(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


def fts_query(text: str, *, max_terms: int = MAX_TERMS) -> str | None:
    """An OR of quoted terms, or ``None`` when nothing searchable is left."""
    terms = query_terms(text, max_terms=max_terms)
    if not terms:
        return None
    return " OR ".join(_quote(t) for t in terms)
