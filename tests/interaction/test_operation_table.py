"""The operation table is the whole surface: each entry answers, as itself, on every transport
that lists it; no transport offers an operation the table lacks; and the roles, rate limits
and spans each entry names are the ones enforced.

"Answers as itself" is observed at the dispatcher (an observer records the operation each
call runs), so a transport that routed ``memory.get`` to ``list`` would fail here even though
both answer 200. Governance is on: destructive MCP tools then reach the dispatcher (staged)
instead of being refused at the door.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import pytest
from mcp import Client
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from memorywire.cli.main import build_parser
from memorywire.errors import Forbidden, MemorywireError, RateLimited
from memorywire.server.auth import Principal, Role
from memorywire.server.dispatch import DispatchResult
from memorywire.server.jsonrpc import METHOD_NOT_FOUND, METHODS
from memorywire.server.limits import RateLimiter
from memorywire.server.mcp.server import build_mcp_server
from memorywire.server.openapi import openapi_document
from memorywire.server.tracing import TracedStore, Tracing
from memorywire.wire.operations import OPERATION_TABLE, OperationSpec, by_tool, operation_names
from memorywire.wire.routes import ROUTES, TRANSPORT_ROUTES, route_for

from .conftest import Rest, World

pytestmark = pytest.mark.anyio

#: A request each operation accepts (or refuses only after its role and rate checks).
DOCS: dict[str, dict[str, Any]] = {
    "remember": {"agent_id": "A", "type": "semantic", "content": "the table holds"},
    "recall": {"agent_id": "A", "query": "table"},
    "get": {"agent_id": "A", "id": "no-such-id"},
    "list": {"agent_id": "A"},
    "update": {"agent_id": "A", "id": "no-such-id", "content": "changed"},
    "history": {"agent_id": "A", "id": "no-such-id"},
    "forget": {"agent_id": "A", "ids": ["no-such-id"]},
    "erase": {"agent_id": "A"},
    "merge": {"agent_id": "A", "canonical": "no-such-id", "duplicates": ["other-id"]},
    "expire": {"agent_id": "A", "policy": {"confidence_below": 0.5}},
    "recover": {"source": "agent:Z", "dry_run": True},
    "approvals.list": {},
    "approvals.get": {"id": "no-such-approval"},
    "approvals.approve": {"id": "no-such-approval"},
    "approvals.reject": {"id": "no-such-approval"},
    "audit.list": {},
    "audit.verify": {},
    "health": {},
    "schema": {"name": "remember"},
}
SPECS = {s.name: s for s in OPERATION_TABLE}
Observer = Callable[[str, Principal, Callable[[], Awaitable[DispatchResult]]],
                    Awaitable[DispatchResult]]


@pytest.fixture
def governed() -> bool:
    return True


@pytest.fixture
async def ran(world: World) -> list[str]:
    """The operations the dispatcher runs from now on, in order."""
    calls: list[str] = []
    inner: Observer | None = world.dispatcher.observer

    async def record(op: str, p: Principal,
                     call: Callable[[], Awaitable[DispatchResult]]) -> DispatchResult:
        calls.append(op)
        return await call() if inner is None else await inner(op, p, call)

    world.dispatcher.observer = record
    return calls


def test_every_table_entry_has_a_request_here() -> None:
    assert set(DOCS) == set(operation_names())


async def test_the_dispatcher_runs_exactly_the_table(world: World) -> None:
    assert world.dispatcher.operations == operation_names()


@pytest.mark.parametrize("spec", [s for s in OPERATION_TABLE if s.rpc], ids=lambda s: s.name)
async def test_every_json_rpc_method_runs_its_operation(
    spec: OperationSpec, world: World, asgi_client: httpx.AsyncClient, ran: list[str]
) -> None:
    call = {"jsonrpc": "2.0", "id": 1, "method": spec.rpc, "params": DOCS[spec.name]}
    r = await asgi_client.post("/v0/rpc", content=json.dumps(call),
                               headers={"authorization": f"Bearer {world.admin}",
                                        "content-type": "application/json"})
    assert r.status_code == 200
    assert r.json().get("error", {}).get("code") != METHOD_NOT_FOUND
    assert ran == [spec.name]


async def test_json_rpc_offers_nothing_the_table_lacks(
    world: World, asgi_client: httpx.AsyncClient, ran: list[str]
) -> None:
    assert {s.rpc: s.name for s in OPERATION_TABLE if s.rpc} == METHODS
    call = {"jsonrpc": "2.0", "id": 1, "method": "memory.undo", "params": {}}
    r = await asgi_client.post("/v0/rpc", content=json.dumps(call),
                               headers={"authorization": f"Bearer {world.admin}",
                                        "content-type": "application/json"})
    assert r.json()["error"]["code"] == METHOD_NOT_FOUND and ran == []


@pytest.mark.parametrize("spec", OPERATION_TABLE, ids=lambda s: s.name)
async def test_every_operation_has_a_rest_route_that_runs_it(
    spec: OperationSpec, world: World, asgi_client: httpx.AsyncClient, ran: list[str]
) -> None:
    assert route_for(spec.name, DOCS[spec.name]) is not None
    await Rest(asgi_client).call(spec.name, DOCS[spec.name], world.admin)
    assert ran == [spec.name]


def test_rest_offers_nothing_the_table_lacks() -> None:
    assert {r.op for r in ROUTES if r.name not in TRANSPORT_ROUTES} == set(operation_names())


async def test_mcp_lists_the_table_tools_in_its_order(world: World) -> None:
    async with Client(build_mcp_server(world.dispatcher)) as c:
        tools = (await c.list_tools()).tools
    assert [t.name for t in tools] == [s.tool for s in OPERATION_TABLE if s.tool]
    for t in tools:
        spec = by_tool()[t.name]
        assert t.description == spec.description
        assert t.annotations is not None
        assert t.annotations.read_only_hint is spec.read_only
        assert t.annotations.destructive_hint is spec.destructive


@pytest.mark.parametrize("spec", [s for s in OPERATION_TABLE if s.tool], ids=lambda s: s.name)
async def test_every_mcp_tool_runs_its_operation(
    spec: OperationSpec, world: World, ran: list[str]
) -> None:
    args = dict(DOCS[spec.name])
    if spec.name == "recover":
        args.pop("dry_run")  # a tool call that removes memory: staged, still dispatched
    async with Client(build_mcp_server(world.dispatcher)) as c:
        await c.call_tool(spec.tool or "", args)
    assert ran == [spec.name]


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


@pytest.mark.parametrize("spec", [s for s in OPERATION_TABLE if s.cli], ids=lambda s: s.name)
def test_every_cli_command_of_the_table_exists(spec: OperationSpec) -> None:
    parser = build_parser()
    for word in (spec.cli or "").split():
        found = _subcommands(parser)
        assert word in found, f"memorywire {spec.cli}: no subcommand {word!r}"
        parser = found[word]


def test_openapi_describes_each_wire_operation_by_its_models() -> None:
    doc = openapi_document()
    for spec in OPERATION_TABLE:
        route = route_for(spec.name, DOCS[spec.name])
        assert route is not None
        described = doc["paths"][route.openapi_path][route.method.lower()]
        if spec.request_schema is None:
            continue
        body = described["requestBody"]["content"]["application/json"]["schema"]
        assert body == {"$ref": f"#/components/schemas/{spec.request_schema}"}
        ok = described["responses"]["200"]["content"]["application/json"]["schema"]
        assert ok == {"$ref": f"#/components/schemas/{spec.response_schema}"}


async def _refusal(world: World, op: str, doc: dict[str, Any], role: Role) -> str:
    """``""`` when ``role`` may call ``op``, else the role refusal's message."""
    p = Principal(name=f"some-{role.value}", role=role)
    try:
        await world.dispatcher.dispatch(op, doc, p)
    except Forbidden as err:
        return err.message if "may not do this" in err.message else ""
    except MemorywireError:
        pass
    return ""


