"""How a memory's content is kept, embedded and linked: pure rules every store shares.

A procedure is stored as the canonical JSON of a validated machine and embedded as its words;
every other type is stored and embedded as given.

Edges. A memory's graph edges are typed (``related``, ``derived_from``, ``supersedes``,
``merged_into``; an open set of lower-case names) and point from the memory to another id. The
wire carries them in the ``links`` field; a store keeps them in the reserved metadata key
``links`` (so every backend that keeps metadata keeps edges, with no new column): a ``related``
edge as the bare id (the v0.0 form, so old rows and old clients read the same), any other as
``{"id": ..., "type": ...}``. ``metadata.links`` written by a client is the deprecated v0.0
spelling of ``links`` (ids only, all ``related``) and is accepted through v0.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from memorywire.core.procedure import parse_procedure
from memorywire.errors import InvalidRequest
from memorywire.wire.fields import fold_fields
from memorywire.wire.models import MemoryType, RememberRequest

__all__ = [
    "EDGE_TYPES",
    "Edge",
    "content_from_storage",
    "content_to_storage",
    "edges_of",
    "edges_to_storage",
    "embed_text",
    "fold_links",
    "fold_request",
    "links_of",
    "with_links",
]

#: The edge types v0 names; others matching ``_EDGE_TYPE`` are kept as given (open set).
EDGE_TYPES = ("related", "derived_from", "supersedes", "merged_into")
_EDGE_TYPE = re.compile(r"^[a-z][a-z0-9_]{0,63}$")


@dataclass(frozen=True)
class Edge:
    """One typed edge from the memory that holds it to the memory ``id``."""

    id: str
    type: str = "related"

    def stored(self) -> str | dict[str, str]:
        return self.id if self.type == "related" else {"id": self.id, "type": self.type}



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


def _edge(raw: Any) -> Edge:
    if isinstance(raw, str) and raw:
        return Edge(raw)
    if isinstance(raw, Mapping) and set(raw) <= {"id", "type"}:
        mid, kind = raw.get("id"), raw.get("type", "related")
        if isinstance(mid, str) and mid and isinstance(kind, str) and _EDGE_TYPE.match(kind):
            return Edge(mid, kind)
    raise InvalidRequest("links must be memory ids or {\"id\": ..., \"type\": ...} objects "
                         "with a lower-case edge type (related, derived_from, supersedes, "
                         "merged_into, ...)")


def edges_of(metadata: Mapping[str, Any] | None) -> list[Edge]:
    """The typed edges a memory holds (its stored ``metadata.links``), duplicates dropped."""
    raw = (metadata or {}).get("links")
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise InvalidRequest("links must be a list")
    return list(dict.fromkeys(_edge(x) for x in raw))


def edges_to_storage(edges: Iterable[Edge]) -> list[str | dict[str, str]]:
    return [e.stored() for e in dict.fromkeys(edges)]


def links_of(metadata: Mapping[str, Any] | None) -> list[str]:
    """Ids a memory has an edge to, of any type: its neighbours for the graph boost."""
    if not metadata or metadata.get("links") is None:
        return []
    return list(dict.fromkeys(e.id for e in edges_of(metadata)))


def with_links(metadata: Mapping[str, Any] | None, links: Iterable[Any] | None) -> dict[str, Any]:
    """The metadata a remember stores: the request's ``links`` (wire objects or dicts) joined
    to any deprecated ``metadata.links``, validated, in the stored form."""
    out = dict(metadata or {})
    edges = edges_of(out)
    extra = [_edge(x.model_dump() if hasattr(x, "model_dump") else x) for x in links or ()]
    if extra:
        out["links"] = edges_to_storage([*edges, *extra])
    return out


def fold_links(req: RememberRequest) -> RememberRequest:
    """``req`` as stores write it: its ``links`` moved into the stored ``metadata.links``
    (validated either way), so every backend keeps edges wherever it keeps metadata."""
    metadata = with_links(req.metadata, req.links)
    if req.links is None:
        return req
    return req.model_copy(update={"metadata": metadata, "links": None})


def fold_request(req: RememberRequest) -> RememberRequest:
    """``req`` as stores write it: ``links`` folded as :func:`fold_links` does, and the typed
    fields moved under their metadata keys (:mod:`core.fields`), the metadata spelling of
    the memory type's fields validated either way."""
    if req.links is None and not req.metadata:
        # Nothing to fold or to validate (no edges, no metadata spelling of a field): the
        # common write, answered without the two metadata copies below.
        typed = req.typed()
        if not typed:
            return req
    else:
        req = fold_links(req)
        typed = req.typed()
    metadata = fold_fields(req.type, req.metadata, typed)
    if not typed:
        return req
    return req.model_copy(update={"metadata": metadata, **dict.fromkeys(typed)})
