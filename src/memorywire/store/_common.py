"""Helpers every store shares: embedder resolution, graph hops (the relevance floors'
defaults are recall settings: :mod:`memorywire.recall.settings`).

The content rules (``content_to_storage`` and friends) live in :mod:`memorywire.core.content`;
they are re-exported here for older imports.
"""

from __future__ import annotations

import importlib

from memorywire.core.content import (
    content_from_storage,
    content_to_storage,
    embed_text,
    links_of,
)
from memorywire.core.fusion import hop_distances
from memorywire.embed.base import Embedder
from memorywire.errors import CapabilityMissing

__all__ = [
    "content_from_storage",
    "content_to_storage",
    "embed_text",
    "links_of",
    "resolve_embedder",
    "shortest_hops",
]


def resolve_embedder(embedder: Embedder | None) -> Embedder:
    if embedder is not None:
        return embedder
    try:
        module = importlib.import_module("memorywire.embed")
        factory = module.default_embedder
    except (ImportError, AttributeError) as exc:
        raise CapabilityMissing(
            "no default embedder is available; install memorywire[model] or pass embedder="
        ) from exc
    made = factory()
    if not isinstance(made, Embedder):
        raise CapabilityMissing("memorywire.embed.default_embedder() returned no Embedder")
    return made


# One BFS for stores and the router: stores answer ``neighbours`` with the same distances the
# router's graph boost reads.
shortest_hops = hop_distances
