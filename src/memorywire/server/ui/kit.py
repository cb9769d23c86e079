"""What every page module of the reviewer UI shares with :mod:`.app`: rendering, the error
page, the CSRF check and the sign-in guard, built once per app by ``review_app``.

Handed to the page modules (:mod:`.store_pages`, :mod:`.pattern_pages`) instead of each one
re-deriving sessions and templates, so a page cannot forget the guard the others have.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import Response

__all__ = ["Handler", "Kit", "back_to"]

Handler = Callable[[Request], Awaitable[Response]]


@dataclass(frozen=True)
class Kit:
    #: ``page(request, template, status=200, **context)``
    page: Callable[..., Response]
    #: ``error(request, status, message)``: the error page
    error: Callable[[Request, int, str], Response]
    #: ``csrf_ok(request, form_token)``
    csrf_ok: Callable[[Request, Any], bool]
    #: wraps ``handler(request, reviewer)``: signed-in reviewers only
    login_required: Callable[[Callable[[Request, str], Awaitable[Response]]], Handler]


def back_to(request: Request, path: str, query: str = "") -> str:
    """``path`` inside this UI with ``query`` (``k=v&...``, selection dropped)."""
    base = request.scope.get("root_path", "")
    kept = "&".join(p for p in query.split("&") if p and not p.startswith("select="))
    return f"{base}{path}" + (f"?{quote(kept, safe='=&')}" if kept else "")
