"""``recover``: remove poisoned memory by provenance, and what was derived from it.

A plan is computed first and is pure data (:func:`plan_recovery`), so a dry run shows exactly
what acting would do:

* **goes** (hard forget, with a receipt): every *seed* — a memory matching the selector
  (``source``, which is also where a token's server-stamped provenance lands, ``agent_id``, a
  ``created_at`` window, or explicit ids) — and every memory derived *only* from memories that
  go;
* **quarantined** (soft forget: hidden from every read, kept for a reviewer): a memory derived
  from a memory that goes *and* from one that stays, whose text may carry the poison but
  whose benign part a person may want to re-derive;
* **stays**, with the reason: a memory that only *links* to a seed (``related`` is not
  derivation), so an attacker cannot make a benign memory collateral by linking to it.

Derivation is read from :mod:`memorywire.core.provenance` (``metadata.derived_from`` and
``derived_sources``); the closure is followed to a fixed point, so derivations of derivations
are caught. A memory whose ``derived_sources`` name the selected source is tainted even when
the parent is gone (a merge deletes the rows it absorbs): it is quarantined.
"""

from __future__ import annotations

import builtins
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from memorywire.core.content import links_of
from memorywire.core.provenance import derived_from, derived_sources
from memorywire.core.records import ListQuery
from memorywire.errors import InvalidRequest
from memorywire.governance.erasure import AuditSink, erase_with_receipt
from memorywire.governance.receipts import sign_receipt, unsigned_receipt
from memorywire.store.base import MemoryStore, list_all
from memorywire.wire.models import ForgetRequest, MemoryRecord

__all__ = [
    "RecoveryPlan",
    "RecoverySelector",
    "apply_recovery",
    "plan_recovery",
    "scan_all",
]

_PAGE = 1000


@dataclass(frozen=True)
class RecoverySelector:
    """Which memories are poisoned; fields are ANDed, and at least one must be given."""

    source: str | None = None
    agent_id: str | None = None
    since_ms: int | None = None
    until_ms: int | None = None
    ids: Sequence[str] | None = None

    def __post_init__(self) -> None:
        if self.source is None and self.agent_id is None and not self.ids \
                and self.since_ms is None and self.until_ms is None:
            raise InvalidRequest("recover needs a source, agent_id, time window or ids")

    def matches(self, rec: MemoryRecord) -> bool:
        return ((self.source is None or rec.source == self.source)
                and (self.agent_id is None or rec.agent_id == self.agent_id)
                and (self.since_ms is None or rec.created_at >= self.since_ms)
                and (self.until_ms is None or rec.created_at < self.until_ms)
                and (not self.ids or rec.id in self.ids))


@dataclass(frozen=True)
class PlanItem:
    id: str
    agent_id: str
    user_id: str | None
    why: str


@dataclass(frozen=True)
class RecoveryPlan:
    selector: dict[str, Any]
    goes: tuple[PlanItem, ...] = ()
    quarantined: tuple[PlanItem, ...] = ()
    stays: tuple[PlanItem, ...] = ()
    scanned: int = 0

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> RecoveryPlan:
        """The plan :meth:`to_dict` wrote (an approval stores it; approving acts on exactly it)."""
        def items(key: str) -> tuple[PlanItem, ...]:
            return tuple(PlanItem(str(i["id"]), str(i["agent_id"]), i.get("user_id"),
                                  str(i.get("why", ""))) for i in doc.get(key, []))

        return cls(dict(doc.get("selector", {})), items("goes"), items("quarantined"),
                   items("stays"), int(doc.get("scanned", 0)))

    def to_dict(self) -> dict[str, Any]:
        return {
            "selector": self.selector,
            "scanned": self.scanned,
            "goes": [asdict(i) for i in self.goes],
            "quarantined": [asdict(i) for i in self.quarantined],
            "stays": [asdict(i) for i in self.stays],
            "counts": {"goes": len(self.goes), "quarantined": len(self.quarantined),
                       "stays": len(self.stays)},
        }


async def scan_all(store: MemoryStore) -> builtins.list[MemoryRecord]:
    """Every live and archived memory of every agent, page by page."""
    return await list_all(store, ListQuery(agent_id=None, include_archived=True, limit=_PAGE))


