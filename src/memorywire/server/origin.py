"""The browser door: what a web page may not make a memorywire server do.

A server on the user's loopback (``serve --no-auth`` above all) is reachable from any page
the user's browser opens. Three rules, applied to every route before routing, close the
ways a page gets in:

* **Origin.** Browsers send ``Origin`` on every cross-origin write and on CORS reads. A
  request whose Origin is neither loopback, nor configured (``allowed_origins``), nor the
  server's own (same scheme-less host and port as ``Host``) is refused with 403. Clients
  that are not browsers send no Origin and pass.
* **Host.** DNS rebinding points an attacker's name at 127.0.0.1, so the page is
  "same-origin" with the server; only the ``Host`` header still names the attacker. On a
  loopback bind, a Host that is neither a loopback name nor configured (``allowed_hosts``)
  is refused with 403.
* **JSON writes.** A form or ``text/plain`` POST needs no CORS preflight; a JSON one does.
  A POST/PUT/PATCH/DELETE that carries a body must declare ``application/json`` (or
  ``+json``), else 415. One route reads another type: ``/v0/admin/import`` takes a dump as
  ``application/x-ndjson`` (or ``application/jsonl``), which needs a preflight just the same.
  The reviewer UI (``/ui``) keeps its HTML forms: they carry a per-session CSRF token, and
  the Origin and Host rules still apply to them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from urllib.parse import urlsplit

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from memorywire.errors import Forbidden, InvalidRequest, MemorywireError
from memorywire.server.config import is_loopback

__all__ = ["BrowserRules", "BrowserSafe", "check", "host_allowed"]

_WRITES = frozenset({"POST", "PUT", "PATCH", "DELETE"})
_FORM_PREFIXES = ("/ui",)
#: Routes whose body is not JSON, and the (preflighted) media types each accepts.
_OTHER_BODIES = {"/v0/admin/import": ("application/x-ndjson", "application/jsonl")}


@dataclass(frozen=True)
class BrowserRules:
    allowed_origins: frozenset[str] = field(default_factory=frozenset)
    #: ``None``: no Host check (a public bind, where auth is mandatory).
    allowed_hosts: frozenset[str] | None = None

    @classmethod
    def for_bind(
        cls, host: str, allowed_origins: Iterable[str] = (), allowed_hosts: Iterable[str] = ()
    ) -> BrowserRules:
        """Host checks on a loopback bind, or wherever hosts are configured explicitly."""
        hosts = frozenset(h.lower() for h in allowed_hosts)
        return cls(
            allowed_origins=frozenset(allowed_origins),
            allowed_hosts=hosts if hosts or is_loopback(host) else None,
        )


def _hostname(hostport: str) -> str:
    return (urlsplit("//" + hostport).hostname or "").lower()


@lru_cache(maxsize=256)
def _host_facts(host: str) -> tuple[str, bool]:
    """``(hostname, is loopback)`` of a Host header: every request of a client sends the same
    one, and parsing it (``urlsplit``, ``ipaddress``) cost more than the rest of the check.
    Bounded, so a client sending many distinct Host values only evicts entries."""
    name = _hostname(host)
    return name, is_loopback(name)


def host_allowed(host: str | None, allowed: frozenset[str] | None) -> bool:
    if allowed is None:
        return True
    if not host:
        return False  # HTTP/1.1 requires Host; a rebinding page always sends one
    name, loopback = _host_facts(host)
    return loopback or name in allowed or host.lower() in allowed


def _origin_allowed(origin: str, host: str | None, allowed: frozenset[str]) -> bool:
    if origin in allowed:
        return True
    parts = urlsplit(origin)
    if parts.scheme not in ("http", "https"):
        return False  # "null", file://, extensions: never a page of ours
    if is_loopback(parts.hostname or ""):
        return True
    return host is not None and parts.netloc.lower() == host.lower()


def _is_json(content_type: str) -> bool:
    media = content_type.split(";", 1)[0].strip().lower()
    return media == "application/json" or (media.startswith("application/") and
                                            media.endswith("+json"))


def check(
    rules: BrowserRules, method: str, path: str, headers: dict[bytes, bytes]
) -> MemorywireError | None:
    """The refusal for a request, or ``None`` when it may go on (pure, for tests)."""
    host = headers.get(b"host", b"").decode("latin-1") or None
    if not host_allowed(host, rules.allowed_hosts):
        return Forbidden(
            f"Host {host!r} is not this server (DNS rebinding?); allow it with allowed_hosts"
        )
    origin = headers.get(b"origin")
    if origin is not None and not _origin_allowed(
        origin.decode("latin-1"), host, rules.allowed_origins
    ):
        return Forbidden("this Origin may not call this server (allow it with allowed_origins)")
    if method in _WRITES and not path.startswith(_FORM_PREFIXES):
        ctype = headers.get(b"content-type", b"").decode("latin-1")
        has_body = (
            headers.get(b"content-length", b"0") not in (b"0", b"")
            or b"transfer-encoding" in headers
        )
        media = ctype.split(";", 1)[0].strip().lower()
        if (has_body or ctype) and not _is_json(ctype) and media not in _OTHER_BODIES.get(
            path, ()
        ):
            return InvalidRequest(
                f"a {method} with a body must be Content-Type: application/json "
                f"(got {ctype or 'none'!r})"
            )
    return None


class BrowserSafe:
    """ASGI middleware applying :func:`check` to every HTTP request."""

    def __init__(self, app: ASGIApp, rules: BrowserRules) -> None:
        self.app = app
        self.rules = rules

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            headers = dict(scope.get("headers") or [])
            err = check(self.rules, scope["method"], scope["path"], headers)
            if err is not None:
                status = 415 if isinstance(err, InvalidRequest) else err.http_status
                await JSONResponse(err.to_envelope(), status)(scope, receive, send)
                return
        await self.app(scope, receive, send)
