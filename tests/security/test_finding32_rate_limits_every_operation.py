"""Issue 32 (Low): ``update``, ``erase`` and the admin import and export never got a 429 under
rate limits, so one token could rewrite or dump a store as fast as the server answered. Every
operation of the dispatcher's rate-limit table now takes a token from its bucket (writes from
the write bucket, bulk reads from the recall bucket) on every transport that serves it.

Before the fix: the second call of ``update``, ``erase``, ``recover``, ``admin.import`` and
``admin.export`` with an empty bucket answered as if there were no limit.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from memorywire.server.limits import RateLimiter
from tests.security.conftest import Caller, Rig

pytestmark = pytest.mark.anyio

#: One request per operation of the table: what matters is the second call's 429, so the
#: first may fail for its own reasons (an unknown id), as long as it passed the limit.
CALLS: dict[str, dict[str, Any]] = {
    "remember": {"agent_id": "A", "type": "semantic", "content": "x"},
    "forget": {"agent_id": "A", "ids": ["nope"]},
    "merge": {"agent_id": "A", "canonical": "c", "duplicates": ["d"]},
    "expire": {"agent_id": "A", "policy": {"older_than_days": 30}},
    "update": {"agent_id": "A", "id": "nope", "content": "x"},
    "erase": {"agent_id": "A", "user_id": "nobody"},
    "recover": {"agent_id": "A", "dry_run": True},
    "recall": {"agent_id": "A", "query": "x"},
    "list": {"agent_id": "A"},
}
#: The HTTP-only admin routes of the table.
ADMIN = ("admin.import", "admin.export")


class _Frozen:
    def __call__(self) -> float:
        return 1000.0


def _one_token_each(rig: Rig) -> None:
    rig.dispatcher.write_limiter = RateLimiter(1.0, 1, now=_Frozen(), kind="write")
    rig.dispatcher.rate_limiter = RateLimiter(1.0, 1, now=_Frozen(), kind="recall")


def test_the_tables_are_what_this_test_walks() -> None:
    """Every operation of the operation table that writes or pages draws from a bucket, and
    so does every transport route that stands for many of them (the dumps)."""
    from memorywire.wire.operations import OPERATION_TABLE
    from memorywire.wire.routes import ROUTES

    limited = {s.name for s in OPERATION_TABLE if s.rate is not None}
    assert limited == set(CALLS)
    assert {s.name for s in OPERATION_TABLE if s.effect != "read" and s.tool} <= limited
    assert {r.name for r in ROUTES if r.rate is not None} == set(ADMIN)


@pytest.mark.parametrize("op", sorted(CALLS))
async def test_every_operation_gets_a_429(rig: Rig, call: Caller, op: str) -> None:
    _one_token_each(rig)
    await call(op, CALLS[op], rig.admin)
    second = await call(op, CALLS[op], rig.admin)
    assert second.status == 429 and second.code == "rate_limited", (op, second)


async def _admin(rig: Rig, op: str) -> httpx.Response:
    auth = {"authorization": f"Bearer {rig.admin}"}
    if op == "admin.export":
        return await rig.http.get("/v0/admin/export", headers=auth)
    return await rig.http.post("/v0/admin/import", content=b"",
                               headers={**auth, "content-type": "application/x-ndjson"})


@pytest.mark.parametrize("op", ADMIN)
async def test_admin_import_and_export_get_a_429(rig: Rig, op: str) -> None:
    _one_token_each(rig)
    await _admin(rig, op)
    second = await _admin(rig, op)
    assert second.status_code == 429, (op, second.status_code, second.text)
    assert int(second.headers["retry-after"]) >= 1
