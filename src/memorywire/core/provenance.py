"""Derivation edges: what a memory was made from, so "what came from X" is a question a
plain listing answers.

A derived memory carries ``metadata.derived_from`` (the ids whose content went into it) and
``metadata.derived_sources`` (those parents' ``source`` values, and their own derived
sources). The sources travel with the derivation because a parent absorbed by a merge is
deleted: recovery by source must still find the memory it flowed into.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Protocol

__all__ = ["DERIVED_FROM", "DERIVED_SOURCES", "Parent", "derived_from", "derived_sources",
           "with_derivation"]

DERIVED_FROM = "derived_from"
DERIVED_SOURCES = "derived_sources"


class Parent(Protocol):
    @property
    def id(self) -> str: ...

    @property
    def source(self) -> str | None: ...

    @property
    def metadata(self) -> Mapping[str, Any] | None: ...


def _strings(raw: Any) -> list[str]:
    return [x for x in raw if isinstance(x, str)] if isinstance(raw, list) else []


def derived_from(metadata: Mapping[str, Any] | None) -> list[str]:
    return _strings((metadata or {}).get(DERIVED_FROM))


def derived_sources(metadata: Mapping[str, Any] | None) -> list[str]:
    return _strings((metadata or {}).get(DERIVED_SOURCES))


def with_derivation(metadata: Mapping[str, Any], parents: Iterable[Parent]) -> dict[str, Any]:
    """``metadata`` plus the parents' ids and sources (and what they were derived from)."""
    out = dict(metadata)
    ids = derived_from(metadata)
    sources = derived_sources(metadata)
    for p in parents:
        ids.extend([p.id, *derived_from(p.metadata)])
        if p.source is not None:
            sources.append(p.source)
        sources.extend(derived_sources(p.metadata))
    out[DERIVED_FROM] = list(dict.fromkeys(ids))
    if sources:
        out[DERIVED_SOURCES] = sorted(set(sources))
    return out
