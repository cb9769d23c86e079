"""``recover`` as a server operation: REST ``POST /v0/admin/recover``, JSON-RPC ``recover``, the
MCP tool ``recover``, ``RemoteMemory.recover``, ``memorywire recover`` and, in process,
``Memory.recover``.

Recovery reads every agent's memories and removes some of them, so only an unscoped admin
may call it. What it plans is :mod:`memorywire.governance.recover`'s: seeds (``source`` /
``sources``, ``ids``, a time window) or, for one ``agent_id`` alone, a verdict per memory
(purge, quarantine, expire, keep). One call does one of three things:

* ``dry_run: true`` returns the plan and the report, changing nothing;
* ``approval: true`` stages the whole plan as **one** approval item (operation ``recover``;
  a reviewer sees every memory it removes as the diff); approving it carries out exactly that
  plan and stores the signed receipt in the item's ``result``. The MCP tool always takes this
  path (a model never removes memory directly);
* otherwise the plan is carried out at once, with a signed receipt.

Each quarantined memory becomes a ``quarantine`` item for a reviewer
(:mod:`memorywire.governance.quarantine`) when the store is governed.

The first implementation's MCP tool took ``trusted_sources``, ``use_detectors``,
``hard_delete`` and ``mode``; they are accepted here as those spellings of ``trusted``,
``detectors``, ``hard`` and ``expire_low_conf`` (:data:`MW05_ARGUMENTS`, listed once).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from memorywire.core.clock import SystemClock
from memorywire.errors import CapabilityMissing, ErrorDetail, Forbidden, InvalidRequest
from memorywire.governance.actor import acting_as
from memorywire.governance.directives import DetectorSet
from memorywire.governance.erasure import AuditSink
from memorywire.governance.quarantine import QuarantineDesk
from memorywire.governance.recover import (
    RecoveryPlan,
    RecoveryResult,
    RecoverySelector,
    apply_recovery,
    plan_recovery,
    scan_all,
)
from memorywire.governance.signing import SigningKey, SigningKeySource
from memorywire.governance.verdicts import VerdictRules, parse_trusted
from memorywire.server.auth import Principal
from memorywire.store.base import MemoryStore

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from memorywire.governance import GovernedStore

__all__ = ["MW05_ARGUMENTS", "RECOVER_SCHEMA", "RecoverOperation", "RecoveryResult",
           "recover", "rules_of", "selector_of"]

#: 0.5's argument names of the ``recover`` tool -> today's.
MW05_ARGUMENTS = {"trusted_sources": "trusted", "use_detectors": "detectors",
                  "hard_delete": "hard", "mode": "expire_low_conf"}
#: 0.5's ``mode`` values -> ``expire_low_conf``.
_MW05_MODES = {"provenance": False, "provenance+expire": True}
_STRINGS = {"type": "array", "items": {"type": "string"}}

#: The ``recover`` request (not a wire document: an administrative operation of this server).
RECOVER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "Seeds (source, sources, ids, time window; ANDed, agent_id narrows them) "
                   "select poisoned memories; agent_id alone gives every memory of that "
                   "agent a verdict: purge (untrusted source), quarantine (trusted, but "
                   "reads like a directive), expire (low confidence, opt-in) or keep.",
    "properties": {
        "source": {"type": "string", "description": "A compromised source (a token's "
                   "provenance lands here); also taints memories whose content a merge took "
                   "from it."},
        "sources": {**_STRINGS, "description": "Several compromised sources (any matches)."},
        "agent_id": {"type": "string", "description": "Only memories of this agent; alone, "
                     "the verdict for each of them."},
        "since_ms": {"type": "integer", "description": "Created at or after (epoch ms)."},
        "until_ms": {"type": "integer", "description": "Created before (epoch ms)."},
        "ids": {**_STRINGS, "description": "Seed memory ids."},
        "trusted": {**_STRINGS, "description": "Trusted sources (default user, system); "
                    "any other source is purged by verdict."},
        "detectors": {"type": "boolean", "description": "Also run the policy's detector "
                      "hooks; with seeds, check the content of trusted memories too."},
        "quarantine": {"type": "boolean", "description": "Quarantine trusted memories that "
                       "read like directives (default true; false reports them only)."},
        "hard": {"type": "boolean", "description": "Erase what is purged (default: with "
                 "seeds yes, by verdict a soft forget)."},
        "expire_low_conf": {"type": "boolean", "description": "Also expire memories whose "
                            "confidence is below confidence_below."},
        "confidence_below": {"type": "number", "description": "Default 0.75."},
        "purge_unknown": {"type": "boolean", "description": "Purge memories that record no "
                          "source (0.5's reading; default: kept)."},
        "dry_run": {"type": "boolean", "description": "Return the plan (what goes, what is "
                    "quarantined, what stays and why); change nothing."},
        "approval": {"type": "boolean", "description": "Stage the plan as one approval item; "
                     "approving it carries out the whole plan."},
        "reason": {"type": "string", "description": "Why; kept in the audit log."},
        "trusted_sources": {**_STRINGS, "description": "0.5's name for trusted."},
        "use_detectors": {"type": "boolean", "description": "0.5's name for detectors."},
        "hard_delete": {"type": "boolean", "description": "0.5's name for hard."},
        "mode": {"enum": list(_MW05_MODES), "description": "0.5's: provenance+expire is "
                 "expire_low_conf."},
    },
    "additionalProperties": False,
}

_KEYS: dict[str, type | tuple[type, ...]] = {
    "source": str, "sources": list, "agent_id": str, "since_ms": int, "until_ms": int,
    "ids": list, "trusted": (list, str), "detectors": bool, "quarantine": bool, "hard": bool,
    "expire_low_conf": bool, "confidence_below": (int, float), "purge_unknown": bool,
    "dry_run": bool, "approval": bool, "reason": str, "trusted_sources": list,
    "use_detectors": bool, "hard_delete": bool, "mode": str}


def _typed(doc: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in doc.items():
        want = _KEYS.get(key)
        if want is None:
            raise InvalidRequest(f"recover: unknown field {key!r}",
                                 [ErrorDetail(f"/{key}", "additionalProperties", "unknown")])
        if value is None:
            continue
        kinds = want if isinstance(want, tuple) else (want,)
        if not isinstance(value, kinds) or (bool not in kinds and isinstance(value, bool)):
            names = " or ".join(k.__name__ for k in kinds)
            raise InvalidRequest(f"recover: {key!r} must be {names}",
                                 [ErrorDetail(f"/{key}", "type", names)])
        if isinstance(value, list) and not all(isinstance(i, str) and i for i in value):
            raise InvalidRequest(f"recover: {key!r} must be non-empty strings",
                                 [ErrorDetail(f"/{key}", "type", "string")])
        target = MW05_ARGUMENTS.get(key, key)
        if key == "mode":
            if value not in _MW05_MODES:
                raise InvalidRequest(f"recover: 'mode' must be one of {list(_MW05_MODES)}",
                                     [ErrorDetail("/mode", "enum", "mode")])
            value = _MW05_MODES[value]
        if target in out and out[target] != value:
            raise InvalidRequest(f"recover: {key!r} and {target!r} say different things")
        out[target] = value
    return out


def selector_of(doc: Any) -> tuple[RecoverySelector, dict[str, Any]]:
    """The selector and the remaining fields of a ``recover`` document; unknown keys and
    ill-typed values refused, naming the field."""
    if not isinstance(doc, Mapping):
        raise InvalidRequest("recover parameters must be a JSON object")
    d = _typed(doc)
    if "confidence_below" in d and not 0.0 <= float(d["confidence_below"]) <= 1.0:
        raise InvalidRequest("recover: 'confidence_below' must be between 0 and 1",
                             [ErrorDetail("/confidence_below", "range", "0..1")])
    sel = RecoverySelector(source=d.get("source"), agent_id=d.get("agent_id"),
                           since_ms=d.get("since_ms"), until_ms=d.get("until_ms"),
                           ids=d.get("ids") or None, sources=tuple(d.get("sources") or ()))
    return sel, d


def rules_of(flags: Mapping[str, Any], seeded: bool,
             hooks: Sequence[Any] = ()) -> VerdictRules | None:
    """The verdict rules a ``recover`` call asks for (``None``: a seeded call that checks no
    content). ``hooks`` are the detector hooks ``detectors=true`` adds (the policy's)."""
    detect = flags.get("detectors", False)
    if seeded and not detect:
        return None
    below = float(flags.get("confidence_below", 0.75)) if flags.get("expire_low_conf") \
        else None
    return VerdictRules(
        trusted=parse_trusted(flags.get("trusted")),
        detectors=DetectorSet.of(list(hooks) if detect else []),
        quarantine=flags.get("quarantine", True), expire_below=below,
        purge_unknown=flags.get("purge_unknown", False))


async def scan_for(store: MemoryStore, selector: RecoverySelector) -> list[Any]:
    """What a plan needs: with seeds every agent (derivations may cross), else the agent's."""
    return await scan_all(store, None if selector.seeded else selector.agent_id)


class RecoverOperation:
    """The ``recover`` handler the dispatcher delegates to, and the committer of its approvals
    (and of the quarantine items it leaves for reviewers)."""

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
        self.quarantine: QuarantineDesk | None = None
        # Several dispatchers may share one governed store (a runtime's, an in-process
        # client's); the one that can sign commits, and one without a key never replaces it.
        keyed = signing_key is not None and signing_key.path is not None
        if governed is not None:
            if keyed or "recover" not in governed.commit_appliers:
                governed.commit_appliers["recover"] = self._commit
            self.quarantine = QuarantineDesk.install(
                governed, (lambda: signing_key.get()) if keyed and signing_key else None)

    def _key(self) -> SigningKey:
        key = self.signing_key.get() if self.signing_key is not None else None
        if key is None:
            raise CapabilityMissing("recover needs a signing key for its receipts: set "
                                    "signing_key (MEMORYWIRE_SIGNING_KEY) or turn governance on")
        return key

    def _hooks(self) -> list[str]:
        return list(self.governed.policies.directives.detectors) if self.governed else []

    async def plan(self, doc: Any) -> tuple[RecoveryPlan, dict[str, Any]]:
        selector, flags = selector_of(doc)
        rules = rules_of(flags, selector.seeded, self._hooks())
        plan = plan_recovery(await scan_for(self.store, selector), selector, rules,
                             hard=flags.get("hard"))
        return plan, flags

    async def run(self, doc: Any, p: Principal) -> dict[str, Any]:
        p.require_for("recover")
        if p.agent_ids is not None:
            raise Forbidden("recover reads every agent's memories: it needs an admin token "
                            "that is not scoped to agents")
        with acting_as(p.name, p.token_id):
            plan, flags = await self.plan(doc)
            if flags.get("dry_run"):
                return {"dry_run": True, **plan.report(), "plan": plan.to_dict()}
            if flags.get("approval"):
                return await self._stage(plan, flags.get("reason"))
            res = await apply_recovery(self.store, plan, self._key(), audit=self.audit,
                                       reason=flags.get("reason") or "recover",
                                       now_ms=SystemClock().now_ms(), hold=self.quarantine)
        return result_doc(res)

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
                "approval_url": self.governed.approval_url(item.id), **plan.report(),
                "plan": doc}

    async def _commit(self, request: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
        """Carry out an approved plan on the store under governance (it is approved now)."""
        assert self.governed is not None
        plan = RecoveryPlan.from_dict(request["plan"])
        res = await apply_recovery(self.governed.inner, plan, self._key(), audit=self.audit,
                                   reason=str(request.get("reason") or "recover"),
                                   now_ms=SystemClock().now_ms(), hold=self.quarantine)
        ids = [i.id for i in (*plan.goes, *plan.quarantined, *plan.expired)]
        return {"receipt": res.receipt, "quarantined": res.quarantined_ids,
                "review": res.review}, ids


def result_doc(res: RecoveryResult) -> dict[str, Any]:
    """What acting answers: 0.5's report keys, the plan, the receipts, the review items."""
    return {"dry_run": False, **res.plan.report(), "plan": res.plan.to_dict(),
            "pending_approval": res.pending_approval, "receipt": res.receipt,
            "part_receipts": res.receipts, "review": res.review}


async def recover(
    store: MemoryStore,
    principal: Principal,
    *,
    source: str | None = None,
    agent_id: str | None = None,
    since_ms: int | None = None,
    until_ms: int | None = None,
    ids: Sequence[str] | None = None,
    sources: Sequence[str] = (),
    key: Ed25519PrivateKey | None = None,
    dry_run: bool = False,
    reason: str = "recover",
    audit: AuditSink | None = None,
    trusted: Sequence[str] | str | None = None,
    detectors: Sequence[Any] | bool = False,
    quarantine: bool = True,
    hard: bool | None = None,
    expire_low_conf: bool = False,
    confidence_below: float = 0.75,
    purge_unknown: bool = False,
    hold: QuarantineDesk | None = None,
) -> RecoveryResult:
    """Plan over ``store``, then (unless ``dry_run``) act through its own forget, so a
    governance policy can stage it; ``dry_run`` returns the plan with no receipt.
    ``detectors``: ``True``, or detector hooks to run beside the built-in rules (callables
    ``content -> bool``, objects with ``inspect``; see ``governance.directives``).
    ``hold``: the desk that puts each quarantined memory before a reviewer."""
    principal.require_for("recover")
    selector = RecoverySelector(source=source, agent_id=agent_id, since_ms=since_ms,
                                until_ms=until_ms, ids=ids, sources=tuple(sources))
    hooks = list(detectors) if not isinstance(detectors, bool) else []
    rules = rules_of({"trusted": trusted, "detectors": bool(detectors),
                      "quarantine": quarantine, "expire_low_conf": expire_low_conf,
                      "confidence_below": confidence_below, "purge_unknown": purge_unknown},
                     selector.seeded, hooks)
    plan = plan_recovery(await scan_for(store, selector), selector, rules, hard=hard)
    if dry_run:
        return RecoveryResult(plan)
    if key is None:
        raise InvalidRequest("recover: key: the Ed25519 signing key is needed to sign the "
                             "receipt (or pass dry_run=True)")
    with acting_as(principal.name, principal.token_id):
        return await apply_recovery(store, plan, key, audit=audit, reason=reason,
                                    now_ms=SystemClock().now_ms(), hold=hold)
