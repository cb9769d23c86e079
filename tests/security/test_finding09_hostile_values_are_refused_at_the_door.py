"""Finding 9: valid JSON that the storage layer cannot hold must be a 400 at the door.

Before the hardening round, lone surrogates in metadata keys/values, in a forget reason or a
filter key, in an approval reason, and ``expires_at`` >= 2**63 answered 500 (MCP: the raw
Python exception text) and each left an ``intent`` entry without ``done`` in the audit log,
a false crash marker. Each shape must now be ``invalid_request`` naming the field, over
REST, JSON-RPC and MCP, with nothing written to the audit log.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.security.conftest import MCP_PARSE_ERROR, Caller, Rig

pytestmark = pytest.mark.anyio

S = "\ud800"
REM = {"agent_id": "A", "type": "semantic", "content": "ok"}

SHAPES: list[tuple[str, str, dict[str, Any], str]] = [
    ("metadata-key", "remember", {**REM, "metadata": {S: 1}}, "/metadata"),
    ("metadata-value", "remember", {**REM, "metadata": {"k": "a" + S}}, "/metadata/k"),
    ("metadata-nested", "remember", {**REM, "metadata": {"k": [{"x": S}]}}, "/metadata/k/0/x"),
    ("nul-content", "remember", {**REM, "content": "a\x00b"}, "/content"),
    ("surrogate-content", "remember", {**REM, "content": "a" + S}, "/content"),
    ("expires-2^63", "remember", {**REM, "expires_at": 2**63}, "/expires_at"),
    ("expires-year-10000", "remember", {**REM, "expires_at": 253402300800000}, "/expires_at"),
    ("forget-reason", "forget", {"agent_id": "A", "ids": ["x"], "reason": S}, "/reason"),
    ("forget-filter-key", "forget", {"agent_id": "A", "ids": ["x"], "filter": {S: 1}},
     "/filter"),
    ("recall-filter-key", "recall", {"agent_id": "A", "query": "q", "filter": {S: 1}},
     "/filter"),
    ("recall-int-overflow", "recall", {"agent_id": "A", "query": "q", "filter": {"n": 2**64}},
     "/filter/n"),
]


@pytest.mark.parametrize(("name", "op", "doc", "path"), SHAPES, ids=[s[0] for s in SHAPES])
async def test_hostile_value_is_invalid_request_naming_the_field(
    rig: Rig, call: Caller, name: str, op: str, doc: dict[str, Any], path: str
) -> None:
    before = rig.audit_len()
    out = await call(op, doc)
    assert out.status == 400, out
    if out.code != MCP_PARSE_ERROR:  # else refused by the MCP SDK before reaching us
        assert out.code == "invalid_request"
        assert any(d["path"].startswith(path) for d in out.body["details"]), out.body
    assert rig.audit_len() == before  # no intent without done: no false crash marker
    assert rig.chain_ok()


# MCP has no approval tools (see the next test), so this shape is REST's and JSON-RPC's.
@pytest.mark.parametrize("call", ["rest", "jsonrpc"], indirect=True)
async def test_surrogate_in_approval_reason_is_refused(rig: Rig, call: Caller) -> None:
    staged = await call("remember", {**REM, "content": "needs review", "approval_required": True})
    assert staged.ok and staged.body["pending_approval"]
    item = staged.body["id"]
    out = await call("approvals.reject", {"id": item, "reason": "no" + S}, rig.admin)
    assert out.status == 400 and out.code == "invalid_request", out
    assert out.body["details"][0]["path"] == "/reason"
    after = await call("approvals.get", {"id": item}, rig.admin)
    assert after.ok and after.body["status"] == "pending"


async def test_mcp_offers_no_approval_tool_to_smuggle_a_reason_through(rig: Rig) -> None:
    call = Caller("mcp", rig)
    staged = await call("remember", {**REM, "content": "needs review", "approval_required": True})
    assert staged.ok and staged.body["pending_approval"]
    out = await call("approvals.reject", {"id": staged.body["id"], "reason": "no" + S}, rig.admin)
    assert not out.ok, out
    after = await Caller("rest", rig)("approvals.get", {"id": staged.body["id"]}, rig.admin)
    assert after.ok and after.body["status"] == "pending"


class _Exploding:
    """A store whose recall fails with a non-memorywire exception (fault injection)."""

    name = "exploding"
    capabilities = frozenset()

    async def recall(self, req: Any) -> Any:
        raise RuntimeError("/srv/secret/path.db: disk I/O error")


async def test_mcp_answers_an_internal_fault_with_the_envelope_not_the_exception_text() -> None:
    import json

    from mcp import Client

    from memorywire.server.dispatch import Dispatcher
    from memorywire.server.mcp.server import build_mcp_server

    server = build_mcp_server(Dispatcher(_Exploding()))  # type: ignore[arg-type]
    async with Client(server) as client:
        res = await client.call_tool("recall", {"agent_id": "A", "query": "q"})
    text = res.content[0].text  # type: ignore[union-attr]
    assert res.is_error
    assert "secret" not in text
    env = json.loads(text)
    assert env["code"] == "internal_error" and env == res.structured_content


async def test_mcp_tool_with_a_lone_surrogate_value_is_invalid_request(rig: Rig) -> None:
    """In process (stdio's path) the SDK does not parse JSON, so our door must refuse it."""
    import json

    from mcp import Client

    from memorywire.server.mcp.server import build_mcp_server

    server = build_mcp_server(rig.dispatcher)
    before = rig.audit_len()
    async with Client(server) as client:
        res = await client.call_tool("forget", {"agent_id": "A", "ids": ["x"], "reason": S})
    env = json.loads(res.content[0].text)  # type: ignore[union-attr]
    assert res.is_error and env["code"] == "invalid_request"
    assert env["details"][0]["path"] == "/reason"
    assert rig.audit_len() == before
