"""Finding 10: ``merge_content`` bypassed the 256 KB content limit (4.8 MB reached by
merging many memories, each under the limit). The joined text is now checked before the
merge is staged or applied: ``payload_too_large``, and every memory is left as it was."""

from __future__ import annotations

import pytest

from memorywire.store.base import ListQuery
from tests.security.conftest import Caller, Rig

pytestmark = pytest.mark.anyio

KB = 1024


async def test_merge_content_over_the_content_limit_is_refused(rig: Rig, call: Caller) -> None:
    ids = []
    for i in range(3):  # each 200 KB: under the limit alone, 600 KB joined
        out = await call(
            "remember",
            {"agent_id": "A", "type": "semantic", "content": f"{i} " + "x" * (200 * KB)},
        )
        assert out.ok, out
        ids.append(out.body["id"])
    before = rig.audit_len()
    out = await call(
        "merge",
        {"agent_id": "A", "canonical": ids[0], "duplicates": ids[1:], "strategy": "merge_content"},
    )
    assert out.status == 413 and out.code == "payload_too_large", out
    assert out.body["details"][0]["path"] == "/strategy"
    assert rig.audit_len() == before
    rows = await rig.gov.list(ListQuery(agent_id="A"))
    assert sorted(r.id for r in rows) == sorted(ids)
    assert all(len(str(r.content)) < 256 * KB for r in rows)


async def test_merge_content_within_the_limit_still_merges(rig: Rig, call: Caller) -> None:
    a = await call("remember", {"agent_id": "A", "type": "semantic", "content": "tea"})
    b = await call("remember", {"agent_id": "A", "type": "semantic", "content": "green tea"})
    out = await call(
        "merge",
        {
            "agent_id": "A",
            "canonical": a.body["id"],
            "duplicates": [b.body["id"]],
            "strategy": "merge_content",
        },
    )
    assert out.ok, out
