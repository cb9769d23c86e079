"""Context keys: what a conversational memory is found *by*, beyond its own words.

A dialogue turn rarely repeats the words of the question it answers; the turn before or after
it often does ("What did you adopt?" / "A puppy, last week!"). A memory may therefore carry
``metadata.context``: free text (typically the previous and next turns of the same session,
or a speaker and session date) that the full-text key of the memory includes, so a query
matching the context finds the turn. The content, the vector and what recall returns are
unchanged; the context stays visible in the hit's metadata.

Measured on LoCoMo (turns as units, categories 1-4): the previous and next turn of the same
session as context lifts SqliteStore's R@5 from 0.474 to the numbers in docs/benchmarks.md.
A memory without ``metadata.context`` is indexed exactly as before, so ordinary facts are
unaffected.

Only a string is accepted: anything else under that key is refused with ``invalid_request``
naming the field, rather than indexed as its JSON or silently skipped.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from memorywire.core.content import embed_text
from memorywire.errors import InvalidRequest
from memorywire.wire.models import MemoryType

__all__ = ["CONTEXT_FIELD", "MAX_CONTEXT_CHARS", "check_context", "context_of", "lexical_text"]

#: The metadata key whose text joins a memory's full-text key.
CONTEXT_FIELD = "context"
#: Longest context indexed: a few neighbouring turns, not a whole session.
MAX_CONTEXT_CHARS = 8000


def context_of(metadata: Mapping[str, Any] | None) -> str | None:
    """The memory's context text, or ``None`` when it carries none."""
    if not metadata or CONTEXT_FIELD not in metadata:
        return None
    value = metadata[CONTEXT_FIELD]
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidRequest(
            f"metadata.{CONTEXT_FIELD} must be a string (the text a memory is also found by), "
            f"got {type(value).__name__}")
    if len(value) > MAX_CONTEXT_CHARS:
        raise InvalidRequest(
            f"metadata.{CONTEXT_FIELD} is {len(value)} characters; at most "
            f"{MAX_CONTEXT_CHARS} are indexed")
    return value or None


def check_context(metadata: Mapping[str, Any] | None) -> None:
    """Refuse an unusable ``metadata.context`` before anything is written."""
    context_of(metadata)


def lexical_text(mtype: MemoryType, stored: str, metadata: Mapping[str, Any] | None) -> str:
    """The full-text key of a memory: its embedded text, then its context if it has one."""
    text = embed_text(mtype, stored)
    context = context_of(metadata)
    return text if context is None else f"{text}\n{context}"
