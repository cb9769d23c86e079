"""Finding 10 (honest capability): ``approval_required: true`` on a server without
governance used to be ignored, and the write went live unreviewed. It must now be
``capability_missing`` naming the field, with nothing stored, over every transport."""

from __future__ import annotations

import pytest

from memorywire.store.base import ListQuery
from tests.security.conftest import Caller, Rig

pytestmark = pytest.mark.anyio


@pytest.fixture
def governed() -> bool:
    return False


async def test_approval_required_without_governance_is_capability_missing(
    rig: Rig, call: Caller
) -> None:
    out = await call(
        "remember",
        {"agent_id": "A", "type": "semantic", "content": "wire 5000 EUR",
         "approval_required": True},
    )
    assert out.status == 422 and out.code == "capability_missing", out
    assert out.body["details"][0]["path"] == "/approval_required"
    assert await rig.dispatcher.store.list(ListQuery(agent_id="A")) == []
