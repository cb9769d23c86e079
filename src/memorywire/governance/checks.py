"""What a staged operation must satisfy so that its commit cannot be refused for its values.

A staged item is committed later, after review, possibly after a restart; a value no database
can store (a lone surrogate, an integer beyond 64 bits) would fail only then, after a
reviewer approved it. Refusing such requests when they are staged keeps the queue clean.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from memorywire.errors import Conflict, InvalidRequest
from memorywire.governance.chain import canonical_json
from memorywire.store.base import MemoryStore
from memorywire.wire.models import RememberRequest

__all__ = ["check_committable", "check_remember"]

_INT64 = (-(2**63), 2**63 - 1)


def check_committable(request: Mapping[str, Any]) -> None:
    """Refuse at staging a request no store could commit: text that cannot be encoded (lone
    surrogates) and integers outside the signed 64-bit range every database stores."""
    try:
        canonical_json(dict(request)).encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidRequest(
            "request holds text that cannot be encoded as UTF-8 (a lone surrogate)"
        ) from None
    stack: list[Any] = [request]
    while stack:
        v = stack.pop()
        if isinstance(v, Mapping):
            stack.extend(v.values())
        elif isinstance(v, list | tuple):
            stack.extend(v)
        elif isinstance(v, int) and not isinstance(v, bool) and not _INT64[0] <= v <= _INT64[1]:
            raise InvalidRequest(f"number {v} is outside the signed 64-bit range")


async def check_remember(inner: MemoryStore, req: RememberRequest) -> None:
    """Refuse at staging what the commit would refuse: another memory under this id."""
    assert req.id is not None
    existing = await inner.get(req.agent_id, req.id, req.user_id)
    if existing is not None and canonical_json(existing.content) != canonical_json(
        req.model_dump(mode="json")["content"]
    ):
        raise Conflict(f"id {req.id} already holds other content")
