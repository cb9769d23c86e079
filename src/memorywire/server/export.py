"""``GET /v0/admin/export``: the store's ``memorywire/export`` dump, streamed as NDJSON.

Admin only, and only within the token's scope: an unscoped admin token exports every agent;
one scoped to agents (or users) exports theirs alone, and naming an agent or user outside it
is ``forbidden``, whether or not that agent has memories. A dump carries forgotten records on
request.
Behind governance the dump is read from the governed store's inner store (export only reads;
nothing is staged); ``include_history`` and ``include_pending`` add what governance holds.
A store that cannot export answers ``capability_missing`` before the first byte, as an
ordinary error envelope; once streaming has begun, a failure cuts the stream short, which a
reader detects as a dump without its footer.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any

from starlette.responses import Response, StreamingResponse

from memorywire.errors import Forbidden, InvalidRequest
from memorywire.governance.store import GovernedStore
from memorywire.portability.moves import dump_chunks
from memorywire.server.auth import Principal, Role

__all__ = ["EXPORT_PARAMS", "export_response"]

EXPORT_PARAMS = ("agent_id", "user_id", "since", "include_forgotten", "include_vectors",
                 "include_history", "include_pending")


def _flag(query: Mapping[str, str], name: str) -> bool:
    value = query.get(name, "false").lower()
    if value not in ("true", "false", "1", "0"):
        raise InvalidRequest(f"{name} must be true or false, not {value!r}")
    return value in ("true", "1")


async def export_response(store: Any, principal: Principal,
                          query: Mapping[str, str]) -> Response:
    principal.require(Role.ADMIN)
    unknown = set(query) - set(EXPORT_PARAMS)
    if unknown:
        raise InvalidRequest(f"unknown export parameter(s): {', '.join(sorted(unknown))}")
    since = query.get("since")
    if since is not None and not since.isdigit():
        raise InvalidRequest("since must be epoch milliseconds")
    agent_id, user_id = query.get("agent_id"), query.get("user_id")
    if agent_id is not None and not principal.owns_agent(agent_id):
        raise Forbidden(f"this token may not export agent_id {agent_id!r}")
    if user_id is not None and principal.user_ids is not None \
            and user_id not in principal.user_ids:
        raise Forbidden(f"this token may not export user_id {user_id!r}")
    if agent_id is None and principal.agent_ids is not None and len(principal.agent_ids) == 1:
        (agent_id,) = principal.agent_ids  # read one agent's rows, not every agent's
    # A governed store is handed over whole: its governance supplies history and pending.
    source = store if isinstance(store, GovernedStore) else getattr(store, "inner", store)
    chunks = dump_chunks(source, url=f"{getattr(source, 'name', 'store')}://",
                         agent_id=agent_id, user_id=user_id,
                         since=None if since is None else int(since),
                         include_forgotten=_flag(query, "include_forgotten"),
                         include_vectors=_flag(query, "include_vectors"),
                         include_history=_flag(query, "include_history"),
                         include_pending=_flag(query, "include_pending"),
                         scope=principal.allows if principal.scoped else None)
    first = await anext(chunks)  # refusals surface here, as an envelope

    async def body() -> AsyncIterator[bytes]:
        yield first
        async for chunk in chunks:
            yield chunk

    return StreamingResponse(body(), media_type="application/x-ndjson")
