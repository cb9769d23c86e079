"""The ASGI request scope the in-process CPU harnesses hand the server app.

``request_cpu.py`` and ``serve_cpu.py`` both time the app without uvicorn in front (so the
HTTP parser and the socket are not in the figure) and need the same scope a loopback client's
authenticated JSON POST would produce.
"""

from __future__ import annotations

from typing import Any


def json_post_scope(path: str, token: str, body: bytes) -> dict[str, Any]:
    """The scope of ``POST path`` with a bearer ``token`` and a JSON ``body``, from loopback."""
    return {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
        "scheme": "http", "path": path, "raw_path": path.encode(), "query_string": b"",
        "root_path": "", "server": ("127.0.0.1", 8765), "client": ("127.0.0.1", 50000),
        "headers": [
            (b"host", b"127.0.0.1:8765"), (b"content-type", b"application/json"),
            (b"authorization", f"Bearer {token}".encode()),
            (b"content-length", str(len(body)).encode()),
        ],
    }
