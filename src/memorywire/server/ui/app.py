"""The reviewer web UI: a small server-rendered Starlette app over a ``GovernedStore``.

What the reviewer compares (the side-by-side cards) is governance's pure logic
(:mod:`memorywire.governance.compare`); this module only renders it and takes decisions.

Mount it at ``/ui`` so the ``approval_url`` a staged write returns
(``{approval_base_url}/ui/approvals/{id}``) opens the item. Reviewers sign in with a token
that ``auth`` maps to a reviewer name; the session lives on the server
(:mod:`~memorywire.governance.sessions`), is re-checked against ``auth`` on every request, and
is the only source of the ``reviewer`` passed to governance (never a form field). Every
state-changing form carries a per-session CSRF token; the page sends no third-party
resource (strict CSP).
"""

from __future__ import annotations

import hmac
import secrets
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

import jinja2
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.sessions import SessionMiddleware
from starlette.requests import Request
from starlette.responses import (
    PlainTextResponse,
    RedirectResponse,
    Response,
    StreamingResponse,
)
from starlette.routing import Route
from starlette.templating import Jinja2Templates
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memorywire.errors import MemorywireError
from memorywire.governance.compare import pretty, side_by_side
from memorywire.governance.patterns import DEFAULT_THRESHOLD
from memorywire.governance.sessions import ReviewSessions
from memorywire.governance.signing import SigningKeySource
from memorywire.governance.store import GovernedStore
from memorywire.server.ui.kit import Kit
from memorywire.server.ui.pattern_pages import pattern_routes
from memorywire.server.ui.present import install as install_filters
from memorywire.server.ui.present import op_name
from memorywire.server.ui.reports import AGE_BUCKETS, EXPORT_FORMATS, audit_export, health_facts
from memorywire.server.ui.shared_sessions import SessionBook
from memorywire.server.ui.store_pages import store_routes

__all__ = ["review_app"]

Auth = Callable[[str], str | None]
#: The queue's operation filter; ``erase`` is a forget with ``hard_delete`` (see ``op_name``).
_OPERATIONS = ("remember", "forget", "erase", "merge", "update", "expire", "recover",
               "quarantine")
#: How many items one bulk decision may carry (one form post, decided one by one).
_BULK_MAX = 200
_STATUSES = ("pending", "committing", "failed", "approved", "rejected")
_CSP = (
    "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; "
    "frame-ancestors 'none'; base-uri 'none'"
)
#: The decision form's buttons: plain approve, the two answers to a contradiction, reject.
_ACTIONS = ("approve", "supersede", "keep_both", "reject")
#: How many decided items keep the comparison their reviewer saw (in memory, newest kept).
_DECIDED_KEPT = 500


class _SecurityHeaders:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                headers += [
                    (b"content-security-policy", _CSP.encode()),
                    (b"x-frame-options", b"DENY"),
                    (b"x-content-type-options", b"nosniff"),
                    # same-origin, not no-referrer: under no-referrer Chromium sends
                    # ``Origin: null`` on the UI's own form posts, which the browser door
                    # (server/origin.py) must refuse; other sites still get no referrer.
                    (b"referrer-policy", b"same-origin"),
                    (b"cache-control", b"no-store"),
                ]
                message["headers"] = headers
            await send(message)

        await self.app(scope, receive, send_with_headers)