async def _staged(world: World) -> str:
    out = await world.dispatcher.dispatch(
        "remember", {**DOCS["remember"], "approval_required": True}, Principal.local_admin()
    )
    return str(out.body["id"])


async def test_each_operation_refuses_exactly_the_roles_the_table_leaves_out(
    world: World,
) -> None:
    for spec in OPERATION_TABLE:
        for role in Role:
            doc = dict(DOCS[spec.name])
            if spec.name in ("approvals.approve", "approvals.reject"):
                doc["id"] = await _staged(world)  # a role is checked on an item one can see
            refused = await _refusal(world, spec.name, doc, role)
            assert bool(refused) is (role.value not in spec.roles), (spec.name, role, refused)


@pytest.mark.parametrize("spec", OPERATION_TABLE, ids=lambda s: s.name)
async def test_each_operation_draws_on_the_rate_limit_the_table_names(
    spec: OperationSpec, world: World
) -> None:
    d = world.dispatcher
    d.rate_limiter = RateLimiter(1e-6, 1, kind="recall")
    d.write_limiter = RateLimiter(1e-6, 1, kind="write")
    outcomes: list[MemorywireError | None] = []
    for _ in range(2):
        try:
            await d.dispatch(spec.name, DOCS[spec.name], Principal.local_admin())
            outcomes.append(None)
        except MemorywireError as err:
            outcomes.append(err)
    first, second = outcomes
    assert not isinstance(first, RateLimited), first
    if spec.rate is None:
        assert not isinstance(second, RateLimited), second
    else:
        assert isinstance(second, RateLimited), (spec.name, second)
        assert second.details[0].message.startswith(f"{spec.rate}:")


class _AnyStore:
    """Answers every method, so the wrapper alone decides what gets a span."""

    def __getattr__(self, name: str) -> Callable[..., Awaitable[None]]:
        async def call(*args: Any, **kw: Any) -> None:
            return None

        return call


async def test_exactly_the_traced_operations_get_a_store_span() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    store = TracedStore(_AnyStore(), Tracing(provider), step="store", system="test")
    for spec in OPERATION_TABLE:
        await getattr(store, spec.name)(None)
    spanned = {s.name.removeprefix("store ") for s in exporter.get_finished_spans()}
    assert spanned == {s.name for s in OPERATION_TABLE if s.traced}
