"""OpenAPI 3.1 for the REST surface, built from the shipped wire schemas (never hand-copied).

Each schema file becomes a component named after its short name with ``/`` turned into ``.``
(``remember.response``, ``types.semantic``); its ``$defs`` become sibling components
(``common.agent_id``) and every ``$ref`` is rewritten to point at them, because inside an
OpenAPI document ``#/$defs/...`` would resolve against the document root.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from memorywire.wire.operations import operation
from memorywire.wire.registry import BASE_URI, schema, schema_names
from memorywire.wire.routes import BODY_OPERATIONS, ROUTES
from memorywire.wire.versions import LATEST_MINOR, VERSION_HEADER, versions_doc

__all__ = ["bundled_schema", "component_name", "openapi_document"]

_COMPONENTS = "#/components/schemas/"


def component_name(short: str) -> str:
    return short.replace("/", ".")


def _file_of(short: str) -> str:
    """Short name to the path used in ``$id`` (operations live under ``operations/``)."""
    return short if "/" in short or short in ("common", "error") else f"operations/{short}"


def _rewrite(node: Any, owner: str, paths: dict[str, str], base: str = _COMPONENTS) -> Any:
    if isinstance(node, dict):
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key in ("$id", "$schema", "$defs"):
                continue
            if key == "$ref" and isinstance(value, str):
                out[key] = _ref(value, owner, paths, base)
            else:
                out[key] = _rewrite(value, owner, paths, base)
        return out
    if isinstance(node, list):
        return [_rewrite(v, owner, paths, base) for v in node]
    return node


def _ref(ref: str, owner: str, paths: dict[str, str], base: str) -> str:
    target, _, fragment = ref.partition("#")
    comp = owner if not target else paths[target.removeprefix(BASE_URI)]
    if fragment.startswith("/$defs/"):
        comp = f"{comp}.{fragment.removeprefix('/$defs/')}"
    elif fragment:
        raise ValueError(f"unsupported $ref fragment {ref!r}")
    return base + comp


def _components(base: str = _COMPONENTS) -> dict[str, Any]:
    names = schema_names(include_definitions=True)
    paths = {_file_of(n): component_name(n) for n in names}
    comps: dict[str, Any] = {}
    for short in names:
        doc = schema(short)
        owner = component_name(short)
        for def_name, sub in doc.get("$defs", {}).items():
            comps[f"{owner}.{def_name}"] = _rewrite(sub, owner, paths, base)
        if short != "common":
            comps[owner] = _rewrite(doc, owner, paths, base)
    return comps


def _refs(node: Any) -> set[str]:
    if isinstance(node, dict):
        found = {node["$ref"]} if isinstance(node.get("$ref"), str) else set()
        for v in node.values():
            found |= _refs(v)
        return found
    if isinstance(node, list):
        return set().union(*(_refs(v) for v in node)) if node else set()
    return set()


def bundled_schema(name: str) -> dict[str, Any]:
    """One self-contained schema (every ``$ref`` local, under ``$defs``), for tools such as
    MCP clients that must not fetch ``https://memorywire.dev/...`` to read an input schema."""
    comps = _components("#/$defs/")
    root = comps[component_name(name)]
    needed: dict[str, Any] = {}
    todo = [r.removeprefix("#/$defs/") for r in _refs(root)]
    while todo:
        comp = todo.pop()
        if comp in needed:
            continue
        needed[comp] = comps[comp]
        todo.extend(r.removeprefix("#/$defs/") for r in _refs(comps[comp]))
    out = dict(root)
    if needed:
        out["$defs"] = needed
    return out