def review_app(
    governed: GovernedStore,
    auth: Auth,
    *,
    secret_key: str | None = None,
    https_only: bool = False,
    session_max_age: int = 8 * 3600,
    sessions: SessionBook | None = None,
    receipt_key: SigningKeySource | None = None,
    pattern_threshold: int = DEFAULT_THRESHOLD,
    policy_file: str | Path | None = None,
) -> Starlette:
    """``auth(token)`` returns the reviewer's name, or ``None`` for a bad token.
    ``sessions``: where sessions live (default: this process); several worker processes
    pass a shared book and one ``secret_key``. ``receipt_key``: the deployment's deletion
    receipt key, whose public half the health page shows (``None``: it signs none).
    ``pattern_threshold``: approvals in a row before the UI offers the rule that would have
    committed them; ``policy_file``: where the deployment's policy is read from, written
    back when a reviewer accepts one (``None``: accepted rules last until restart)."""
    if pattern_threshold < 1:
        raise ValueError("pattern_threshold must be at least 1")
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("memorywire.server.ui", "templates"),
        autoescape=jinja2.select_autoescape(["html"]),
        undefined=jinja2.StrictUndefined,
    )
    install_filters(env)
    templates = Jinja2Templates(env=env)
    if sessions is None:
        sessions = ReviewSessions(auth, max_age_s=session_max_age)
    # After a decision the store has changed, so the comparison cannot be recomputed; keep
    # the one the reviewer decided on, so the page still shows what was approved.
    decided: OrderedDict[str, tuple[list[dict[str, Any]], list[dict[str, Any]]]] = OrderedDict()
    css = env.loader.get_source(env, "ui.css")[0] if env.loader else ""

    def page(request: Request, name: str, http_status: int = 200, **ctx: Any) -> Response:
        ctx.setdefault("reviewer", getattr(request.state, "reviewer", None))
        ctx.setdefault("csrf", request.session.get("csrf", ""))
        ctx["base"] = request.scope.get("root_path", "")
        return templates.TemplateResponse(request, name, ctx, status_code=http_status)

    def error(request: Request, status: int, message: str) -> Response:
        return page(request, "error.html", status, message=message, status=status)

    def csrf_ok(request: Request, form_token: Any) -> bool:
        expected = request.session.get("csrf")
        if not isinstance(expected, str) or not expected or not isinstance(form_token, str):
            return False
        return hmac.compare_digest(expected.encode(), form_token.encode())

    def login_required(
        handler: Callable[[Request, str], Awaitable[Response]],
    ) -> Callable[[Request], Awaitable[Response]]:
        async def wrapped(request: Request) -> Response:
            reviewer = sessions.reviewer(request.session.get("sid"))
            request.state.reviewer = reviewer
            if not reviewer:
                base = request.scope.get("root_path", "")
                # The link a reviewer followed (an approval_url) survives the sign-in.
                target = request.url.path
                if request.url.query:
                    target += "?" + request.url.query
                # where signing in leads anyway; a form post cannot be replayed by a GET
                if target == f"{base}/approvals" or request.method != "GET":
                    return RedirectResponse(f"{base}/login", status_code=303)
                return RedirectResponse(f"{base}/login?next={quote(target, safe='/')}",
                                        status_code=303)
            try:
                return await handler(request, str(reviewer))
            except MemorywireError as exc:
                return error(request, exc.http_status, exc.message)

        return wrapped

    def next_of(request: Request, value: Any) -> str:
        """Where to go after signing in: a path inside this UI only (no open redirect)."""
        base = request.scope.get("root_path", "")
        if (isinstance(value, str) and value.startswith(f"{base}/") and not value.startswith("//")
                and "\\" not in value and "/login" not in value):
            return value
        return f"{base}/approvals"

    async def login_form(request: Request) -> Response:
        if "csrf" not in request.session:
            request.session["csrf"] = secrets.token_urlsafe(32)
        return page(request, "login.html", next=next_of(request, request.query_params.get("next")))

    async def login(request: Request) -> Response:
        form = await request.form()
        if not csrf_ok(request, form.get("csrf")):
            return error(request, 403, "The form expired or did not come from this site.")
        token = form.get("token")
        opened = sessions.open(token) if isinstance(token, str) and token else None
        target = next_of(request, form.get("next"))
        if opened is None:
            return page(request, "login.html", 401, failed=True, next=target)
        sessions.close(request.session.get("sid"))
        request.session.clear()
        request.session["sid"] = opened[0]
        request.session["csrf"] = secrets.token_urlsafe(32)  # rotate on privilege change
        return RedirectResponse(target, status_code=303)

    async def logout(request: Request) -> Response:
        form = await request.form()
        if not csrf_ok(request, form.get("csrf")):
            return error(request, 403, "The form expired or did not come from this site.")
        sessions.close(request.session.get("sid"))
        request.session.clear()
        base = request.scope.get("root_path", "")
        return RedirectResponse(f"{base}/login", status_code=303)

    async def index(request: Request) -> Response:
        base = request.scope.get("root_path", "")
        return RedirectResponse(f"{base}/approvals", status_code=303)

    @login_required
    async def approvals(request: Request, reviewer: str) -> Response:
        q = request.query_params
        status = q.get("status") or "pending"
        operation = q.get("operation") or None
        agent_id = q.get("agent_id") or None
        if operation is not None and operation not in _OPERATIONS:
            return error(request, 400, f"operation: expected one of {', '.join(_OPERATIONS)}")
        if status not in _STATUSES:
            return error(request, 400, f"status: expected one of {', '.join(_STATUSES)}")
        items = await governed.alist_pending(
            agent_id=agent_id,
            operation="forget" if operation == "erase" else operation,
            status=status,
            limit=_BULK_MAX,
        )
        if operation in ("erase", "forget"):
            items = [i for i in items if op_name(i) == operation]
        return page(
            request,
            "approvals.html",
            items=items,
            status=status,
            operation=operation or "",
            agent_id=agent_id or "",
            operations=_OPERATIONS,
            statuses=_STATUSES,
            select_all=q.get("select") == "all",
            flash=request.session.pop("flash", None),
            query=str(request.url.query),
        )

    @login_required
    async def approval(request: Request, reviewer: str) -> Response:
        review = await governed.get_review(request.path_params["item_id"])
        now, after = side_by_side(review)
        kept = review["id"] in decided and not review.get("diff_included")
        if kept:
            now, after = decided[review["id"]]
        return page(
            request,
            "approval.html",
            item=review,
            now=now,
            after=after,
            kept=kept,
            replaceable=[c for c in now if c["replaceable"]],
            contradictions=sum(1 for c in now if c["relation"] == "contradiction"),
            request_json=pretty(review["request"]),
            own=review.get("requested_by") == reviewer,
        )

    @login_required
    async def decide(request: Request, reviewer: str) -> Response:
        item_id = request.path_params["item_id"]
        form = await request.form()
        if not csrf_ok(request, form.get("csrf")):
            return error(request, 403, "The form expired or did not come from this site.")
        action = form.get("action")
        reason = str(form.get("reason") or "") or None
        seen = form.get("content_hash")
        if action not in _ACTIONS or not isinstance(seen, str) or not seen:
            return error(request, 400, "Choose approve or reject.")
        # A contradiction is decided explicitly: supersede the ticked memories, or keep both
        # (the write then supersedes nothing, not even what conflict review proposed).
        supersedes: list[str] | None = None
        if action == "supersede":
            supersedes = [str(v) for v in form.getlist("supersede") if v]
            if not supersedes:
                return error(request, 400, "supersede: tick the memories the new one replaces, "
                                           "or choose keep both.")
        elif action == "keep_both":
            supersedes = []
        seen_review = await governed.get_review(item_id)
        await governed.decide(item_id, reviewer, action != "reject", reason, seen,
                              supersedes=supersedes)
        if seen_review.get("diff_included"):
            decided[item_id] = side_by_side(seen_review)
            while len(decided) > _DECIDED_KEPT:
                decided.popitem(last=False)
        base = request.scope.get("root_path", "")
        return RedirectResponse(f"{base}/approvals/{item_id}", status_code=303)

    @login_required
    async def bulk(request: Request, reviewer: str) -> Response:
        """Approve or reject the ticked rows of a (filtered) queue page, one by one.

        Each row carries the content hash the reviewer saw in the list, so an item that
        changed since is refused (stale hash) rather than decided unseen; a row that cannot
        be decided (own write, already decided) is reported and never stops the others.
        A remember is approved as staged: a contradiction's explicit choice needs its page.
        """
        form = await request.form()
        if not csrf_ok(request, form.get("csrf")):
            return error(request, 403, "The form expired or did not come from this site.")
        action = form.get("action")
        picked = [str(v) for v in form.getlist("item")]
        if action not in ("approve", "reject"):
            return error(request, 400, "action: choose approve or reject.")
        if not picked:
            return error(request, 400, "item: tick at least one item.")
        if len(picked) > _BULK_MAX:
            return error(request, 400, f"item: at most {_BULK_MAX} items at once.")
        reason = str(form.get("reason") or "") or None
        done: list[str] = []
        skipped: list[str] = []
        for value in picked:
            item_id, _, seen = value.partition(":")
            if not item_id or not seen:
                skipped.append(f"{value}: not an item of this queue")
                continue
            try:
                await governed.decide(item_id, reviewer, action == "approve", reason, seen)
            except MemorywireError as exc:
                skipped.append(f"{item_id}: {exc.message}")
            else:
                done.append(item_id)
        verb = "Approved" if action == "approve" else "Rejected"
        request.session["flash"] = {"done": f"{verb} {len(done)}.", "skipped": skipped}
        back = str(form.get("back") or "")
        base = request.scope.get("root_path", "")
        query = "&".join(p for p in back.split("&") if p and not p.startswith("select="))
        return RedirectResponse(f"{base}/approvals" + (f"?{quote(query, safe='=&')}"
                                                       if query else ""), status_code=303)

    @login_required
    async def audit_download(request: Request, reviewer: str) -> Response:
        q = request.query_params
        fmt = q.get("format") or ""
        if fmt not in EXPORT_FORMATS:
            return error(request, 400, "format: expected csv or jsonl")
        body = await audit_export(governed, fmt, q.get("agent_id") or None,
                                  q.get("memory_id") or None)
        return StreamingResponse(body, media_type=EXPORT_FORMATS[fmt], headers={
            "content-disposition": f'attachment; filename="memorywire-audit.{fmt}"'})

    @login_required
    async def audit(request: Request, reviewer: str) -> Response:
        q = request.query_params
        agent_id = q.get("agent_id") or None
        memory_id = q.get("memory_id") or None
        entries = await governed.aaudit_entries(agent_id=agent_id, memory_id=memory_id, limit=500)
        return page(
            request,
            "audit.html",
            entries=entries,
            verify=await governed.averify_incremental(),
            agent_id=agent_id or "",
            memory_id=memory_id or "",
        )

    @login_required
    async def health(request: Request, reviewer: str) -> Response:
        h = await governed.health()
        code = 200 if h.status != "down" else 503
        facts = await health_facts(governed, int(time.time() * 1000), receipt_key)
        return page(request, "health.html", code, health=h.to_dict(), facts=facts,
                    age_buckets=[label for label, _ in AGE_BUCKETS])

    async def stylesheet(request: Request) -> Response:
        return PlainTextResponse(css, media_type="text/css")

    routes = [
        Route("/", index),
        Route("/login", login_form, methods=["GET"]),
        Route("/login", login, methods=["POST"]),
        Route("/logout", logout, methods=["POST"]),
        Route("/approvals", approvals),
        Route("/approvals/bulk", bulk, methods=["POST"]),
        Route("/approvals/{item_id}", approval, methods=["GET"]),
        Route("/approvals/{item_id}/decide", decide, methods=["POST"]),
        Route("/audit", audit),
        Route("/audit/export", audit_download, methods=["GET"]),
        Route("/health", health),
        Route("/ui.css", stylesheet),
    ]
    kit = Kit(page, error, csrf_ok, login_required)
    routes += store_routes(kit, governed)
    routes += pattern_routes(kit, governed, pattern_threshold,
                             Path(policy_file) if policy_file is not None else None)
    return Starlette(
        routes=routes,
        middleware=[
            Middleware(_SecurityHeaders),
            Middleware(
                SessionMiddleware,
                secret_key=secret_key or secrets.token_urlsafe(32),
                session_cookie="memorywire_review",
                max_age=session_max_age,
                same_site="strict",
                https_only=https_only,
            ),
        ],
    )
