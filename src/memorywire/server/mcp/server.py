"""MCP over the dispatcher: the operations as tools, the wire schemas as resources.

Tools take the wire request as their arguments (input schemas are the shipped JSON Schemas,
bundled so no client has to fetch a URL) and return the wire response as structured content
plus its JSON text. Errors come back as tool errors carrying our envelope, so an MCP client
reads the same ``code`` as a REST one; store diagnostics ride in ``_meta``.

A model calling tools is not a human at a keyboard: destructive tools (forget, erase, merge,
expire) are never executed directly. When the dispatcher's store is a ``GovernedStore`` they
are staged for a reviewer (the tool answers ``pending_approval``); without governance they
are refused. Descriptions, defaults for ``agent_id``/``user_id`` and input schemas are in
:mod:`memorywire.server.mcp.tools`.

Over stdio (:mod:`memorywire.server.mcp.stdio`) the caller is the process owner. Over HTTP
(:mod:`memorywire.server.mcp.http`) every request carries its own authenticated principal in
the ASGI scope, and each tool call runs as that principal, with the same role and tenancy
checks as REST.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import mcp_types as types
from mcp.server import Server, ServerRequestContext

from memorywire.errors import Forbidden, InvalidRequest, MemorywireError, NotFound, Unauthorized
from memorywire.governance import GovernedStore
from memorywire.server.auth import Principal
from memorywire.server.dispatch import Dispatcher
from memorywire.server.mcp.tools import (
    DESTRUCTIVE,
    TOOLS,
    ToolDefaults,
    complete_args,
    input_schema,
)
from memorywire.wire.operations import by_tool
from memorywire.wire.registry import schema, schema_names

__all__ = [
    "INSTRUCTIONS", "PRINCIPAL_SCOPE_KEY", "TOOLS", "ToolDefaults", "build_mcp_server",
    "is_destructive",
]

_SCHEMA_URI = "memorywire://schemas/"
log = logging.getLogger(__name__)
#: What a client passes to its model about this server (the initialize result): when to use
#: which tool, read literally by a model, so plain and short.
INSTRUCTIONS = (
    "Long-term memory for this agent, kept across sessions.\n"
    "- recall: at the start of a task, and before answering anything about the user's "
    "preferences, earlier decisions, people, or this project's conventions. Ask in words "
    "(k limits the results); an empty answer means nothing relevant is stored.\n"
    "- remember: when you learn something durable: a preference, a decision and its reason, "
    "a convention, a fact about a person or project (type semantic); an event worth "
    "recalling later (episodic); a how-to that worked (procedural). One fact per call, in "
    "a full sentence. Do not store secrets or transient task details.\n"
    "- update: when a stored memory is now wrong or incomplete (get or recall it first for "
    "its id); history shows how it changed.\n"
    "- get / list: read one memory by id, or page through all of them.\n"
    "- forget, erase, merge, expire: only when the user asks. They are staged for a human "
    "reviewer, so say that the change awaits approval instead of claiming it is done."
)
#: ASGI scope key where the HTTP transport leaves the request's authenticated principal.
PRINCIPAL_SCOPE_KEY = "memorywire.principal"


def is_destructive(op: str, args: dict[str, Any]) -> bool:
    """Whether a tool call is staged (or refused) instead of run; ``args`` do not matter
    (a model cannot make a forget safe by choosing its arguments), except a ``recover`` dry
    run, which only reads."""
    if op == "recover" and args.get("dry_run") is True:
        return False
    return op in DESTRUCTIVE


def _result(body: Any, meta: dict[str, Any] | None = None) -> types.CallToolResult:
    out = types.CallToolResult(
        content=[types.TextContent(text=json.dumps(body, ensure_ascii=False))],
        structured_content=body,
    )
    if meta:
        out.meta = meta
    return out


def _error(err: MemorywireError) -> types.CallToolResult:
    env = err.to_envelope()
    return types.CallToolResult(
        content=[types.TextContent(text=json.dumps(env, ensure_ascii=False))],
        structured_content=env,
        is_error=True,
    )


def _principal_of(ctx: ServerRequestContext[Any], local: Principal) -> Principal:
    """The HTTP request's principal; with no HTTP request (stdio, in-process), ``local``."""
    request = ctx.request
    if request is None:
        return local
    p = request.scope.get(PRINCIPAL_SCOPE_KEY)
    if not isinstance(p, Principal):  # fail closed if the transport did not authenticate
        raise Unauthorized("a valid bearer token is required")
    return p


def build_mcp_server(
    dispatcher: Dispatcher,
    *,
    principal: Principal | None = None,
    defaults: ToolDefaults | None = None,
) -> Server[Any]:
    """``principal``: who calls when there is no HTTP request (default: the process owner);
    ``defaults``: the configured ``agent_id``/``user_id`` for calls that leave them out."""
    local = principal or Principal.local_admin()
    fill = defaults or ToolDefaults()
    governed = dispatcher.store if isinstance(dispatcher.store, GovernedStore) else None
    specs = by_tool()

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        caller = _principal_of(ctx, local)
        tools = [
            types.Tool(
                name=name,
                description=spec.description,
                input_schema=input_schema(name, caller, fill),
                annotations=types.ToolAnnotations(
                    read_only_hint=spec.read_only,
                    destructive_hint=spec.destructive,
                    idempotent_hint=spec.idempotent_hint,
                ),
            )
            for name, spec in specs.items()
        ]
        return types.ListToolsResult(tools=tools)

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        args = dict(params.arguments or {})
        try:
            spec = specs.get(params.name)
            if spec is None:
                raise NotFound(f"unknown tool {params.name!r}; known: {', '.join(specs)}")
            caller = _principal_of(ctx, local)
            complete_args(params.name, args, caller, fill)
            if not is_destructive(params.name, args):
                result = await dispatcher.dispatch(spec.name, args, caller)
            elif governed is None:
                raise Forbidden(
                    f"{params.name} with these arguments is destructive and needs human "
                    "review; over MCP it is refused because this server has no governance "
                    "to stage it for a reviewer (governance is on for the default store; "
                    "drop --no-governance, or give --governance-db beside --store)"
                )
            else:
                if spec.name == "recover":  # the whole plan becomes one approval item
                    args["approval"] = True
                with governed.staging():
                    result = await dispatcher.dispatch(spec.name, args, caller)
        except MemorywireError as err:
            return _error(err)
        except Exception:  # outermost handler of a tool call: an envelope, never the text
            log.exception("MCP tool %s failed", params.name)
            return _error(MemorywireError("internal error"))
        meta = {"memorywire/store_failures": result.failures_json()} if result.failures else None
        return _result(result.body, meta)

    async def list_resources(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        return types.ListResourcesResult(
            resources=[
                types.Resource(
                    name=n, uri=_SCHEMA_URI + n, mime_type="application/schema+json",
                    description=f"wire v0 JSON Schema: {n}",
                )
                for n in schema_names()
            ]
        )

    async def read_resource(
        ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        uri = str(params.uri)
        if not uri.startswith(_SCHEMA_URI):
            raise InvalidRequest(f"unknown resource {uri}")
        doc = schema(uri.removeprefix(_SCHEMA_URI))
        return types.ReadResourceResult(
            contents=[
                types.TextResourceContents(
                    uri=uri, mime_type="application/schema+json", text=json.dumps(doc)
                )
            ]
        )

    return Server(
        "memorywire",
        version="0",
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_read_resource=read_resource,
    )
