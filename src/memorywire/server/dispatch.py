"""Operation name + JSON document + principal -> JSON document. Knows nothing of transports.

Every transport (REST, JSON-RPC, MCP, the in-process client) goes through :class:`Dispatcher`,
so validation, authorisation, tenancy and limits are enforced once. Errors are always
:class:`~memorywire.errors.MemorywireError`; transports render ``err.to_envelope()``.

What can be dispatched is the operation table (:mod:`memorywire.wire.operations`): each entry
runs the method ``_<name>`` (dots as underscores), and the roles and rate limit each handler
checks are the entry's. A handler checks them where it always has (after the request is
parsed, before the store is touched), so the order of refusals is the handler's to state.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import BaseModel

from memorywire.errors import (
    CapabilityMissing,
    ErrorDetail,
    InvalidRequest,
    NotFound,
)
from memorywire.governance.actor import acting_as
from memorywire.governance.erasure import AuditSink, erase_with_receipt
from memorywire.governance.signing import SigningKeySource
from memorywire.server.approvals import Approvals
from memorywire.server.auth import Principal, Role
from memorywire.server.limits import Limits, RateLimiter, check_content_size
from memorywire.server.precheck import (
    GOVERNANCE_OFF,
    check_approval_capability,
    check_id_owner,
    check_merge_size,
)
from memorywire.server.records import RecordOperations
from memorywire.server.recovery import RecoverOperation
from memorywire.store.base import MemoryStore
from memorywire.wire.codec import parse, to_wire
from memorywire.wire.door import check_document
from memorywire.wire.memory_ops import (
    EraseRequest,
    GetRequest,
    HistoryRequest,
    ListRequest,
    UpdateMemoryRequest,
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
    StoreFailure,
)
from memorywire.wire.operations import OPERATION_TABLE, operation
from memorywire.wire.registry import schema as schema_document
from memorywire.wire.registry import schema_names
from memorywire.wire.versions import check_requested, versions_doc

__all__ = [
    "FAILURES_HEADER",
    "DispatchResult",
    "Dispatcher",
    "dump_response",
    "validate_request",
]

M = TypeVar("M", bound=BaseModel)

#: HTTP header carrying router diagnostics (JSON list of StoreFailure) beside a v0 body.
FAILURES_HEADER = "Memorywire-Store-Failures"

def validate_request(model: type[M], doc: Any, op: str) -> M:
    """Parse a request document (schema first, then model) or raise ``InvalidRequest``."""
    if not isinstance(doc, Mapping):
        raise InvalidRequest(
            f"{op} request must be a JSON object",
            [ErrorDetail("", "type", "expected an object")],
        )
    kind = operation(op).request_schema
    assert kind is not None, f"{op} has no wire request"
    parsed = parse(kind, dict(doc))
    assert isinstance(parsed, model)
    return parsed


def dump_response(resp: BaseModel) -> dict[str, Any]:
    """The v0 body: every v0-required key is never None, so dropping Nones is shape-safe.

    ``exclude_none`` only touches model fields; ``None`` inside metadata survives.
    """
    return to_wire(resp)


@dataclass
class DispatchResult:
    """A JSON body plus diagnostics that travel beside it, never inside v0 shapes."""

    body: Any
    failures: list[StoreFailure] = field(default_factory=list)

    def failures_json(self) -> list[dict[str, Any]]:
        return [f.model_dump(mode="json") for f in self.failures]


Handler = Callable[[Any, Principal], Awaitable[DispatchResult]]
Observer = Callable[
    [str, Principal, Callable[[], Awaitable[DispatchResult]]], Awaitable[DispatchResult]
]


class Dispatcher:
    """Runs operations against one store (a backend, a router or a ``GovernedStore``)."""

    def __init__(
        self,
        store: MemoryStore,
        *,
        approvals: Approvals | None = None,
        limits: Limits | None = None,
        rate_limiter: RateLimiter | None = None,
        write_limiter: RateLimiter | None = None,
        observer: Observer | None = None,
        signing_key: SigningKeySource | None = None,
        receipts_audit: AuditSink | None = None,
        min_relevance: float | None = None,
    ) -> None:
        self.store = store
        #: Signs the receipt a hard forget returns; ``None`` (or a source without a key): none.
        self.signing_key = signing_key
        #: Where each receipt's hash is chained (the governed store's audit log).
        self.receipts_audit = receipts_audit
        #: The configured relevance floor: a recall that names no ``min_relevance`` gets this
        #: one (``None``: the store's own calibrated floors, which equal 0.5).
        self.min_relevance = min_relevance
        #: Metrics/tracing around each dispatched operation (server/observability.py).
        self.observer = observer
        self.approvals = approvals
        self.limits = limits or Limits()
        #: ``None`` means unlimited (in-process use); servers pass ones built from ``limits``.
        self.rate_limiter = rate_limiter
        self.write_limiter = write_limiter
        #: get, list, update, history, erase (typed entry points for the in-process client)
        self.records = RecordOperations(store, signing_key, receipts_audit)
        self.recovery = RecoverOperation(store, getattr(approvals, "governed", None),
                                         signing_key, receipts_audit)
        governed = getattr(approvals, "governed", None)
        if governed is not None and signing_key is not None:
            governed.sign_hard_forgets(self._signed_hard_forget)
        # A table entry without its handler fails here, at construction, not on first call.
        self._ops: dict[str, Handler] = {
            spec.name: getattr(self, "_" + spec.name.replace(".", "_"))
            for spec in OPERATION_TABLE
        }

    @property
    def operations(self) -> tuple[str, ...]:
        return tuple(self._ops)

    async def dispatch(self, op: str, doc: Any, principal: Principal) -> DispatchResult:
        handler = self._ops.get(op)
        if handler is None:
            raise NotFound(f"unknown operation {op!r}")
        body = {} if doc is None else doc
        if isinstance(body, Mapping) and "wire_version" in body:
            # Transports without headers (JSON-RPC, MCP) announce the version in the params.
            body = dict(body)
            check_requested(body.pop("wire_version"), "/wire_version")
        check_document(op, body)  # before the schema: its messages may quote the value
        with acting_as(principal.name, principal.token_id):
            if self.observer is None:
                return await handler(body, principal)
            return await self.observer(op, principal, lambda: handler(body, principal))

    # --- typed entry points (the in-process client uses these) --------------------------------

    async def remember(self, req: RememberRequest, p: Principal) -> RememberResponse:
        p.require_for("remember")
        p.check_scope(req.agent_id, req.user_id)
        check_document("remember", to_wire(req))
        check_content_size(req.content, self.limits)
        check_approval_capability(self.store, req)
        self._throttle("remember", p)
        if p.provenance is not None:
            req = req.model_copy(update={"source": p.provenance})
        with acting_as(p.name, p.token_id):
            await check_id_owner(self.store, req)
            return await self.store.remember(req)

    async def recall(self, req: RecallRequest, p: Principal) -> RecallResponse:
        p.check_scope(req.agent_id, req.user_id)
        check_document("recall", to_wire(req))
        self._throttle("recall", p)
        if req.min_relevance is None and self.min_relevance is not None:
            req = req.model_copy(update={"min_relevance": self.min_relevance})
        with acting_as(p.name, p.token_id):
            return await self.store.recall(req)

    async def forget(self, req: ForgetRequest, p: Principal) -> ForgetResponse:
        p.require_for("forget")
        p.check_scope(req.agent_id, req.user_id)
        check_document("forget", to_wire(req))
        self._throttle("forget", p)
        with acting_as(p.name, p.token_id):
            key = None if self.signing_key is None or not req.hard_delete \
                else self.signing_key.get()
            if key is None:
                return await self.store.forget(req)
            er = await erase_with_receipt(self.store, req, key, audit=self.receipts_audit)
            if er.receipt is None:
                return er.response
            return er.response.model_copy(update={"receipt": er.receipt})

    async def _signed_hard_forget(
        self, inner: MemoryStore, req: ForgetRequest
    ) -> tuple[ForgetResponse, dict[str, Any] | None]:
        """An approved hard forget (or erase), committed on ``inner`` with its receipt."""
        key = None if self.signing_key is None else self.signing_key.get()
        if key is None:
            return await inner.forget(req), None
        er = await erase_with_receipt(inner, req, key, audit=self.receipts_audit,
                                      policy="approval")
        return er.response, er.receipt

    async def merge(self, req: MergeRequest, p: Principal) -> MergeResponse:
        p.require_for("merge")
        p.check_scope(req.agent_id, req.user_id)
        check_document("merge", to_wire(req))
        self._throttle("merge", p)
        with acting_as(p.name, p.token_id):
            await check_merge_size(self.store, req, self.limits)
            return await self.store.merge(req)

    async def expire(self, req: ExpireRequest, p: Principal) -> ExpireResponse:
        p.require_for("expire")
        p.check_scope(req.agent_id, req.user_id)
        check_document("expire", to_wire(req))
        self._throttle("expire", p)
        with acting_as(p.name, p.token_id):
            return await self.store.expire(req)

    def _throttle(self, op: str, p: Principal) -> None:
        """Take a token from the bucket the operation table names for ``op``, if any."""
        rate = operation(op).rate
        limiter = self.write_limiter if rate == "write" else (
            self.rate_limiter if rate == "recall" else None)
        if limiter is not None:
            limiter.acquire(p.name)

    # --- JSON handlers -------------------------------------------------------------------------

    async def _remember(self, doc: Any, p: Principal) -> DispatchResult:
        resp = await self.remember(validate_request(RememberRequest, doc, "remember"), p)
        return DispatchResult(dump_response(resp), list(resp.failures))

    async def _recall(self, doc: Any, p: Principal) -> DispatchResult:
        resp = await self.recall(validate_request(RecallRequest, doc, "recall"), p)
        return DispatchResult(dump_response(resp), list(resp.failures))

    async def _forget(self, doc: Any, p: Principal) -> DispatchResult:
        resp = await self.forget(validate_request(ForgetRequest, doc, "forget"), p)
        return DispatchResult(dump_response(resp))

    async def _merge(self, doc: Any, p: Principal) -> DispatchResult:
        resp = await self.merge(validate_request(MergeRequest, doc, "merge"), p)
        return DispatchResult(dump_response(resp), list(resp.errors or []))

    async def _expire(self, doc: Any, p: Principal) -> DispatchResult:
        resp = await self.expire(validate_request(ExpireRequest, doc, "expire"), p)
        return DispatchResult(dump_response(resp), list(resp.errors or []))

    async def _get(self, doc: Any, p: Principal) -> DispatchResult:
        req = validate_request(GetRequest, doc, "get")
        return DispatchResult(dump_response(await self.records.get(req, p)))

    async def _list(self, doc: Any, p: Principal) -> DispatchResult:
        req = validate_request(ListRequest, doc, "list")
        self._throttle("list", p)
        return DispatchResult(dump_response(await self.records.list(req, p)))

    async def _update(self, doc: Any, p: Principal) -> DispatchResult:
        req = validate_request(UpdateMemoryRequest, doc, "update")
        if req.content is not None:
            check_content_size(req.content, self.limits)
        return DispatchResult(dump_response(await self.records.update(req, p)))

    async def _history(self, doc: Any, p: Principal) -> DispatchResult:
        req = validate_request(HistoryRequest, doc, "history")
        return DispatchResult(dump_response(await self.records.history(req, p)))

    async def _erase(self, doc: Any, p: Principal) -> DispatchResult:
        req = validate_request(EraseRequest, doc, "erase")
        return DispatchResult(dump_response(await self.records.erase(req, p)))

    def _need_approvals(self) -> Approvals:
        if self.approvals is None:
            raise CapabilityMissing(
                f"approvals need governance, and {GOVERNANCE_OFF}"
            )
        return self.approvals

    async def _approvals_list(self, doc: Any, p: Principal) -> DispatchResult:
        q = _object(doc, "approvals.list")
        agent_id = _opt_str(q, "agent_id")
        if agent_id is not None:
            p.check_scope(agent_id, None)
        status = _opt_str(q, "status") or "pending"
        limit = _opt_int(q, "limit", 100, 1, 1000)
        items = await self._need_approvals().list_approvals(
            p, agent_id=agent_id, status=status, limit=limit
        )
        return DispatchResult({"approvals": items})

    async def _approvals_get(self, doc: Any, p: Principal) -> DispatchResult:
        approval_id = _req_str(_object(doc, "approvals.get"), "id")
        return DispatchResult(await self._need_approvals().get(p, approval_id))

    async def _approvals_approve(self, doc: Any, p: Principal) -> DispatchResult:
        return await self._decide(doc, p, approve=True)

    async def _approvals_reject(self, doc: Any, p: Principal) -> DispatchResult:
        return await self._decide(doc, p, approve=False)

    async def _decide(self, doc: Any, p: Principal, *, approve: bool) -> DispatchResult:
        op = "approvals.approve" if approve else "approvals.reject"
        q = _object(doc, op)
        approval_id = _req_str(q, "id")
        reason = _opt_str(q, "reason")
        approvals = self._need_approvals()
        # Scope first, role second: an out-of-scope id is "not found" for everyone. The item
        # is enough for that; its review (whose diff is a recall of the inner store: a model
        # call and a search) is built once, after the decision.
        await approvals.check_visible(p, approval_id)
        p.require_for(op)
        return DispatchResult(await approvals.decide(p, approval_id, approve, reason))

    async def _audit_list(self, doc: Any, p: Principal) -> DispatchResult:
        p.require_for("audit.list")
        q = _object(doc, "audit.list")
        agent_id = _opt_str(q, "agent_id")
        if agent_id is not None:
            p.check_scope(agent_id, None)
        limit = _opt_int(q, "limit", 100, 1, 1000)
        entries = await self._need_approvals().audit(p, agent_id=agent_id, limit=limit)
        return DispatchResult({"entries": entries})

    async def _audit_verify(self, doc: Any, p: Principal) -> DispatchResult:
        # The chain spans every tenant, so only an unscoped admin may see its summary.
        p.require_for("audit.verify")
        if p.agent_ids is not None:
            raise NotFound("no audit chain in this scope")
        return DispatchResult(await self._need_approvals().verify())

    async def _recover(self, doc: Any, p: Principal) -> DispatchResult:
        return DispatchResult(await self.recovery.run(doc, p))

    async def _health(self, doc: Any, p: Principal) -> DispatchResult:
        h = await self.store.health()
        body: dict[str, Any] = {"status": h.status, "store": self.store.name,
                                "wire_version": versions_doc()}
        if p.role is Role.ADMIN:
            body["details"] = h.details
            body["capabilities"] = sorted(c.value for c in self.store.capabilities)
        return DispatchResult(body)

    async def _schema(self, doc: Any, p: Principal) -> DispatchResult:
        q = _object(doc, "schema")
        name = _opt_str(q, "name")
        if name is None:
            return DispatchResult({"schemas": schema_names()})
        return DispatchResult(schema_document(name))


def _object(doc: Any, op: str) -> Mapping[str, Any]:
    if not isinstance(doc, Mapping):
        raise InvalidRequest(f"{op} parameters must be a JSON object")
    return doc


def _req_str(q: Mapping[str, Any], key: str) -> str:
    v = q.get(key)
    if not isinstance(v, str) or not v:
        raise InvalidRequest(
            f"{key!r} is required and must be a non-empty string",
            [ErrorDetail(f"/{key}", "required", "non-empty string")],
        )
    return v


def _opt_str(q: Mapping[str, Any], key: str) -> str | None:
    v = q.get(key)
    if v is None:
        return None
    if not isinstance(v, str) or not v:
        raise InvalidRequest(
            f"{key!r} must be a non-empty string", [ErrorDetail(f"/{key}", "type", "string")]
        )
    return v


def _opt_int(q: Mapping[str, Any], key: str, default: int, lo: int, hi: int) -> int:
    v = q.get(key, default)
    if isinstance(v, str) and v.isdigit():
        v = int(v)
    if not isinstance(v, int) or isinstance(v, bool) or not lo <= v <= hi:
        raise InvalidRequest(
            f"{key!r} must be an integer in {lo}..{hi}",
            [ErrorDetail(f"/{key}", "maximum", f"{lo}..{hi}")],
        )
    return v
