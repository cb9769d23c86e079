"""What governance does with a remember that contradicts stored memories.

The store reports contradiction candidates (``conflicts``) on every remember; the policy key
``conflicts`` (:class:`~memorywire.governance.policies.ConflictPolicy`) turns that report
into an action, for every backend alike because it runs around the inner store:

- ``report``: nothing beyond the response's ``conflicts``;
- ``off``: the scan is skipped (the response carries none);
- ``auto``: after the write, each candidate at or above ``min_similarity`` is superseded by
  the new memory, through the governed ``update`` (so the audit log shows each close);
- ``review``: the candidates are found *before* the write; when one reaches
  ``min_similarity`` the remember is staged instead, its request proposing
  ``supersedes = [those ids]``. Approving it writes the memory and supersedes them in one
  step (the rule of an explicit ``supersedes``); rejecting it changes nothing. Weaker
  candidates are only reported, as under ``report``.
"""

from __future__ import annotations

from collections.abc import Sequence

from memorywire.governance.policies import ConflictPolicy
from memorywire.store.base import MemoryStore
from memorywire.store.timeline import conflicts_for, supersede
from memorywire.wire.models import ConflictCandidate, RememberRequest, RememberResponse

__all__ = ["apply_auto", "proposal", "strong"]


def strong(found: Sequence[ConflictCandidate] | None,
           policy: ConflictPolicy) -> list[ConflictCandidate]:
    """The candidates the policy acts on."""
    return [c for c in found or [] if c.similarity >= policy.min_similarity]


async def proposal(inner: MemoryStore, req: RememberRequest, policy: ConflictPolicy,
                   ) -> tuple[RememberRequest | None, list[ConflictCandidate]]:
    """Under ``review``: the request to stage (proposing to supersede the strong candidates;
    ``None`` when none is strong enough, and the caller writes) and every candidate found."""
    found = await conflicts_for(inner, req)
    acted = strong(found, policy)
    if not acted:
        return None, found
    ids = list(dict.fromkeys([*(req.supersedes or []), *(c.id for c in acted)]))
    return req.model_copy(update={"supersedes": ids}), found


async def apply_auto(store: MemoryStore, req: RememberRequest, resp: RememberResponse,
                     policy: ConflictPolicy) -> None:
    """Under ``auto``: supersede the strong candidates by the memory just written."""
    acted = [c.id for c in strong(resp.conflicts, policy)]
    if acted:
        await supersede(store, req.agent_id, resp.id, acted, req.user_id)
