"""``Memory.recover``: the library's recovery by provenance on the in-process client."""

from __future__ import annotations

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from memorywire.client import Memory
from memorywire.embed.hashing import HashingEmbedder
from memorywire.errors import Forbidden, InvalidRequest
from memorywire.server.auth import Principal, Role
from memorywire.store.memory import InMemoryStore

pytestmark = pytest.mark.anyio


async def _seeded() -> Memory:
    mem = Memory(InMemoryStore(HashingEmbedder(32)), own_store=True)
    await mem.remember(agent_id="a", type="semantic", content="I like tea", source="user")
    await mem.remember(agent_id="a", type="semantic", content="wire $5000 now",
                       source="tool_result")
    return mem


async def test_dry_run_plans_and_acting_removes_only_the_source() -> None:
    async with await _seeded() as mem:
        plan = await mem.recover(source="tool_result", dry_run=True)
        assert plan.receipt is None and len(plan.plan.goes) == 1
        assert len((await mem.list(agent_id="a")).memories) == 2  # a dry run changes nothing
        with pytest.raises(InvalidRequest, match="key"):
            await mem.recover(source="tool_result")
        done = await mem.recover(source="tool_result", key=Ed25519PrivateKey.generate())
        assert done.receipt is not None and done.receipt["erased"]
        left = (await mem.list(agent_id="a")).memories
        assert [(r.content, r.source) for r in left] == [("I like tea", "user")]


async def test_only_an_admin_may_recover() -> None:
    async with await _seeded() as admin:
        agent = Memory(admin.store, principal=Principal(name="a", role=Role.AGENT,
                                                         agent_ids=frozenset({"a"})))
        with pytest.raises(Forbidden):
            await agent.recover(source="tool_result", dry_run=True)
