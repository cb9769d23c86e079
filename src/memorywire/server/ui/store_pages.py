"""The reviewer UI's review of the store itself: near-duplicates and contradictions among
stored memories (:mod:`memorywire.governance.store_review`), decided in bulk.

A decision names each candidate by its key and the action chosen for it. The candidates are
found again when the form is posted, so one whose memories changed since the page was shown
(merged, forgotten, superseded by someone else) is reported as gone instead of acted on.
Each action runs through the governed store as the signed-in reviewer: audited, and staged
for approval where the policy says so.
"""

from __future__ import annotations

import time

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from memorywire.errors import MemorywireError
from memorywire.governance.store import GovernedStore
from memorywire.governance.store_review import apply, by_key, propose
from memorywire.server.ui.kit import Kit, back_to

__all__ = ["store_routes"]

#: How many candidates one page shows and one post may decide.
PAGE_MAX = 200


def _now() -> int:
    return int(time.time() * 1000)


def store_routes(kit: Kit, governed: GovernedStore) -> list[Route]:
    @kit.login_required
    async def review(request: Request, reviewer: str) -> Response:
        q = request.query_params
        agent_id = q.get("agent_id") or None
        found = await propose(governed, _now(), agent_id=agent_id)
        return kit.page(request, "store_review.html", proposals=found[:PAGE_MAX],
                        total=len(found), agent_id=agent_id or "",
                        select_all=q.get("select") == "all",
                        flash=request.session.pop("flash", None), query=str(request.url.query))

    @kit.login_required
    async def decide(request: Request, reviewer: str) -> Response:
        form = await request.form()
        if not kit.csrf_ok(request, form.get("csrf")):
            return kit.error(request, 403, "The form expired or did not come from this site.")
        picked = [str(v) for v in form.getlist("pick")]
        if not picked:
            return kit.error(request, 400, "pick: tick at least one candidate.")
        if len(picked) > PAGE_MAX:
            return kit.error(request, 400, f"pick: at most {PAGE_MAX} candidates at once.")
        agent_id = str(form.get("agent_id") or "") or None
        current = by_key(await propose(governed, _now(), agent_id=agent_id))
        done: list[str] = []
        staged: list[str] = []
        skipped: list[str] = []
        for key in picked:
            action = str(form.get(f"action-{key}") or "")
            found = current.get(key)
            if found is None:
                skipped.append(f"{key}: no longer proposed (the store changed since)")
                continue
            if action not in found.actions:
                skipped.append(f"{key}: action must be {' or '.join(found.actions)}")
                continue
            try:
                outcome = await apply(governed, found, action, reviewer)
            except MemorywireError as exc:
                skipped.append(f"{key}: {exc.message}")
                continue
            if outcome.staged:
                staged.append(f"{action} of {found.keep.id}: approval {', '.join(outcome.staged)}")
            else:
                done.append(found.key)
        request.session["flash"] = {
            "done": f"Applied {len(done)}." + (f" Staged for approval: {len(staged)}."
                                              if staged else ""),
            "staged": staged, "skipped": skipped}
        return RedirectResponse(back_to(request, "/store-review", str(form.get("back") or "")),
                                status_code=303)

    return [Route("/store-review", review, methods=["GET"]),
            Route("/store-review/decide", decide, methods=["POST"])]
