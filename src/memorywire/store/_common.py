"""Helpers both built-in stores share: content normalisation, links, embedder resolution."""

from __future__ import annotations

import importlib
import json
from collections.abc import Mapping
from typing import Any

from memorywire.core.fusion import hop_distances
from memorywire.embed.base import Embedder
from memorywire.errors import CapabilityMissing, InvalidRequest
from memorywire.procedural.validate import parse_procedure
from memorywire.wire.models import MemoryType

__all__ = [
    "DEFAULT_LEXICAL_FLOOR",
    "DEFAULT_RELEVANCE_FLOOR",
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
#: the floor refuses (SqliteStore has one: ``sqlite_search.SQLITE_LEXICAL_FLOOR``).
DEFAULT_LEXICAL_FLOOR = 0.36


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


def content_to_storage(mtype: MemoryType, content: str | dict[str, Any]) -> str:

    """Text kept in the store: plain text, or canonical JSON of a validated procedure.

    A procedure travels as a JSON string in v0 requests; an object is accepted too. It must
    be a callback-free pytransitions machine (the model forbids every other key).
    """
    if mtype is not MemoryType.PROCEDURAL:
        if not isinstance(content, str):
            raise InvalidRequest(f"{mtype.value} content must be a string")
        return content
    if isinstance(content, str):
        try:
            content = json.loads(content)
        except json.JSONDecodeError as exc:
            raise InvalidRequest(f"procedural content is not valid JSON: {exc.msg}") from exc
        if not isinstance(content, dict):
            raise InvalidRequest("procedural content must be a JSON object (a state machine)")
    # The full rules (reachable names, no dunder/dotted/trigger-named guards, sizes), not just
    # the wire shape: a machine the runner would refuse must not be stored in the first place.
    proc = parse_procedure(content)
    return json.dumps(proc.model_dump(exclude_none=True), sort_keys=True, ensure_ascii=False)


def content_from_storage(mtype: MemoryType, stored: str) -> str | dict[str, Any]:
    if mtype is MemoryType.PROCEDURAL:
        value = json.loads(stored)
        if isinstance(value, dict):
            return value
    return stored


def embed_text(mtype: MemoryType, stored: str) -> str:
    """What gets embedded and full-text indexed: a procedure reads as its words, not JSON."""
    if mtype is not MemoryType.PROCEDURAL:
        return stored
    proc = json.loads(stored)
    words = [str(proc.get("name", "")), *map(str, proc.get("states", []))]
    words += [str(t.get("trigger", "")) for t in proc.get("transitions", [])]
    return " ".join(w.replace("_", " ") for w in words if w)


def links_of(metadata: Mapping[str, Any] | None) -> list[str]:
    """Graph edges a memory declares: ``metadata.links``, a list of memory ids."""
    raw = (metadata or {}).get("links")
    if raw is None:
        return []
    if not isinstance(raw, list) or not all(isinstance(x, str) and x for x in raw):
        raise InvalidRequest("metadata.links must be a list of memory ids")
    return list(dict.fromkeys(raw))


# One BFS for stores and the router: stores answer ``neighbours`` with the same distances the
# router's graph boost reads.
shortest_hops = hop_distances
