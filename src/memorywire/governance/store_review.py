"""A review of what the store already holds: near-duplicates and contradictions among its
current memories, proposed as merge, supersede or forget candidates for a reviewer.

The write path reports these when a memory is written (``near_duplicates``, ``conflicts``)
and moves on; this looks back over what is stored, with the same pure rules: two memories
of one scope (agent, user, type) are **duplicates** when they have the same content or the
same words once normalised (:func:`memorywire.core.duplicates.likeness`), and the newer
**contradicts** the older when the word rules of :func:`memorywire.core.contradiction.judge`
say it gives the same subject another value. Only current memories take part: one already
superseded, or whose validity has ended, has been decided.

A proposal is only a proposal. :func:`apply` carries a reviewer's choice out through the
governed store's own operations, acting as that reviewer: ``merge`` and ``forget`` (soft)
as any caller would send them, ``supersede`` as the wire's ``update`` with ``supersedes``
(gated by :meth:`GovernedStore.gate_update`, then :func:`apply_update`). Each is therefore
audited, and one the policy (or ``require_approval_for``) sends to review is staged in the
approval queue like any other, never written behind governance.

The scan reads at most :data:`SCAN_LIMIT` memories and compares, per scope, the newest
:data:`SCOPE_LIMIT`: pairs are quadratic, and a page a reviewer can decide holds a few dozen.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from memorywire.core.contradiction import judge
from memorywire.core.duplicates import likeness
from memorywire.core.records import ListQuery
from memorywire.core.timeline import validity_of
from memorywire.governance.actor import acting_as
from memorywire.governance.store import GovernedStore
from memorywire.store.timeline import apply_update
from memorywire.wire.memory_ops import UpdateMemoryRequest
from memorywire.wire.models import ForgetRequest, MemoryRecord, MemoryType, MergeRequest

__all__ = ["ACTIONS", "SCAN_LIMIT", "SCOPE_LIMIT", "Outcome", "Proposal", "apply", "by_key",
           "propose"]

Kind = Literal["duplicate", "contradiction"]
Action = Literal["merge", "supersede", "forget"]
#: What each kind of proposal may be answered with; the first is the default.
ACTIONS: dict[str, tuple[Action, ...]] = {
    "duplicate": ("merge", "forget"),
    "contradiction": ("supersede", "forget"),
}
SCAN_LIMIT = 20_000
SCOPE_LIMIT = 400
_PAGE = 1000


@dataclass(frozen=True)
class Proposal:
    """One candidate: ``keep`` stays, ``others`` are merged into it, superseded by it, or
    forgotten. ``key`` names the candidate by its memories, so a decision taken on a page
    finds the same candidate (or none, if the store changed) when it is carried out."""

    kind: Kind
    agent_id: str
    user_id: str | None
    type: str
    keep: MemoryRecord
    others: tuple[MemoryRecord, ...]
    why: str
    similarity: float

    @property
    def key(self) -> str:
        ids = ",".join([self.kind, self.keep.id, *sorted(o.id for o in self.others)])
        return hashlib.sha256(ids.encode()).hexdigest()[:16]

    @property
    def actions(self) -> tuple[Action, ...]:
        return ACTIONS[self.kind]


@dataclass
class Outcome:
    """What :func:`apply` did: carried out, staged for approval (the item ids), or refused."""

    done: list[str] = field(default_factory=list)
    staged: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)


def _current(r: MemoryRecord, now_ms: int) -> bool:
    v = validity_of(r.metadata, r.created_at)
    return v.superseded_by is None and (v.valid_to is None or v.valid_to > now_ms)


def _text(r: MemoryRecord) -> str | None:
    return r.content if isinstance(r.content, str) else None


async def _current_memories(governed: GovernedStore, agent_id: str | None,
                            now_ms: int) -> list[MemoryRecord]:
    out: list[MemoryRecord] = []
    after: str | None = None
    read = 0
    while read < SCAN_LIMIT:
        rows = await governed.list(ListQuery(agent_id=agent_id, limit=_PAGE, after_id=after))
        read += len(rows)
        out += [r for r in rows if r.type is not MemoryType.PROCEDURAL and _current(r, now_ms)]
        if len(rows) < _PAGE:
            break
        after = rows[-1].id
    return out


def _scope_proposals(rows: list[MemoryRecord]) -> list[Proposal]:
    """Duplicate clusters (the oldest kept), then contradictions among what is left (the
    newer kept); a memory is in one proposal at most."""
    rows = sorted(rows, key=lambda r: (r.created_at, r.id))[-SCOPE_LIMIT:]
    texts = [(r.id, t) for r in rows if (t := _text(r)) is not None]
    by_id = {r.id: r for r in rows}
    out: list[Proposal] = []
    taken: set[str] = set()
    first = rows[0]
    for n, (mid, text) in enumerate(texts):
        if mid in taken:
            continue
        like = likeness(by_id[mid].type, text, [p for p in texts[n + 1:] if p[0] not in taken])
        twins = [*like.identical, *like.same_words]
        if twins:
            taken.update([mid, *twins])
            out.append(Proposal("duplicate", first.agent_id, first.user_id, first.type.value,
                                by_id[mid], tuple(by_id[t] for t in twins),
                                "same content" if not like.same_words else
                                "same words (case, spacing or punctuation aside)", 1.0))
    left = [(mid, text) for mid, text in texts if mid not in taken]
    for n in range(len(left) - 1, -1, -1):  # newest first: it is the one that holds now
        new_id, new_text = left[n]
        if new_id in taken:
            continue
        for old_id, old_text in reversed(left[:n]):
            if old_id in taken:
                continue
            verdict = judge(old_text, new_text)
            if verdict is not None:
                taken.update([new_id, old_id])
                out.append(Proposal("contradiction", first.agent_id, first.user_id,
                                    first.type.value, by_id[new_id], (by_id[old_id],),
                                    verdict[1], round(verdict[0], 4)))
                break
    return out


async def propose(governed: GovernedStore, now_ms: int, *,
                  agent_id: str | None = None) -> list[Proposal]:
    """The candidates among the store's current memories (of ``agent_id``, or of every
    agent), scope by scope."""
    scopes: dict[tuple[str, str | None, str], list[MemoryRecord]] = defaultdict(list)
    for r in await _current_memories(governed, agent_id, now_ms):
        scopes[(r.agent_id, r.user_id, r.type.value)].append(r)
    out: list[Proposal] = []
    for key in sorted(scopes, key=lambda k: (k[0], k[1] or "", k[2])):
        out += _scope_proposals(scopes[key])
    return out


async def apply(governed: GovernedStore, proposal: Proposal, action: str,
                reviewer: str) -> Outcome:
    """Carry out ``action`` on ``proposal`` through the governed store as ``reviewer`` (see
    the module); an action the proposal does not offer raises ``ValueError``."""
    if action not in proposal.actions:
        raise ValueError(f"action: {proposal.kind} takes {' or '.join(proposal.actions)}")
    p, out = proposal, Outcome()
    others = [o.id for o in p.others]
    reason = f"store review by {reviewer}: {p.kind} of {p.keep.id} ({p.why})"
    with acting_as(reviewer):
        if action == "merge":
            mr = await governed.merge(MergeRequest(agent_id=p.agent_id, user_id=p.user_id,
                                                   canonical=p.keep.id, duplicates=others))
            (out.staged if mr.pending_approval else out.done).append(
                mr.approval_id or p.keep.id)
        elif action == "forget":
            fr = await governed.forget(ForgetRequest(agent_id=p.agent_id, user_id=p.user_id,
                                                     ids=others, reason=reason))
            if fr.pending_approval:
                out.staged.append(fr.approval_id or "")
            else:
                out.done += fr.forgotten_ids
        else:
            req = UpdateMemoryRequest(agent_id=p.agent_id, user_id=p.user_id, id=p.keep.id,
                                      supersedes=others, reason=reason)
            staged = await governed.gate_update(req)
            if staged is not None:
                out.staged.append(staged)
            else:
                await apply_update(governed, req)
                out.done.append(p.keep.id)
    return out


def by_key(proposals: Sequence[Proposal]) -> dict[str, Proposal]:
    return {p.key: p for p in proposals}