def _ref_to(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _json(name: str, description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": _ref_to(name)}}}


_ERRORS = {
    "400": _json("error", "Invalid request (code invalid_request)"),
    "401": _json("error", "Missing or invalid bearer token"),
    "403": _json("error", "Outside the token's role or scope"),
    "404": _json("error", "No such memory, approval or schema (or not in the token's scope)"),
    "409": _json("error", "Conflicts with stored state, or awaiting approval"),
    "413": _json("error", "Body too large"),
    "422": _json("error", "The store lacks a needed capability (e.g. governance)"),
    "429": _json("error", "Rate limited; see Retry-After"),
    "503": _json("error", "Backend unavailable"),
}

_OPEN_OBJECT = {"type": "object", "additionalProperties": True}


def _generic(description: str) -> dict[str, Any]:
    return {
        "description": description,
        "content": {"application/json": {"schema": _OPEN_OBJECT}},
    }


def _operations() -> dict[str, dict[str, Any]]:
    """The OpenAPI operation object for each route, by route name."""
    ops: dict[str, dict[str, Any]] = {}
    for op in BODY_OPERATIONS:  # posted as their request: components of the models, if wire
        spec = operation(op)
        request, response = spec.request_schema, spec.response_schema
        ops[op] = {
            "operationId": op,
            "summary": f"{op} (wire v0)" if request else spec.description,
            "requestBody": {
                "required": True,
                "content": {"application/json": {
                    "schema": _ref_to(component_name(request)) if request else _OPEN_OBJECT}},
            },
            "responses": {
                "200": _json(component_name(response), f"{op} response") if response
                else _generic(f"{op} response"),
                **_ERRORS,
            },
        }
    id_param = {"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}
    query = [
        {"name": "agent_id", "in": "query", "schema": {"type": "string"}},
        {"name": "limit", "in": "query", "schema": {"type": "integer", "minimum": 1}},
    ]
    reason_body = {
        "content": {
            "application/json": {
                "schema": {
                    "type": "object",
                    "properties": {"reason": {"type": "string"}},
                    "additionalProperties": False,
                }
            }
        }
    }
    ops["approvals.list"] = {
        "operationId": "approvals_list",
        "parameters": [
            *query,
            {"name": "status", "in": "query", "schema": {"type": "string"}},
        ],
        "responses": {"200": _generic("pending approvals"), **_ERRORS},
    }
    ops["approvals.get"] = {
        "operationId": "approvals_get",
        "parameters": [id_param],
        "responses": {"200": _json("governance.review", "one approval"), **_ERRORS},
    }
    for verb in ("approve", "reject"):
        ops[f"approvals.{verb}"] = {
            "operationId": f"approvals_{verb}",
            "parameters": [id_param],
            "requestBody": reason_body,
            "responses": {"200": _generic(f"{verb}d"), **_ERRORS},
        }
    ops["audit.list"] = {
        "operationId": "audit_list",
        "parameters": query,
        "responses": {"200": _generic("audit entries"), **_ERRORS},
    }
    ops["audit.verify"] = {
        "operationId": "audit_verify",
        "responses": {"200": _generic("audit chain check"), **_ERRORS},
    }
    ops["admin.export"] = {
        "operationId": "admin_export",
        "summary": "the store as a memorywire/export dump (admin, within its scope)",
        "parameters": [
            {"name": "agent_id", "in": "query", "schema": {"type": "string"}},
            {"name": "user_id", "in": "query", "schema": {"type": "string"}},
            {"name": "since", "in": "query", "schema": {"type": "integer", "minimum": 0}},
            {"name": "include_forgotten", "in": "query", "schema": {"type": "boolean"}},
            {"name": "include_vectors", "in": "query", "schema": {"type": "boolean"}},
        ],
        "responses": {
            "200": {"description": "NDJSON lines, each an export/line document",
                    "content": {"application/x-ndjson": {"schema": _ref_to("export.line")}}},
            **_ERRORS,
        },
    }
    from memorywire.server.recovery import RECOVER_SCHEMA

    ops["recover"] = {
        "operationId": "recover",
        "summary": "remove poisoned memory by provenance: plan, stage or act (admin only)",
        "requestBody": {"required": True,
                        "content": {"application/json": {"schema": RECOVER_SCHEMA}}},
        "responses": {"200": _generic("the plan, the staged approval, or the receipt"),
                      **_ERRORS},
    }
    ops["admin.import"] = {
        "operationId": "admin_import",
        "summary": "import a memorywire/export dump (admin, within its scope); answers the "
                   "fidelity report",
        "parameters": [
            {"name": "on_conflict", "in": "query",
             "schema": {"enum": ["skip", "replace", "fail"], "default": "skip"}},
            {"name": "reembed", "in": "query", "schema": {"type": "boolean"}},
            {"name": "allow_loss", "in": "query", "schema": {"type": "string"},
             "description": "comma-separated fields the plan may lose"},
            {"name": "skip_invalid", "in": "query", "schema": {"type": "boolean"},
             "description": "leave out records that break remember's rules and report them "
                            "(default: the first one refuses the whole dump)"},
        ],
        "requestBody": {
            "required": True,
            "description": "the dump, NDJSON (Content-Encoding: gzip optional); at most "
                           "max_import_bytes",
            "content": {"application/x-ndjson": {"schema": _ref_to("export.line")}},
        },
        "responses": {"200": _generic("the fidelity plan and import counts"), **_ERRORS},
    }
    ops["health"] = {"operationId": "health", "responses": {"200": _generic("store health")}}
    ops["receipts.key"] = {
        "operationId": "receipts_key",
        "summary": "the public key this deployment signs deletion receipts with (to pin; "
                   "no token needed)",
        "responses": {"200": _generic("kind, algorithm and the base64 Ed25519 public key"),
                      **_ERRORS},
    }
    ops["schemas"] = {
        "operationId": "schemas",
        "responses": {"200": _generic("the names of the wire JSON Schemas")},
    }
    ops["schema"] = {
        "operationId": "schema",
        "parameters": [{**id_param, "name": "name"}],
        "responses": {"200": _generic("a wire JSON Schema"), **_ERRORS},
    }
    ops["rpc"] = {
        "operationId": "jsonrpc",
        "summary": "JSON-RPC 2.0 (memory.remember, memory.recall, ..., approvals.*)",
        "requestBody": {"content": {"application/json": {"schema": {}}}},
        "responses": {
            "200": {
                "description": "JSON-RPC response, or an array of them for a batch",
                "content": {"application/json": {"schema": {"anyOf": [
                    _OPEN_OBJECT, {"type": "array", "items": _OPEN_OBJECT},
                ]}}},
            },
            "204": {"description": "all notifications"},
        },
    }
    ops["openapi"] = {
        "operationId": "openapi",
        "responses": {"200": _generic("this OpenAPI document")},
    }
    return ops


def _paths() -> dict[str, Any]:
    """Every route of the table, described; a route without a description fails here."""
    described = _operations()
    paths: dict[str, Any] = {}
    for route in ROUTES:
        paths.setdefault(route.openapi_path, {})[route.method.lower()] = described[route.name]
    return paths


@cache
def _document() -> dict[str, Any]:
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "memorywire", "version": "0",
            "description": (f"Wire format v{LATEST_MINOR}; requests of any v0 minor are served. "
                            f"A request may announce its version in the {VERSION_HEADER} header "
                            "(or `wire_version` in JSON-RPC/MCP params); another major is "
                            "refused with `unsupported_version`. Every response carries the "
                            f"{VERSION_HEADER} header."),
            "x-wire-versions": versions_doc(),
        },
        "jsonSchemaDialect": "https://json-schema.org/draft/2020-12/schema",
        "paths": _paths(),
        "components": {
            "schemas": _components(),
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
        "security": [{"bearer": []}],
    }


def openapi_document() -> dict[str, Any]:
    import copy

    return copy.deepcopy(_document())
