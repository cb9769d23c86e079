"""An ASGI response that may stay open at most so long, then is ended cleanly.

``GET /mcp`` opens the MCP SDK's standalone event stream, which stays open until the client
leaves. Our MCP sessions are stateless and the tools never call back into the client, so
nothing is ever sent on that stream: every authenticated client could hold one connection
(and a task) for ever. :func:`run_for_at_most` runs the request for the idle timeout, then
ends the response: a response that has started gets its final empty body (the client sees the
stream end and may reconnect), one that has not gets ``204 No Content``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import anyio
from starlette.types import Message, Receive, Scope, Send

__all__ = ["run_for_at_most"]


async def run_for_at_most(seconds: float,
                          app: Callable[[Scope, Receive, Send], Awaitable[None]],
                          scope: Scope, receive: Receive, send: Send) -> None:
    started = finished = False

    async def watched(message: Message) -> None:
        nonlocal started, finished
        if message["type"] == "http.response.start":
            started = True
        elif message["type"] == "http.response.body" and not message.get("more_body", False):
            finished = True
        await send(message)

    with anyio.move_on_after(seconds):
        await app(scope, receive, watched)
    if finished:
        return
    if not started:
        await send({"type": "http.response.start", "status": 204, "headers": []})
    await send({"type": "http.response.body", "body": b"", "more_body": False})
