"""How a memory's content is kept, embedded and linked: pure rules every store shares.

A procedure is stored as the canonical JSON of a validated machine and embedded as its words;
every other type is stored and embedded as given. ``metadata.links`` is the only source of a
memory's graph edges.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from memorywire.core.procedure import parse_procedure
from memorywire.errors import InvalidRequest
from memorywire.wire.models import MemoryType

__all__ = ["content_from_storage", "content_to_storage", "embed_text", "links_of"]


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
