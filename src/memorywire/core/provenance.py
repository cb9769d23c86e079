"""Derivation edges: what a memory was made from, so "what came from X" is a question a
plain listing answers.

A derived memory holds a typed ``derived_from`` edge (see :mod:`memorywire.core.content`) to
each memory whose content went into it, and ``metadata.derived_sources``: those parents'
``source`` values and their own derived sources. The sources travel with the derivation
because a parent absorbed by a merge is deleted: recovery by source must still find the
memory its content flowed into.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Protocol

from memorywire.core.content import Edge, edges_of, edges_to_storage

__all__ = ["CASCADE_EDGES", "DERIVED_FROM", "DERIVED_SOURCES", "SUPERSEDES", "Parent",
           "cascade_parents", "derived_from", "derived_sources", "descendants",
           "with_derivation"]

#: The edge type naming a parent.
DERIVED_FROM = "derived_from"
#: The edge a remember with ``supersedes`` records from the newer memory to the older one.
SUPERSEDES = "supersedes"
#: What a cascading forget follows: derivations, and supersession, because a newer version of
#: a fact restates it (erasing a fact erases its later versions; the older ones stay).
CASCADE_EDGES = frozenset({DERIVED_FROM, SUPERSEDES})
#: The metadata key listing the sources a memory's content came from through derivation.
DERIVED_SOURCES = "derived_sources"


class Parent(Protocol):
    @property
    def id(self) -> str: ...

    @property
    def source(self) -> str | None: ...

    @property
    def metadata(self) -> Mapping[str, Any] | None: ...


def derived_from(metadata: Mapping[str, Any] | None) -> list[str]:
    """The ids a memory's ``derived_from`` edges point at."""
    return [e.id for e in edges_of(metadata) if e.type == DERIVED_FROM]


def cascade_parents(metadata: Mapping[str, Any] | None) -> list[str]:
    """The ids whose forgetting with ``cascade`` takes this memory along."""
    return [e.id for e in edges_of(metadata) if e.type in CASCADE_EDGES]


def derived_sources(metadata: Mapping[str, Any] | None) -> list[str]:
    raw = (metadata or {}).get(DERIVED_SOURCES)
    return [x for x in raw if isinstance(x, str)] if isinstance(raw, list) else []


def with_derivation(metadata: Mapping[str, Any], parents: Iterable[Parent]) -> dict[str, Any]:
    """``metadata`` plus a ``derived_from`` edge to each parent and the parents' sources."""
    out = dict(metadata)
    edges = edges_of(metadata)
    sources = derived_sources(metadata)
    for p in parents:
        edges.append(Edge(p.id, DERIVED_FROM))
        if p.source is not None:
            sources.append(p.source)
        sources.extend(derived_sources(p.metadata))
    out["links"] = edges_to_storage(edges)
    if sources:
        out[DERIVED_SOURCES] = sorted(set(sources))
    return out


def descendants(memories: Iterable[Parent], seeds: Iterable[str]) -> list[str]:
    """Every memory derived (or superseding, see ``CASCADE_EDGES``), directly or through
    others, from ``seeds``; in ``memories`` order. This is what a cascading forget removes
    with the seeds: a derived memory may quote any parent, so it goes whether or not it had
    other parents too."""
    rows = list(memories)
    gone = set(seeds)
    out: list[str] = []
    changed = True
    while changed:
        changed = False
        for r in rows:
            if r.id not in gone and gone.intersection(cascade_parents(r.metadata)):
                gone.add(r.id)
                out.append(r.id)
                changed = True
    order = {r.id: i for i, r in enumerate(rows)}
    return sorted(out, key=order.__getitem__)
