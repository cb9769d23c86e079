"""The reviewer UI's learned approval patterns (:mod:`memorywire.governance.patterns`):
each pattern with the policy diff that would have committed it, accepted one at a time.

Accepting re-learns the patterns and refuses when the policy changed since the diff was
shown (its hash is in the form), so a reviewer never accepts a diff they did not see. The
policy is then replaced through :meth:`GovernedStore.set_policies` as the reviewer (the
``policy_changed`` audit entry names the rule and why) and, where the deployment reads its
policy from a file, written back to that file so a restart keeps it. Nothing is applied
without a reviewer's click.
"""

from __future__ import annotations

from pathlib import Path

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from memorywire.governance.actor import acting_as
from memorywire.governance.patterns import Pattern, learn, policy_diff, policy_sha, with_rule
from memorywire.governance.store import GovernedStore
from memorywire.server.ui.kit import Kit, back_to

__all__ = ["pattern_routes"]

#: Decided remembers read to learn from, the latest first.
_HISTORY = 5_000


def pattern_routes(kit: Kit, governed: GovernedStore, threshold: int,
                   policy_file: Path | None) -> list[Route]:
    async def current() -> list[tuple[Pattern, list[str]]]:
        found = learn(await governed.decided_items("remember", _HISTORY), governed.policies,
                      threshold)
        return [(p, policy_diff(governed.policies, with_rule(governed.policies, p)))
                for p in found]

    @kit.login_required
    async def patterns(request: Request, reviewer: str) -> Response:
        return kit.page(request, "patterns.html", offers=await current(), threshold=threshold,
                        policy_sha=policy_sha(governed.policies),
                        policy_file=str(policy_file) if policy_file else "",
                        flash=request.session.pop("flash", None))

    @kit.login_required
    async def accept(request: Request, reviewer: str) -> Response:
        form = await request.form()
        if not kit.csrf_ok(request, form.get("csrf")):
            return kit.error(request, 403, "The form expired or did not come from this site.")
        if form.get("policy_sha") != policy_sha(governed.policies):
            return kit.error(request, 409, "policy_sha: the policy changed since this diff was "
                                           "shown; review the new diff.")
        found = learn(await governed.decided_items("remember", _HISTORY), governed.policies,
                      threshold)
        pattern = next((p for p in found if p.key == form.get("pattern")), None)
        if pattern is None:
            return kit.error(request, 409, "pattern: no longer offered (a rejection reset it, "
                                           "or its rule was accepted already).")
        new = with_rule(governed.policies, pattern)
        rule = pattern.rule()
        with acting_as(reviewer):
            governed.set_policies(new, {
                "change": "rule_added", "rule": rule.model_dump(exclude_none=True),
                "learned_from": {"approvals": pattern.approvals, "threshold": threshold,
                                 "before_rule": pattern.staged_by}})
        if policy_file is not None:
            new.save(policy_file)
        saved = f" and saved to {policy_file}" if policy_file else \
            " (in effect until the server restarts: its policy is not read from a file)"
        request.session["flash"] = {"done": f"Rule '{rule.name}' added{saved}."}
        return RedirectResponse(back_to(request, "/patterns"), status_code=303)

    return [Route("/patterns", patterns, methods=["GET"]),
            Route("/patterns/accept", accept, methods=["POST"])]
