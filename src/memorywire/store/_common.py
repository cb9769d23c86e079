"""Helpers every store shares: relevance floors, embedder resolution, graph hops.

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
    "DEFAULT_LEXICAL_FLOOR",
    "DEFAULT_RELEVANCE_FLOOR",
    "RECOMMENDED_TAIL_GAP",
    "content_from_storage",
    "content_to_storage",
    "embed_text",
    "links_of",
    "resolve_embedder",
    "shortest_hops",
]

#: Cosine floor for the default MiniLM model: just above the best cosine that the first 20
#: off-topic calibration questions reach against the benchmark corpus (0.339 + 0.02 margin);
#: see benchmarks/microbench.py. On the 36-question calibration set it lets 3 questions
#: through (best 0.502); the floor that lets none through (0.522) keeps Recall@5 within one
#: query and lifts Precision@5, but would change what every caller of the default sees.
#: Another embedder needs its own floor.
DEFAULT_RELEVANCE_FLOOR = 0.36
#: A row only the full-text list found must still be this close. Equal to the floor by
#: default: a store's full-text matcher needs its own calibration before it may admit rows
#: the floor refuses (SqliteStore has one: ``sqlite.search.SQLITE_LEXICAL_FLOOR``).
DEFAULT_LEXICAL_FLOOR = 0.36
#: ``tail_gap`` (SqliteStore's default; opt-in on PostgresStore and InMemoryStore): the
#: floors judge a recall's whole list (``core.scoring.hybrid_rank``'s ``tail_gap``); when a
#: row clears them, the others need only come within this much of them. Rows admitted only
#: as the tail are returned but not marked recalled, so ``no_recall_in_days`` expires what it
#: did before. Fitted on LongMemEval S dev120 (session recall_all@5: per-row floors 0.737;
#: gap 0.1 0.838, 0.2 0.869, 0.3 0.879, 2.0 0.879; floors off 0.929): the smallest gap on the
#: plateau.
RECOMMENDED_TAIL_GAP = 0.3


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