def plan_recovery(records: Sequence[MemoryRecord], selector: RecoverySelector) -> RecoveryPlan:
    """Seeds, then derivations to a fixed point; pure, so a dry run is the plan itself."""
    by_id = {r.id: r for r in records}
    goes: dict[str, str] = {r.id: "matches the selector" for r in records if selector.matches(r)}
    quarantined: dict[str, str] = {}
    changed = True
    while changed:
        changed = False
        for r in records:
            if r.id in goes:
                continue
            parents = derived_from(r.metadata)
            # A merge repoints edges to the row it absorbs at the survivor, so taint flows
            # through quarantined memories too.
            tainted = [p for p in parents if p in goes or p in quarantined]
            by_source = selector.source is not None \
                and selector.source in derived_sources(r.metadata)
            if not tainted and not by_source:
                continue
            if parents and all(p in goes for p in parents):
                goes[r.id] = f"derived only from removed memories {sorted(tainted)}"
                quarantined.pop(r.id, None)
                changed = True
            elif r.id not in quarantined:
                quarantined[r.id] = (
                    f"derived from removed {sorted(tainted)} and from others" if tainted
                    else f"absorbed content from source {selector.source!r} in a merge")
                changed = True
    stays: dict[str, str] = {}
    for r in records:
        if r.id in goes or r.id in quarantined:
            continue
        hit = [x for x in links_of(r.metadata) if x in goes or x in quarantined]
        if hit:
            stays[r.id] = f"only links to {sorted(hit)}; a link is not a derivation"

    def items(d: dict[str, str]) -> tuple[PlanItem, ...]:
        return tuple(PlanItem(i, by_id[i].agent_id, by_id[i].user_id, why)
                     for i, why in sorted(d.items()))

    sel = {k: v for k, v in asdict(selector).items() if v not in (None, ())}
    if "ids" in sel:
        sel["ids"] = list(sel["ids"])
    return RecoveryPlan(sel, items(goes), items(quarantined), items(stays), len(records))


@dataclass
class RecoveryResult:
    plan: RecoveryPlan
    receipts: list[dict[str, Any]] = field(default_factory=list)
    quarantined_ids: list[str] = field(default_factory=list)
    pending_approval: bool = False
    receipt: dict[str, Any] | None = None


async def apply_recovery(
    store: MemoryStore,
    plan: RecoveryPlan,
    key: Ed25519PrivateKey,
    *,
    audit: AuditSink | None = None,
    reason: str = "recover",
    now_ms: int,
) -> RecoveryResult:
    """Act on ``plan`` through the store's own forget, so governance policies apply to it.

    One hard forget (with its receipt) and one soft forget per agent/user scope; then one
    summary receipt over the per-scope ones.
    """
    out = RecoveryResult(plan)
    scopes: dict[tuple[str, str | None], tuple[list[str], list[str]]] = {}
    for item in plan.goes:
        scopes.setdefault((item.agent_id, item.user_id), ([], []))[0].append(item.id)
    for item in plan.quarantined:
        scopes.setdefault((item.agent_id, item.user_id), ([], []))[1].append(item.id)
    for (agent, user), (gone, held) in sorted(scopes.items(), key=lambda kv: str(kv[0])):
        if gone:
            er = await erase_with_receipt(
                store, ForgetRequest(agent_id=agent, user_id=user, ids=gone, hard_delete=True,
                                     reason=reason),
                key, audit=audit, policy="recover", details={"selector": plan.selector})
            out.pending_approval |= bool(er.response.pending_approval)
            if er.receipt is not None:
                out.receipts.append(er.receipt)
        if held:
            resp = await store.forget(ForgetRequest(agent_id=agent, user_id=user, ids=held,
                                                    reason=f"{reason}: quarantined"))
            out.pending_approval |= bool(resp.pending_approval)
            out.quarantined_ids.extend(resp.forgotten_ids)
    erased: dict[str, list[str]] = {}
    for rc in out.receipts:
        for st, ids in rc["erased"].items():
            erased.setdefault(st, []).extend(ids)
    out.receipt = sign_receipt(key, unsigned_receipt(
        erased=erased, actor=str(out.receipts[0]["actor"]) if out.receipts else "system",
        policy="recover", digest="", ts=now_ms, reason_redacted=False,
        details={"selector": plan.selector, "quarantined": sorted(out.quarantined_ids),
                 "part_receipts": [rc["receipt_id"] for rc in out.receipts],
                 "part_content_sha256": [rc["content_sha256"] for rc in out.receipts]}))
    return out
