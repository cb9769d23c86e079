"""Finding 10: only recall was rate-limited (383 remembers/s from one token). Writes now
have their own per-token bucket; the 429 names the limit that was hit and says when to
retry, in ``Retry-After`` over REST and ``retry_after`` in every envelope."""

from __future__ import annotations

import pytest

from memorywire.server.limits import RateLimiter
from tests.security.conftest import Caller, Rig

pytestmark = pytest.mark.anyio


class _Frozen:
    """A monotonic clock that does not move: the bucket never refills during the test."""

    def __call__(self) -> float:
        return 1000.0


async def test_writes_are_limited_per_token_and_the_429_names_the_limit(
    rig: Rig, call: Caller
) -> None:
    rig.dispatcher.write_limiter = RateLimiter(1.0, 3, now=_Frozen(), kind="write")
    outs = [
        await call("remember", {"agent_id": "A", "type": "semantic", "content": f"w{i}"},
                   rig.agent)
        for i in range(4)
    ]
    assert [o.status for o in outs[:3]] == [200, 200, 200]
    last = outs[3]
    assert last.status == 429 and last.code == "rate_limited", last
    assert last.body["details"][0]["message"].startswith("write:")
    assert "write rate limit" in last.body["message"]
    assert last.body["retry_after"] > 0
    # another token has its own bucket
    other = await call("remember", {"agent_id": "A", "type": "semantic", "content": "x"},
                       rig.admin)
    assert other.ok, other


async def test_rest_429_carries_retry_after(rig: Rig) -> None:
    rig.dispatcher.write_limiter = RateLimiter(1.0, 1, now=_Frozen(), kind="write")
    headers = {"authorization": f"Bearer {rig.agent}"}
    doc = {"agent_id": "A", "ids": ["nope"]}
    assert (await rig.http.post("/v0/forget", json=doc, headers=headers)).status_code == 200
    r = await rig.http.post("/v0/forget", json=doc, headers=headers)
    assert r.status_code == 429
    assert int(r.headers["retry-after"]) >= 1
