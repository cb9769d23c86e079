"""What the dispatcher needs from governance, scoped to the calling principal.

Implementations filter by the principal's agent scope and answer ``NotFound`` for an approval
outside it, exactly as for an id that does not exist, so a tenant learns nothing of another.
"""

from __future__ import annotations

from typing import Any, Protocol

from memorywire.server.auth import Principal

__all__ = ["Approvals"]


class Approvals(Protocol):
    async def list_approvals(
        self, p: Principal, *, agent_id: str | None, status: str, limit: int
    ) -> list[dict[str, Any]]: ...

    async def get(self, p: Principal, approval_id: str) -> dict[str, Any]:
        """Raises ``NotFound`` when missing or outside ``p``'s scope."""
        ...

    async def decide(
        self, p: Principal, approval_id: str, approve: bool, reason: str | None
    ) -> dict[str, Any]: ...

    async def audit(
        self, p: Principal, *, agent_id: str | None, limit: int
    ) -> list[dict[str, Any]]: ...

    async def verify(self) -> dict[str, Any]: ...
