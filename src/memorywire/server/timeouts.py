"""How long a client may take: request headers, request body, idle keep-alive.

uvicorn's h11 server closes an idle keep-alive connection, but any byte resets that timer
and nothing bounds a connection that never finishes its headers or its body, so a client
sending one byte every few seconds holds a connection (and a file descriptor) forever.
:class:`DeadlineProtocol` adds two deadlines per request: the headers must be complete within
``header_timeout`` of the connection opening (or of the previous response), and the body
within ``body_timeout`` after that; a connection past either is closed. The application's
own time is not bounded here: once a request is fully received, only the response matters.
"""

from __future__ import annotations

import asyncio
from typing import Any

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from memorywire.server.limits import Timeouts

__all__ = ["DeadlineProtocol", "Timeouts", "uvicorn_config"]


class DeadlineProtocol(H11Protocol):
    """uvicorn's h11 protocol with header and body deadlines (set by :func:`uvicorn_config`)."""

    header_timeout: float = Timeouts.header_s
    body_timeout: float = Timeouts.body_s

    def _arm(self, delay: float, then: str) -> None:
        handle: asyncio.TimerHandle | None = getattr(self, "_deadline", None)
        if handle is not None:
            handle.cancel()
        self._deadline = self.loop.call_later(delay, self._expired, then)

    def _expired(self, phase: str) -> None:
        if self.transport.is_closing():
            return
        state = self.conn.their_state
        if phase == "headers" and state is h11.IDLE:
            self.transport.close()  # headers never completed: nothing to answer
        elif state is h11.SEND_BODY:
            if phase == "headers":
                self._arm(self.body_timeout, "body")
            else:
                self.transport.close()  # the app sees a disconnect while reading the body

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm(self.header_timeout, "headers")

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._arm(self.header_timeout, "headers")

    def connection_lost(self, exc: Exception | None) -> None:
        handle: asyncio.TimerHandle | None = getattr(self, "_deadline", None)
        if handle is not None:
            handle.cancel()
        super().connection_lost(exc)


def uvicorn_config(
    app: Any, host: str, port: int, timeouts: Timeouts, *, log_level: str = "warning"
) -> uvicorn.Config:
    """A uvicorn config serving ``app`` with these deadlines (``uvicorn.Server(cfg).run()``);
    at ``log_level`` info or lower uvicorn also writes its access log."""
    protocol = type(
        "BoundDeadlineProtocol",
        (DeadlineProtocol,),
        {"header_timeout": timeouts.header_s, "body_timeout": timeouts.body_s},
    )
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        http=protocol,
        timeout_keep_alive=max(1, round(timeouts.idle_s)),
        log_level=log_level,
        access_log=log_level in ("trace", "debug", "info"),
    )
