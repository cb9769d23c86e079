"""Every operation the service offers, once: what each transport needs to expose it.

The dispatcher runs operations by name; REST, JSON-RPC, MCP, the CLI, OpenAPI, tracing and
the rate limits each used to keep their own list of them, and an operation added to one list
and not another was silently missing there. Now they all read :data:`OPERATION_TABLE`, so
adding an operation is an entry here plus its handler on the dispatcher
(``Dispatcher._<name>``, dots as underscores), and a test walks every transport for every
entry (``tests/interaction/test_operation_table.py``).

What each transport derives from an entry:

* **dispatch**: one handler per entry, found by name; nothing else is dispatchable.
* **REST**: an operation with a ``request`` model is ``POST /v0/<name>`` with the wire
  request as its body (:mod:`memorywire.wire.routes`); the others have hand-shaped routes
  there (path parameters, query strings), because their shape is the route's business.
* **JSON-RPC**: ``rpc`` is the method name.
* **MCP**: ``tool`` is the tool name and ``description`` what a model reads about it;
  ``effect`` gives the read-only / destructive hints, and a destructive tool is staged for
  a reviewer instead of run. The order of this table is the order tools are listed in.
* **CLI**: ``cli`` names the ``memorywire`` subcommand (words separated by a space).
* **OpenAPI**: the request and response components come from the models' wire schemas.
* **roles, rate limits, tracing**: ``roles`` may call it (scope is checked apart), ``rate``
  names the per-token bucket it draws from, ``traced`` gives its store call a child span.

The table lives in the wire layer because the client and the CLI read it too, and neither
may import the server's internals to learn what an operation is called.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Literal

from pydantic import BaseModel

from memorywire.wire.codec import MODELS
from memorywire.wire.memory_ops import (
    EraseRequest,
    EraseResponse,
    GetRequest,
    GetResponse,
    HistoryRequest,
    HistoryResponse,
    ListRequest,
    ListResponse,
    UpdateMemoryRequest,
    UpdateMemoryResponse,
)
from memorywire.wire.models import (
    ExpireRequest,
    ExpireResponse,
    ForgetRequest,
    ForgetResponse,
    MergeRequest,
    MergeResponse,
    RecallRequest,
    RecallResponse,
    RememberRequest,
    RememberResponse,
)

__all__ = [
    "ANYONE",
    "OPERATION_TABLE",
    "Effect",
    "OperationSpec",
    "RateClass",
    "RoleName",
    "by_cli",
    "by_rpc",
    "by_tool",
    "operation",
    "operation_names",
]

#: ``read`` changes nothing; ``write`` adds or edits; ``destructive`` loses data a caller
#: cannot get back by themselves (a model never runs one directly over MCP).
Effect = Literal["read", "write", "destructive"]
#: The values of :class:`memorywire.server.auth.Role`, spelled here so the wire layer need
#: not import the server.
RoleName = Literal["agent", "reviewer", "admin"]
#: The per-token bucket an operation draws from: ``recall`` (searches and pages) or ``write``.
RateClass = Literal["recall", "write"]

ANYONE: tuple[RoleName, ...] = ("agent", "reviewer", "admin")
_WRITERS: tuple[RoleName, ...] = ("agent", "admin")
_REVIEWERS: tuple[RoleName, ...] = ("reviewer", "admin")
_ADMIN: tuple[RoleName, ...] = ("admin",)


@dataclass(frozen=True)
class OperationSpec:
    """One operation as every transport sees it."""

    #: The dispatcher's name for it (``recall``, ``approvals.approve``).
    name: str
    #: One sentence on what it does: the MCP tool's description, read literally by a model.
    description: str
    effect: Effect
    #: Roles that may call it; the caller's agent/user scope is checked apart.
    roles: tuple[RoleName, ...]
    #: The wire request and response models; ``None`` for administrative operations whose
    #: documents are not wire documents (approvals, audit, recover, health, schema).
    request: type[BaseModel] | None = None
    response: type[BaseModel] | None = None
    #: JSON-RPC method name; ``None``: not offered over JSON-RPC.
    rpc: str | None = None
    #: MCP tool name; ``None``: not offered as a tool.
    tool: str | None = None
    #: ``memorywire`` subcommand (``"approvals approve"``); ``None``: none.
    cli: str | None = None
    #: The per-token rate limit it draws from; ``None``: not rate limited.
    rate: RateClass | None = None
    #: A write that, repeated with the same arguments, leaves the store as one call did
    #: (remember with a caller's id). Reads are idempotent whatever this says.
    idempotent: bool = False
    #: Callable without a token (health, schemas), paced server-wide instead.
    anonymous: bool = False
    #: Its store call gets a child span of its own when tracing is on.
    traced: bool = False

    @property
    def read_only(self) -> bool:
        return self.effect == "read"

    @property
    def destructive(self) -> bool:
        return self.effect == "destructive"

    @property
    def idempotent_hint(self) -> bool:
        return self.read_only or self.idempotent

    @property
    def request_schema(self) -> str | None:
        """The wire schema's short name of the request (``remember``), if it has one."""
        return None if self.request is None else _schema_of(self.request)

    @property
    def response_schema(self) -> str | None:
        return None if self.response is None else _schema_of(self.response)


@cache
def _schema_of(model: type[BaseModel]) -> str:
    names = [kind for kind, m in MODELS.items() if m is model]
    if len(names) != 1:
        raise LookupError(f"{model.__name__} is not the model of exactly one wire schema")
    return names[0]


