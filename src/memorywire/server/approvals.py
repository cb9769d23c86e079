"""What the dispatcher needs from governance, scoped to the calling principal.

Implementations filter by the principal's agent scope and answer ``NotFound`` for an approval
outside it, exactly as for an id that does not exist, so a tenant learns nothing of another.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from memorywire.errors import NotFound
from memorywire.server.auth import Principal

if TYPE_CHECKING:
    from memorywire.governance import GovernedStore

__all__ = ["Approvals", "GovernanceApprovals"]


class Approvals(Protocol):
    async def list_approvals(
        self, p: Principal, *, agent_id: str | None, status: str, limit: int
    ) -> list[dict[str, Any]]: ...

    async def get(self, p: Principal, approval_id: str) -> dict[str, Any]:
        """Raises ``NotFound`` when missing or outside ``p``'s scope."""
        ...

    async def check_visible(self, p: Principal, approval_id: str) -> None:
        """Raise ``NotFound`` (as :meth:`get` would) when missing or outside ``p``'s scope."""
        ...

    async def decide(
        self, p: Principal, approval_id: str, approve: bool, reason: str | None
    ) -> dict[str, Any]: ...

    async def audit(
        self, p: Principal, *, agent_id: str | None, limit: int
    ) -> list[dict[str, Any]]: ...

    async def verify(self) -> dict[str, Any]: ...


def _hidden(approval_id: str) -> NotFound:
    # One message for "missing" and "not yours", so the two cannot be told apart.
    return NotFound(f"no approval {approval_id!r}")


class GovernanceApprovals:
    """:class:`Approvals` over a :class:`~memorywire.governance.GovernedStore`."""

    def __init__(self, governed: GovernedStore) -> None:
        self.governed = governed

    def _visible(self, p: Principal, item: Mapping[str, Any]) -> bool:
        if not p.owns_agent(str(item.get("agent_id"))):
            return False
        if p.user_ids is None:
            return True
        request = item.get("request")
        user = request.get("user_id") if isinstance(request, Mapping) else None
        return user in p.user_ids

    def _agents(self, p: Principal, agent_id: str | None) -> list[str | None]:
        if agent_id is not None:
            return [agent_id]
        if p.agent_ids is None:
            return [None]
        return [*sorted(p.agent_ids)]

    async def list_approvals(
        self, p: Principal, *, agent_id: str | None, status: str, limit: int
    ) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        for agent in self._agents(p, agent_id):
            items = await self.governed.alist_pending(agent_id=agent, status=status, limit=limit)
            found.extend(i for i in items if self._visible(p, i))
        found.sort(key=lambda i: (i.get("created_at") or 0, str(i.get("id"))))
        return found[:limit]

    async def get(self, p: Principal, approval_id: str) -> dict[str, Any]:
        try:
            review = await self.governed.get_review(approval_id)
        except NotFound:
            raise _hidden(approval_id) from None
        if not self._visible(p, review):
            raise _hidden(approval_id)
        return review

    async def check_visible(self, p: Principal, approval_id: str) -> None:
        item = await self.governed.get_item(approval_id)
        if item is None or not self._visible(
            p, {"agent_id": item.agent_id, "request": item.request}
        ):
            raise _hidden(approval_id)

    async def decide(
        self, p: Principal, approval_id: str, approve: bool, reason: str | None
    ) -> dict[str, Any]:
        with p.acting():
            return await self.governed.decide(approval_id, p.name, approve, reason)

    async def audit(
        self, p: Principal, *, agent_id: str | None, limit: int
    ) -> list[dict[str, Any]]:
        entries: list[dict[str, Any]] = []
        for agent in self._agents(p, agent_id):
            found = await self.governed.aaudit_entries(agent_id=agent, limit=limit)
            if p.user_ids is not None:
                # A user-scoped token sees entries about its users only; an entry that names
                # no user (an agent-wide operation) is not about them alone, so it is hidden.
                found = [e for e in found if e["details"].get("user_id") in p.user_ids]
            entries.extend(found)
        entries.sort(key=lambda e: e.get("seq") or 0)
        return entries[-limit:]

    async def verify(self) -> dict[str, Any]:
        return await self.governed.averify()
