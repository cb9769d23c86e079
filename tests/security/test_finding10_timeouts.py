"""Finding 10: no header, body or idle timeouts (a client sending a byte every few seconds
held a connection forever), and client disconnects logged full tracebacks. A real uvicorn
server on loopback with short deadlines: slow headers, a stalled body and an idle
keep-alive connection are each closed; a disconnect is one log line without a traceback."""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import uvicorn

from memorywire.server.app import build_server
from memorywire.server.config import ServerConfig
from memorywire.server.limits import Timeouts
from memorywire.server.timeouts import uvicorn_config

DEADLINE = 0.6


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(params=["httptools", "h11"])
def port(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[int]:
    port = _free_port()
    config = ServerConfig(store="memory://", embedder="hashing", no_auth=True, port=port,
                          tokens_db=str(tmp_path / "t.db"), body_timeout_s=DEADLINE)
    srv = build_server(config)
    timeouts = Timeouts(header_s=DEADLINE, body_s=DEADLINE, idle_s=1.0)
    server = uvicorn.Server(uvicorn_config(srv.app, "127.0.0.1", port, timeouts,
                                           parser=request.param))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.02)
    try:
        yield port
    finally:
        server.should_exit = True
        thread.join(10)


def _closed_within(sock: socket.socket, seconds: float, trickle: bytes = b"") -> bool:
    """True when the server closes ``sock`` within ``seconds`` (sending ``trickle`` bytes
    one at a time every 0.1 s meanwhile, as a slowloris client does)."""
    end = time.monotonic() + seconds
    sock.settimeout(0.1)
    i = 0
    while time.monotonic() < end:
        try:
            if sock.recv(4096) == b"":
                return True
        except TimeoutError:
            pass
        except OSError:
            return True
        if trickle:
            try:
                sock.sendall(trickle[i % len(trickle): i % len(trickle) + 1])
            except OSError:
                return True
            i += 1
    return False


def test_slow_headers_are_cut_off(port: int) -> None:
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.sendall(b"POST /v0/remember HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        assert _closed_within(s, DEADLINE + 2.0, trickle=b"X-Slow: a\r\n")


def test_a_stalled_body_is_cut_off(port: int) -> None:
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.sendall(
            b"POST /v0/remember HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            b"Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"agent_id\""
        )
        assert _closed_within(s, 2 * DEADLINE + 2.0, trickle=b" ")


def test_an_idle_keep_alive_connection_is_closed(port: int) -> None:
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.sendall(b"GET /v0/health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        s.settimeout(5)
        assert b"200 OK" in s.recv(4096)
        assert _closed_within(s, 3.0)


async def _disconnecting_receive() -> dict[str, Any]:
    return {"type": "http.disconnect"}


@pytest.mark.anyio
async def test_a_client_disconnect_is_one_line_without_traceback(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    srv = build_server(ServerConfig(store="memory://", embedder="hashing", no_auth=True,
                                    tokens_db=str(tmp_path / "t.db")))
    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
        "scheme": "http", "path": "/v0/remember", "raw_path": b"/v0/remember",
        "query_string": b"", "root_path": "",
        "headers": [(b"host", b"127.0.0.1"), (b"content-type", b"application/json"),
                    (b"content-length", b"50")],
        "client": ("127.0.0.1", 5000), "server": ("127.0.0.1", 8765),
    }

    async def send(message: dict[str, Any]) -> None:
        return None

    with caplog.at_level(logging.DEBUG, logger="memorywire"):
        await srv.app(scope, _disconnecting_receive, send)
    await srv.aclose()
    ours = [r for r in caplog.records if r.name.startswith("memorywire")]
    assert len(ours) == 1, [r.getMessage() for r in ours]
    assert ours[0].exc_info is None and "disconnect" in ours[0].getMessage()