_STAGED = " Staged for a human reviewer."

OPERATION_TABLE: tuple[OperationSpec, ...] = (
    OperationSpec(
        "remember",
        "Store one memory (semantic, episodic, procedural or emotional) for an agent.",
        "write", _WRITERS, RememberRequest, RememberResponse,
        rpc="memory.remember", tool="remember", cli="remember", rate="write",
        idempotent=True, traced=True,
    ),
    OperationSpec(
        "recall",
        "Search an agent's memories by meaning and words; results are ordered best first.",
        "read", ANYONE, RecallRequest, RecallResponse,
        rpc="memory.recall", tool="recall", cli="recall", rate="recall", traced=True,
    ),
    OperationSpec(
        "get", "Read one memory by its id.",
        "read", ANYONE, GetRequest, GetResponse,
        rpc="memory.get", tool="get", cli="get",
    ),
    OperationSpec(
        "list",
        "List an agent's memories oldest first, a page at a time (pass next_cursor on).",
        "read", ANYONE, ListRequest, ListResponse,
        rpc="memory.list", tool="list", cli="list", rate="recall",
    ),
    OperationSpec(
        "update",
        "Change a memory's content, metadata or confidence, or name the memories it "
        "supersedes; its history keeps the change.",
        "write", _WRITERS, UpdateMemoryRequest, UpdateMemoryResponse,
        rpc="memory.update", tool="update", cli="update",
    ),
    OperationSpec(
        "history", "Every recorded change of one memory: who, when, why and which operation.",
        "read", ANYONE, HistoryRequest, HistoryResponse,
        rpc="memory.history", tool="history", cli="history",
    ),
    OperationSpec(
        "forget", "Forget memories by ids or metadata filter." + _STAGED,
        "destructive", _WRITERS, ForgetRequest, ForgetResponse,
        rpc="memory.forget", tool="forget", cli="forget", rate="write", traced=True,
    ),
    OperationSpec(
        "erase", "Erase every memory of an agent or of one user." + _STAGED,
        "destructive", _WRITERS, EraseRequest, EraseResponse,
        rpc="memory.erase", tool="erase", cli="erase",
    ),
    OperationSpec(
        "merge", "Merge duplicate memories into a canonical one." + _STAGED,
        "destructive", _WRITERS, MergeRequest, MergeResponse,
        rpc="memory.merge", tool="merge", cli="merge", rate="write", traced=True,
    ),
    OperationSpec(
        "expire", "Forget, archive or demote memories matching a policy." + _STAGED,
        "destructive", _WRITERS, ExpireRequest, ExpireResponse,
        rpc="memory.expire", tool="expire", cli="expire", rate="write", traced=True,
    ),
    OperationSpec(
        "recover",
        "Find poisoned memories by source, agent, time or ids and what was derived from "
        "them; dry_run shows the plan, else it is staged as one item for a human reviewer.",
        "destructive", _ADMIN, rpc="admin.recover", tool="recover", cli="recover",
    ),
    OperationSpec(
        "approvals.list", "List staged operations awaiting (or past) a reviewer's decision.",
        "read", ANYONE, rpc="approvals.list", cli="approvals list",
    ),
    OperationSpec(
        "approvals.get", "One staged operation with the diff its reviewer decides on.",
        "read", ANYONE, rpc="approvals.get", cli="approvals show",
    ),
    OperationSpec(
        "approvals.approve", "Approve a staged operation, which then runs exactly as staged.",
        "write", _REVIEWERS, rpc="approvals.approve", cli="approvals approve",
    ),
    OperationSpec(
        "approvals.reject", "Reject a staged operation, which then never runs.",
        "write", _REVIEWERS, rpc="approvals.reject", cli="approvals reject",
    ),
    OperationSpec(
        "audit.list", "The most recent audit log entries in the caller's scope, oldest first.",
        "read", _REVIEWERS, rpc="audit.list", cli="audit list",
    ),
    OperationSpec(
        "audit.verify", "Recompute the audit log's hash chain and say whether it holds.",
        "read", _ADMIN, rpc="audit.verify", cli="audit verify",
    ),
    OperationSpec(
        "health", "Whether the store answers, and the wire versions this server speaks.",
        "read", ANYONE, rpc="server.health", anonymous=True,
    ),
    OperationSpec(
        "schema", "The names of the wire JSON Schemas, or one schema by name.",
        "read", ANYONE, rpc="server.schema", cli="schema", anonymous=True,
    ),
)

_BY_NAME: Mapping[str, OperationSpec] = {s.name: s for s in OPERATION_TABLE}


def operation(name: str) -> OperationSpec:
    """The entry for ``name``; a name outside the table is a programming error (KeyError)."""
    return _BY_NAME[name]


def operation_names() -> tuple[str, ...]:
    return tuple(_BY_NAME)


def by_rpc() -> dict[str, OperationSpec]:
    """JSON-RPC method name to its operation."""
    return {s.rpc: s for s in OPERATION_TABLE if s.rpc is not None}


def by_tool() -> dict[str, OperationSpec]:
    """MCP tool name to its operation, in listing order."""
    return {s.tool: s for s in OPERATION_TABLE if s.tool is not None}


def by_cli() -> dict[str, OperationSpec]:
    """``memorywire`` subcommand to its operation."""
    return {s.cli: s for s in OPERATION_TABLE if s.cli is not None}
