"""Where each operation lives on the REST surface: one table for server, client and OpenAPI.

A route names the dispatcher operation it runs, its HTTP method and its path template. Path
parameters are taken from the request document; what remains of the document travels as the
JSON body (``POST``) or the query string (``GET``). The HTTP server mounts exactly these
routes, the OpenAPI document describes exactly these, and :class:`~memorywire.client.RemoteMemory`
finds its URLs here, so a path is spelled once.

Every operation of the operation table (:mod:`memorywire.wire.operations`) is
``POST /v0/<name>`` with its request document as the body, unless :data:`_SHAPED` gives it a
route of its own (path parameters, query strings, an ``/admin`` prefix); so an operation
added to the table is served, documented and found by the client without an edit here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from memorywire.wire.codec import OPERATIONS, RECORD_OPERATIONS
from memorywire.wire.operations import OPERATION_TABLE

__all__ = [
    "BODY_OPERATIONS",
    "OPERATIONS",
    "RECORD_OPERATIONS",
    "ROUTES",
    "TRANSPORT_ROUTES",
    "Route",
    "route_for",
    "route_named",
]

#: Routes that run no dispatcher operation: streamed dumps, JSON-RPC itself, this API's
#: description, the receipt-signing public key. Every other route runs an operation of the
#: table.
TRANSPORT_ROUTES = frozenset({"admin.export", "admin.import", "rpc", "openapi",
                              "receipts.key"})

_PARAM = re.compile(r"\{(\w+)(?::\w+)?\}")


@dataclass(frozen=True)
class Route:
    #: Unique name of the route (the dispatcher operation, unless two routes share one).
    name: str
    method: Literal["GET", "POST"]
    #: Starlette template: ``{id}``, or ``{name:path}`` for a value that may hold ``/``.
    path: str
    #: The dispatcher operation it runs; ``None``: the same as ``name``.
    operation: str | None = None

    @property
    def op(self) -> str:
        return self.operation or self.name

    @property
    def params(self) -> tuple[str, ...]:
        return tuple(_PARAM.findall(self.path))

    @property
    def openapi_path(self) -> str:
        """The template as OpenAPI writes it (no converters)."""
        return _PARAM.sub(r"{\1}", self.path)

    def fill(self, doc: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
        """(the concrete path, the rest of the document) for a request document."""
        rest = dict(doc)
        values = {name: str(rest.pop(name, "")) for name in self.params}
        return _PARAM.sub(lambda m: values[m.group(1)], self.path), rest


#: The routes shaped by hand, and the transport's own.
_SHAPED: tuple[Route, ...] = (
    Route("approvals.list", "GET", "/v0/approvals"),
    Route("approvals.get", "GET", "/v0/approvals/{id}"),
    Route("approvals.approve", "POST", "/v0/approvals/{id}/approve"),
    Route("approvals.reject", "POST", "/v0/approvals/{id}/reject"),
    Route("audit.list", "GET", "/v0/audit"),
    Route("audit.verify", "POST", "/v0/audit/verify"),
    Route("admin.export", "GET", "/v0/admin/export"),
    Route("recover", "POST", "/v0/admin/recover"),
    Route("admin.import", "POST", "/v0/admin/import"),
    Route("health", "GET", "/v0/health"),
    Route("receipts.key", "GET", "/v0/receipts/key"),
    Route("schemas", "GET", "/v0/schemas", operation="schema"),
    Route("schema", "GET", "/v0/schemas/{name:path}"),
    # Transport-level: every operation by JSON-RPC method name, and this API's description.
    Route("rpc", "POST", "/v0/rpc"),
    Route("openapi", "GET", "/openapi.json"),
)
#: Operations posted as their request document, ``POST /v0/<op>`` (a list request carries
#: arrays and a filter object, which a query string cannot), in the operation table's order.
BODY_OPERATIONS: tuple[str, ...] = tuple(
    s.name for s in OPERATION_TABLE if s.name not in {r.op for r in _SHAPED}
)
ROUTES: tuple[Route, ...] = (
    *(Route(op, "POST", f"/v0/{op}") for op in BODY_OPERATIONS),
    *_SHAPED,
)

_BY_NAME = {r.name: r for r in ROUTES}


def route_named(name: str) -> Route:
    return _BY_NAME[name]


def route_for(op: str, doc: Mapping[str, Any] | None = None) -> Route | None:
    """The route running ``op`` whose path parameters ``doc`` supplies (the most specific
    first), or ``None`` when the operation has no REST route of its own."""
    candidates = sorted((r for r in ROUTES if r.op == op), key=lambda r: -len(r.params))
    given = doc or {}
    for route in candidates:
        if all(given.get(p) not in (None, "") for p in route.params):
            return route
    return candidates[-1] if candidates else None
