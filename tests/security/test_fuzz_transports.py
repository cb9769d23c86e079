"""Property: no request, however hostile, gets an answer >= 500 on any transport.

Hypothesis builds requests for every operation (the five wire operations, approvals, audit,
health) from a valid template with fields replaced by hostile values: lone surrogates,
NUL, RTL overrides, 1 MB strings, integers past 2**63, huge floats and wrong types, plus
unknown keys and documents that are not objects at all. Each goes over one of in-process
dispatch, REST, JSON-RPC or MCP (raw JSON to ``/mcp``) against a governed SQLite server.
After the run the server still answers health and the audit chain verifies.

``MEMORYWIRE_FUZZ_EXAMPLES`` sets the number of requests (default 1000, about 20 s
here); set it to thousands for a longer hunt, and ``MEMORYWIRE_FUZZ_RANDOM=1`` to draw
new examples instead of the fixed, reproducible ones.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import anyio.from_thread
import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memorywire.errors import MemorywireError
from tests.security.conftest import (
    FIVE,
    MCP_PARSE_ERROR,
    Outcome,
    Rig,
    jsonrpc,
    mcp,
    open_rig,
    rest,
)

#: A failing 1 MB example would otherwise warn about its own repr (warnings are errors).
pytestmark = pytest.mark.filterwarnings("ignore::hypothesis.errors.HypothesisWarning")
EXAMPLES = int(os.environ.get("MEMORYWIRE_FUZZ_EXAMPLES", "1000"))
MB = 1 << 20

_ATOMS = ["\ud800", "\udfff", "\x00", "\u202e", "\u200f", "a", "é", "😀", "\n", "\\", '"', "~", "/"]
_FIXED_STRINGS = [
    "", " ", "\ud800", "a\x00b", "\u202eevil\u202c", "x" * MB, "é" * (300 << 10),
    "ids", "metadata", "A", "semantic", "rrf", "pending",
]
_NUMBERS = [
    2**63, 2**63 - 1, -(2**63) - 1, 2**64, 10**30, -1, 0, 1, 2**53 + 1,
    253_402_300_800_000, 1e308, -1e308, 0.5, -0.0,
]

strings = (
    st.sampled_from(_FIXED_STRINGS)
    | st.text(alphabet=st.sampled_from(_ATOMS), max_size=12)
    | st.text(max_size=16)
)
numbers = st.sampled_from(_NUMBERS) | st.integers() | st.floats(
    allow_nan=False, allow_infinity=False
)
scalars = strings | numbers | st.booleans() | st.none()
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(strings, inner, max_size=3),
    max_leaves=6,
)

TEMPLATES: dict[str, tuple[dict[str, Any], tuple[str, ...]]] = {
    "remember": (
        {"agent_id": "A", "type": "semantic", "content": "the user likes tea"},
        ("agent_id", "type", "content", "metadata", "id", "user_id", "expires_at",
         "confidence", "source", "approval_required"),
    ),
    "recall": (
        {"agent_id": "A", "query": "tea"},
        ("query", "k", "filter", "types", "hops", "fusion", "user_id", "agent_id"),
    ),
    "forget": (
        {"agent_id": "A", "ids": ["x"]},
        ("ids", "filter", "hard_delete", "reason", "user_id"),
    ),
    "merge": (
        {"agent_id": "A", "canonical": "x", "duplicates": ["y"]},
        ("canonical", "duplicates", "strategy", "user_id"),
    ),
    "expire": (
        {"agent_id": "A", "policy": {"older_than_days": 30000}},
        ("policy", "action", "user_id"),
    ),
    "approvals.list": ({}, ("agent_id", "status", "limit")),
    "approvals.get": ({"id": "x"}, ("id",)),
    "approvals.approve": ({"id": "x"}, ("id", "reason")),
    "approvals.reject": ({"id": "x"}, ("id", "reason")),
    "audit.list": ({}, ("agent_id", "limit")),
    "health": ({}, ()),
}


@st.composite
def requests(draw: st.DrawFn) -> tuple[str, str, Any]:
    transport = draw(st.sampled_from(["inprocess", "rest", "jsonrpc", "mcp"]))
    ops = FIVE if transport == "mcp" else tuple(TEMPLATES)
    op = draw(st.sampled_from(ops))
    template, fields = TEMPLATES[op]
    if draw(st.integers(0, 9)) == 0:  # sometimes not an object at all
        return transport, op, draw(values)
    doc = dict(template)
    for name in draw(st.lists(st.sampled_from(fields), max_size=3, unique=True)) if fields else []:
        doc[name] = draw(values)
    if draw(st.booleans()) and draw(st.booleans()):
        doc[draw(strings)] = draw(values)
    return transport, op, doc


def _encodable(doc: Any) -> bool:
    try:
        json.dumps(doc).encode("utf-8")
    except (TypeError, ValueError):
        return False
    return True


async def _inprocess(rig: Rig, op: str, doc: Any) -> Outcome:
    try:
        principal = rig.tokens.authenticate(rig.admin)
        result = await rig.dispatcher.dispatch(op, doc, principal)
    except MemorywireError as err:
        return Outcome(err.http_status, err.code, err.to_envelope())
    return Outcome(200, "", result.body)


async def _one(rig: Rig, transport: str, op: str, doc: Any) -> Outcome | None:
    if transport == "inprocess":
        return await _inprocess(rig, op, doc)
    if not isinstance(doc, dict):
        if transport == "rest" and op in FIVE:
            r = await rig.http.post(f"/v0/{op}", content=json.dumps(doc),
                                    headers={"authorization": f"Bearer {rig.admin}",
                                             "content-type": "application/json"})
            return Outcome(r.status_code, "", r.text)
        doc = {"_": doc}
    if transport == "rest" and op not in FIVE:
        # Query strings and path segments carry text: send what a URL can hold.
        flat = {k: v if isinstance(v, str) else json.dumps(v) for k, v in doc.items()}
        try:
            for v in [*flat.values(), *flat]:
                v.encode("utf-8")
        except UnicodeEncodeError:
            return None  # no HTTP client can put this in a URL
        doc = flat
    fn = {"rest": rest, "jsonrpc": jsonrpc, "mcp": mcp}[transport]
    try:
        return await fn(rig, op, doc, rig.admin)
    except httpx.InvalidURL:
        return None  # the client refused to build the URL (too long): nothing was sent


@pytest.fixture
def portal_rig(tmp_path: Path) -> Iterator[tuple[anyio.from_thread.BlockingPortal, Rig]]:
    """The rig on an event loop in another thread, so hypothesis drives it synchronously."""
    with (
        anyio.from_thread.start_blocking_portal() as portal,
        portal.wrap_async_context_manager(open_rig(tmp_path)) as rig,
    ):
        yield portal, rig


@pytest.mark.slow
def test_no_request_on_any_transport_answers_500(
    portal_rig: tuple[anyio.from_thread.BlockingPortal, Rig],
) -> None:
    portal, rig = portal_rig
    seen: list[tuple[str, str, int]] = []

    @given(req=requests())
    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        derandomize=not os.environ.get("MEMORYWIRE_FUZZ_RANDOM"),
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    def one(req: tuple[str, str, Any]) -> None:
        transport, op, doc = req
        if not _encodable(doc) and transport != "inprocess":
            return
        out = portal.call(_one, rig, transport, op, doc)
        if out is None:
            return
        seen.append((transport, op, out.status))
        assert out.status < 500, (transport, op, out)
        assert out.code != MCP_PARSE_ERROR or transport == "mcp"

    one()
    assert len({t for t, _, _ in seen}) == 4  # every transport was exercised
    health = portal.call(rest, rig, "health", {}, rig.admin)
    assert health.status == 200 and health.body["status"] == "ok"
    assert rig.chain_ok()
