"""Duplicates on write, as pure rules: when a remember is a memory the scope already holds.

A write **is** a stored memory (the store answers with it and writes nothing) when the two
have the same agent, user and type, the same content once normalised, and the same metadata
as the store would keep it (typed fields, validity and links folded in, see
``core.content.fold_request`` and ``core.timeline.time_metadata``). Normalised means Unicode
NFC, case-folded and every run of white space one space, so "The user  is vegan." and "the
user is Vegan." are one memory; a procedure compares by its canonical JSON, unfolded (state
names are case-sensitive identifiers). Metadata takes part because the same words can be two
memories: a conversation's "Thanks!" in two sessions, an event that happened twice with its
own ``event_time``. Confidence, source and expiry do not: the stored memory keeps its own.

A **near-duplicate** is a current memory of the same scope and type that the write is stored
beside: one with the same normalised content that the write could not be (other metadata, a
caller-named ``id``, ``allow_duplicate``), at similarity 1.0; one with the same words in the
same order, punctuation aside ("green tea." / "green tea!"), at its cosine where the store
gives cosines, else 1.0; or one whose stored vector is within :data:`NEAR_DUPLICATE_COSINE` of
the new one's (where the store gives cosines: SQLite, PostgreSQL, in-memory). A memory the
contradiction detector names in ``conflicts`` is an older value of the fact, not a copy, and
is left out. Both are reported, never acted on.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from memorywire.core.text_lru import TextLru
from memorywire.wire.models import MemoryType

__all__ = ["NEAR_DUPLICATE_COSINE", "NEAR_DUPLICATE_LIMIT", "TEXTS_CACHED", "TEXT_CHARS_CACHED",
           "Likeness", "content_key", "likeness", "near_duplicates", "same_metadata"]

#: The cosine of two stored vectors from which a memory is reported as a near-duplicate. With
#: MiniLM a sentence and itself with a word added or changed in punctuation sit above it;
#: two values of one slot ("favourite airline is KLM" / "... Ryanair") sit below.
NEAR_DUPLICATE_COSINE = 0.95
#: At most this many near-duplicates are reported, the closest first.
NEAR_DUPLICATE_LIMIT = 5


_WORD = re.compile(r"\w+")


def _digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


#: Texts whose digests :func:`_keys` keeps, and their characters in all: a scope's worth, as
#: for the contradiction rules' parses (``contradiction.STATEMENTS_CACHED``, issue 35): a
#: write's candidates spread over the whole scope, and a cache smaller than the scope made
#: later writes cost more. An entry holds its text and two 16-byte digests.
TEXTS_CACHED = 1 << 17
TEXT_CHARS_CACHED = 1 << 24


def _text_keys(text: str) -> tuple[bytes, bytes | None]:
    """Digests of a text's normalised content and of its words (``None``: it has none):
    cached, as a write compares its text with each of the scope's newest memories, mostly
    the same texts from one write to the next; digests, so a cache of long texts stays
    small."""
    folded = unicodedata.normalize("NFC", text).casefold()
    words = _WORD.findall(folded)
    return _digest(" ".join(folded.split())), _digest(" ".join(words)) if words else None


_keys = TextLru(_text_keys, TEXTS_CACHED, TEXT_CHARS_CACHED)


def content_key(mtype: MemoryType, stored: str) -> bytes:
    """What two contents must share to be one memory (``stored``: the text a store keeps):
    a 128-bit digest of the normalised text (a procedure's canonical JSON as it is)."""
    return _digest(stored) if mtype is MemoryType.PROCEDURAL else _keys(stored)[0]


@dataclass(frozen=True)
class Likeness:
    """The candidates with a write's content, and those with its words (content aside)."""

    identical: list[str]
    same_words: list[str]


def likeness(mtype: MemoryType, stored: str,
             candidates: Iterable[tuple[str, str]]) -> Likeness:
    """Which ``candidates`` (``(id, stored text)``) have ``stored``'s content, and which only
    its words (punctuation aside; never for a procedure)."""
    if mtype is MemoryType.PROCEDURAL:
        return Likeness([mid for mid, text in candidates if text == stored], [])
    key, words = _keys(stored)
    rows = list(candidates)
    # Keys of every candidate first, then only the few that match are looked at (a write
    # into a full scope compares 1,000 texts).
    keys = list(map(_keys, [text for _, text in rows]))
    # A write's own words key never equals None, so a text without words never matches it.
    hits = [n for n, (k, w) in enumerate(keys) if k == key or w == words] \
        if words is not None else [n for n, (k, _) in enumerate(keys) if k == key]
    identical = [rows[n][0] for n in hits if keys[n][0] == key]
    same_words = [rows[n][0] for n in hits if keys[n][0] != key]
    return Likeness(identical, same_words)


def same_metadata(written: Mapping[str, Any] | None, stored: Mapping[str, Any] | None) -> bool:
    """Whether a write's metadata (as the store would keep it) is a stored memory's. An empty
    object and none are the same."""
    return dict(written or {}) == dict(stored or {})


def near_duplicates(like: Likeness, closeness: Mapping[str, float] | None,
                    skip: Iterable[str] = ()) -> list[tuple[str, float]]:
    """``(id, similarity)`` of what a stored write is reported beside, closest first: the
    identical (at 1.0), those with the same words (at their cosine, else 1.0) and, with
    ``closeness`` (each candidate's cosine to the new memory), every one at
    :data:`NEAR_DUPLICATE_COSINE` or above; none of ``skip`` (the write's own id, the
    memories it supersedes or contradicts)."""
    left_out = set(skip)
    cos = closeness or {}
    found = {mid: 1.0 for mid in like.identical if mid not in left_out}
    for mid in like.same_words:
        if mid not in left_out:
            found[mid] = round(min(max(float(cos.get(mid, 1.0)), 0.0), 1.0), 4)
    for mid in [m for m, sim in cos.items() if sim >= NEAR_DUPLICATE_COSINE]:
        if mid not in left_out and mid not in found:
            found[mid] = round(min(float(cos[mid]), 1.0), 4)
    ranked = sorted(found.items(), key=lambda item: (-item[1], item[0]))
    return ranked[:NEAR_DUPLICATE_LIMIT]
