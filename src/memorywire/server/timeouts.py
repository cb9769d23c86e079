"""How long a client may take: request headers, request body, idle keep-alive.

uvicorn's h11 server closes an idle keep-alive connection, but any byte resets that timer
and nothing bounds a connection that never finishes its headers or its body, so a client
sending one byte every few seconds holds a connection (and a file descriptor) forever.
:class:`DeadlineProtocol` adds two deadlines per request: the headers must be complete within
``header_timeout`` of the connection opening (or of the previous response), and the body
within ``body_timeout`` after that; a connection past either is closed. The application's
own time is not bounded here: once a request is fully received, only the response matters.

Requests are parsed with ``httptools`` (llhttp, in C) when it is installed, as it is with
memorywire's dependencies: :class:`FastDeadlineProtocol` holds the same two deadlines over
uvicorn's httptools protocol, and parses a request in a fraction of h11's (pure Python) time,
which on a busy server is CPU the model and the store get instead. Without it,
:class:`DeadlineProtocol` (h11) serves.
"""

from __future__ import annotations

import asyncio
from typing import Any

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

try:
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
except ImportError:  # pragma: no cover - httptools is a dependency; kept working without it
    HttpToolsProtocol = None  # type: ignore[assignment,misc]

from memorywire.server.limits import Timeouts

__all__ = ["DeadlineProtocol", "FastDeadlineProtocol", "Timeouts", "protocols", "uvicorn_config"]


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


if HttpToolsProtocol is not None:

    class FastDeadlineProtocol(HttpToolsProtocol):
        """uvicorn's httptools protocol with the header and body deadlines of
        :class:`DeadlineProtocol`. httptools has no state to ask, so the phase is tracked
        from its callbacks: ``headers`` until a request's headers are complete, ``body``
        until its body is, then ``app`` (unbounded) until its response is sent."""

        header_timeout: float = Timeouts.header_s
        body_timeout: float = Timeouts.body_s
        _phase = "headers"
        _deadline: asyncio.TimerHandle | None = None

        def _arm(self, delay: float, phase: str) -> None:
            self._cancel()
            self._phase = phase
            self._deadline = self.loop.call_later(delay, self._expired, phase)

        def _cancel(self) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
                self._deadline = None

        def _expired(self, phase: str) -> None:
            if self._phase == phase and not self.transport.is_closing():
                self.transport.close()  # the app, if reading a body, sees a disconnect

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._arm(self.header_timeout, "headers")

        def on_headers_complete(self) -> None:
            super().on_headers_complete()
            self._arm(self.body_timeout, "body")

        def on_message_complete(self) -> None:
            super().on_message_complete()
            self._cancel()
            self._phase = "app"

        def on_response_complete(self) -> None:
            queued = bool(self.pipeline)  # a pipelined request already fully received
            super().on_response_complete()
            if not queued:
                self._arm(self.header_timeout, "headers")

        def connection_lost(self, exc: Exception | None) -> None:
            self._cancel()
            super().connection_lost(exc)

else:  # pragma: no cover
    FastDeadlineProtocol = None  # type: ignore[assignment,misc]


def protocols() -> dict[str, type[asyncio.Protocol]]:
    """The deadline protocols this installation can serve with, fastest first."""
    out: dict[str, type[asyncio.Protocol]] = {}
    if FastDeadlineProtocol is not None:
        out["httptools"] = FastDeadlineProtocol
    out["h11"] = DeadlineProtocol
    return out


def uvicorn_config(
    app: Any, host: str, port: int, timeouts: Timeouts, *, log_level: str = "warning",
    parser: str | None = None,
) -> uvicorn.Config:
    """A uvicorn config serving ``app`` with these deadlines (``uvicorn.Server(cfg).run()``);
    at ``log_level`` info or lower uvicorn also writes its access log. ``parser``:
    ``httptools`` or ``h11``; ``None``, the fastest installed."""
    available = protocols()
    base = available[parser] if parser is not None else next(iter(available.values()))
    protocol = type(
        "BoundDeadlineProtocol",
        (base,),
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
