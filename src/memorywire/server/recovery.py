"""``recover`` as a server operation: REST ``POST /v0/admin/recover``, JSON-RPC ``recover``, the
MCP tool ``recover``, ``RemoteMemory.recover`` and, in process, ``Memory.recover``.

Recovery reads every agent's memories and removes some of them, so only an unscoped admin
may call it. One call does one of three things:

* ``dry_run: true`` returns the plan (what goes, what is quarantined, what stays and why),
  changing nothing;
* ``approval: true`` stages the whole plan as **one** approval item (operation ``recover``;
  a reviewer sees every memory it removes as the diff); approving it carries out exactly that
  plan and stores the signed receipt in the item's ``result``. The MCP tool always takes this
  path (a model never removes memory directly);
* otherwise the plan is carried out at once, with a signed receipt.

The approved plan is the one the reviewer saw, not a fresh one: memories written after the
plan are not touched, and the hash a reviewer approves covers every id.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from memorywire.core.clock import SystemClock
from memorywire.errors import CapabilityMissing, ErrorDetail, Forbidden, InvalidRequest
from memorywire.governance.actor import acting_as
from memorywire.governance.erasure import AuditSink
from memorywire.governance.recover import (
    RecoveryPlan,
    RecoveryResult,
    RecoverySelector,
    apply_recovery,
    plan_recovery,
    scan_all,
)
from memorywire.governance.signing import SigningKey, SigningKeySource
from memorywire.server.auth import Principal
from memorywire.store.base import MemoryStore

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from memorywire.governance import GovernedStore

__all__ = ["RECOVER_SCHEMA", "RecoverOperation", "RecoveryResult", "recover", "selector_of"]

#: The ``recover`` request (not a wire document: an administrative operation of this server).
RECOVER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "Select poisoned memories by provenance; fields are ANDed, one is needed.",
    "properties": {
        "source": {"type": "string", "description": "The compromised source (a token's "
                   "provenance lands here); also taints memories whose content a merge took "
                   "from it."},
        "agent_id": {"type": "string", "description": "Only memories of this agent."},
        "since_ms": {"type": "integer", "description": "Created at or after (epoch ms)."},
        "until_ms": {"type": "integer", "description": "Created before (epoch ms)."},
        "ids": {"type": "array", "items": {"type": "string"},
                "description": "Seed memory ids."},
        "dry_run": {"type": "boolean", "description": "Return the plan (what goes, what is "
                    "quarantined, what stays and why); change nothing."},
        "approval": {"type": "boolean", "description": "Stage the plan as one approval item; "
                     "approving it carries out the whole plan."},
        "reason": {"type": "string", "description": "Why; kept in the audit log."},
    },
    "additionalProperties": False,
}

_KEYS = {"source": str, "agent_id": str, "since_ms": int, "until_ms": int, "ids": list,
         "dry_run": bool, "approval": bool, "reason": str}


def selector_of(doc: Any) -> tuple[RecoverySelector, dict[str, Any]]:
    """The selector and the remaining flags of a ``recover`` document; unknown keys refused."""
    if not isinstance(doc, Mapping):
        raise InvalidRequest("recover parameters must be a JSON object")
    for key, value in doc.items():
        want = _KEYS.get(key)
        if want is None:
            raise InvalidRequest(f"recover: unknown field {key!r}",
                                 [ErrorDetail(f"/{key}", "additionalProperties", "unknown")])
        if value is not None and (not isinstance(value, want)
                                  or (want is int and isinstance(value, bool))):
            raise InvalidRequest(f"recover: {key!r} must be {want.__name__}",
                                 [ErrorDetail(f"/{key}", "type", want.__name__)])
    ids = doc.get("ids")
    if ids is not None and not all(isinstance(i, str) and i for i in ids):
        raise InvalidRequest("recover: 'ids' must be non-empty strings")
    sel = RecoverySelector(source=doc.get("source"), agent_id=doc.get("agent_id"),
                           since_ms=doc.get("since_ms"), until_ms=doc.get("until_ms"),
                           ids=ids or None)
    return sel, {k: doc.get(k) for k in ("dry_run", "approval", "reason")}


class RecoverOperation:
    """The ``recover`` handler the dispatcher delegates to, and the committer of its approvals."""

    def __init__(
        self,
        store: MemoryStore,
        governed: GovernedStore | None,
        signing_key: SigningKeySource | None,
        audit: AuditSink | None,
    ) -> None:
        self.store = store
        self.governed = governed
        self.signing_key = signing_key
        self.audit = audit
        if governed is not None:
            governed.commit_appliers["recover"] = self._commit

    def _key(self) -> SigningKey:
        key = self.signing_key.get() if self.signing_key is not None else None
        if key is None:
            raise CapabilityMissing("recover needs a signing key for its receipts: set "
                                    "signing_key (MEMORYWIRE_SIGNING_KEY) or turn governance on")
        return key

    async def run(self, doc: Any, p: Principal) -> dict[str, Any]:
        p.require_for("recover")
        if p.agent_ids is not None:
            raise Forbidden("recover reads every agent's memories: it needs an admin token "
                            "that is not scoped to agents")
        selector, flags = selector_of(doc)
        with acting_as(p.name, p.token_id):
            plan = plan_recovery(await scan_all(self.store), selector)
            if flags["dry_run"]:
                return {"dry_run": True, "plan": plan.to_dict()}
            if flags["approval"]:
                return await self._stage(plan, flags["reason"])
            res = await apply_recovery(self.store, plan, self._key(), audit=self.audit,
                                       reason=flags["reason"] or "recover",
                                       now_ms=SystemClock().now_ms())
        return {"dry_run": False, "plan": plan.to_dict(),
                "pending_approval": res.pending_approval, "receipt": res.receipt,
                "part_receipts": res.receipts}

    async def _stage(self, plan: RecoveryPlan, reason: str | None) -> dict[str, Any]:
        if self.governed is None:
            raise CapabilityMissing("recover with approval needs governance (a governance "
                                    "database) to hold the plan for a reviewer")
        self._key()  # refuse now, not after a reviewer approved something we cannot sign
        doc = plan.to_dict()
        request = {"plan": doc, "reason": reason or "recover"}
        agent = str(plan.selector.get("agent_id") or "*")
        item = await self.governed.stage_operation(
            "recover", agent, request, f"recover {plan.selector}",
            {"selector": plan.selector, "counts": doc["counts"]})
        return {"dry_run": False, "pending_approval": True, "approval_id": item.id,
                "approval_url": self.governed.approval_url(item.id), "plan": doc}

    async def _commit(self, request: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
        """Carry out an approved plan on the store under governance (it is approved now)."""
        assert self.governed is not None
        plan = RecoveryPlan.from_dict(request["plan"])
        res = await apply_recovery(self.governed.inner, plan, self._key(), audit=self.audit,
                                   reason=str(request.get("reason") or "recover"),
                                   now_ms=SystemClock().now_ms())
        ids = [i.id for i in (*plan.goes, *plan.quarantined)]
        return {"receipt": res.receipt, "quarantined": res.quarantined_ids}, ids


async def recover(
    store: MemoryStore,
    principal: Principal,
    *,
    source: str | None = None,
    agent_id: str | None = None,
    since_ms: int | None = None,
    until_ms: int | None = None,
    ids: Sequence[str] | None = None,
    key: Ed25519PrivateKey | None = None,
    dry_run: bool = False,
    reason: str = "recover",
    audit: AuditSink | None = None,
) -> RecoveryResult:
    """Plan over every memory of ``store``, then (unless ``dry_run``) act through its own
    forget, so a governance policy can stage it; ``dry_run`` returns the plan with no
    receipt."""
    principal.require_for("recover")
    selector = RecoverySelector(source=source, agent_id=agent_id, since_ms=since_ms,
                                until_ms=until_ms, ids=ids)
    plan = plan_recovery(await scan_all(store), selector)
    if dry_run:
        return RecoveryResult(plan)
    if key is None:
        raise InvalidRequest("recover: key: the Ed25519 signing key is needed to sign the "
                             "receipt (or pass dry_run=True)")
    with acting_as(principal.name, principal.token_id):
        return await apply_recovery(store, plan, key, audit=audit, reason=reason,
                                    now_ms=SystemClock().now_ms())
