"""``recover``: remove poisoned memory, by provenance and by what it says, with a plan first.

A plan is computed first and is pure data (:func:`plan_recovery`), so a dry run shows exactly
what acting would do. It works in one of two ways:

* **with seeds** (one or more ``sources``, which is also where a token's server-stamped
  provenance lands; explicit ``ids``; a ``created_at`` window; ANDed with ``agent_id``): every
  memory the seeds select **goes** (a hard forget with a receipt, unless ``hard=False``);
* **without seeds**, for one agent: each of its memories gets the first implementation's
  verdict (:mod:`memorywire.governance.verdicts`): **goes** (purge: untrusted source),
  **quarantined** (a trusted memory that reads like a directive), **expired** (low
  confidence, opt-in) or kept. A purge here is a guess from provenance, so it is a soft
  forget unless ``hard=True`` (0.5's ``--hard``). Seeded plans check content too when given
  detectors (``--detectors``).

Either way derivation is then followed to a fixed point (``metadata.derived_from`` and
``derived_sources``, :mod:`memorywire.core.provenance`): a memory derived *only* from
memories that go goes too; one derived from a memory that goes *and* from one that stays is
quarantined (its text may carry the poison, its benign part a person may want back); a
memory whose ``derived_sources`` name a selected (or untrusted) source is quarantined even
when the parent is gone (a merge deletes the rows it absorbs). A memory that only *links* to
one (``related``) **stays**, with the reason: a link is not a derivation, so an attacker
cannot make a benign memory collateral by linking to it.

Quarantine is a state a reviewer resolves (:mod:`memorywire.governance.quarantine`). Acting
goes through the store's own forget, so governance policies and its audit log apply; every
change is covered by one signed summary receipt.
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
from memorywire.governance.verdicts import VerdictRules
from memorywire.store.base import MemoryStore, list_all
from memorywire.wire.models import ForgetRequest, MemoryRecord

__all__ = [
    "PlanItem",
    "RecoveryPlan",
    "RecoveryResult",
    "RecoverySelector",
    "apply_recovery",
    "plan_recovery",
    "scan_all",
]

_PAGE = 1000


@dataclass(frozen=True)
class RecoverySelector:
    """Which memories to look at. Seeds (``source``/``sources``, ``ids``, the time window)
    are ANDed with each other and with ``agent_id``; without a seed ``agent_id`` is needed
    and every memory of that agent gets a verdict."""

    source: str | None = None
    agent_id: str | None = None
    since_ms: int | None = None
    until_ms: int | None = None
    ids: Sequence[str] | None = None
    #: More compromised sources (``--source`` repeated): a memory from any of them matches.
    sources: Sequence[str] = ()

    def __post_init__(self) -> None:
        if self.agent_id is None and not self.seeded:
            raise InvalidRequest("recover needs an agent_id, or a source, time window or ids")

    @property
    def all_sources(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys([*self.sources, *([self.source] if self.source else [])]))

    @property
    def seeded(self) -> bool:
        return bool(self.all_sources or self.ids or self.since_ms is not None
                    or self.until_ms is not None)

    def in_scope(self, rec: MemoryRecord) -> bool:
        return self.agent_id is None or rec.agent_id == self.agent_id

    def matches(self, rec: MemoryRecord) -> bool:
        sources = self.all_sources
        return (self.seeded and self.in_scope(rec)
                and (not sources or rec.source in sources)
                and (self.since_ms is None or rec.created_at >= self.since_ms)
                and (self.until_ms is None or rec.created_at < self.until_ms)
                and (not self.ids or rec.id in self.ids))

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        sources = self.all_sources
        if len(sources) == 1:
            out["source"] = sources[0]
        elif sources:
            out["sources"] = list(sources)
        for key in ("agent_id", "since_ms", "until_ms"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        if self.ids:
            out["ids"] = list(self.ids)
        return out


@dataclass(frozen=True)
class PlanItem:
    id: str
    agent_id: str
    user_id: str | None
    why: str
    source: str | None = None


_PARTS = ("goes", "quarantined", "expired", "stays")


@dataclass(frozen=True)
class RecoveryPlan:
    selector: dict[str, Any]
    goes: tuple[PlanItem, ...] = ()
    quarantined: tuple[PlanItem, ...] = ()
    stays: tuple[PlanItem, ...] = ()
    scanned: int = 0
    expired: tuple[PlanItem, ...] = ()
    #: Memories in scope the plan leaves alone (``stays`` lists only those with a reason).
    kept: int = 0
    #: ``True``: what goes is erased (hard forget, receipts); ``False``: soft forget.
    hard: bool = True
    #: How the verdicts were reached (trusted sources, detectors, thresholds).
    rules: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> RecoveryPlan:
        """The plan :meth:`to_dict` wrote (an approval stores it; approving acts on exactly it)."""
        def items(key: str) -> tuple[PlanItem, ...]:
            return tuple(PlanItem(str(i["id"]), str(i["agent_id"]), i.get("user_id"),
                                  str(i.get("why", "")), i.get("source"))
                         for i in doc.get(key, []))

        return cls(dict(doc.get("selector", {})), items("goes"), items("quarantined"),
                   items("stays"), int(doc.get("scanned", 0)), items("expired"),
                   int(doc.get("kept", 0)), bool(doc.get("hard", True)),
                   dict(doc.get("rules", {})))

    def to_dict(self) -> dict[str, Any]:
        return {
            "selector": self.selector,
            "rules": self.rules,
            "hard": self.hard,
            "scanned": self.scanned,
            "kept": self.kept,
            **{part: [asdict(i) for i in getattr(self, part)] for part in _PARTS},
            "counts": {"goes": len(self.goes), "quarantined": len(self.quarantined),
                       "stays": len(self.stays), "expired": len(self.expired),
                       "kept": self.kept},
        }

    def report(self) -> dict[str, Any]:
        """0.5's report keys: counts per verdict and one action per memory that changes."""
        actions = [{"id": i.id, "agent_id": i.agent_id, "verdict": verdict,
                    "source": i.source, "reason": i.why}
                   for verdict, part in (("purge", self.goes), ("quarantine", self.quarantined),
                                         ("expire", self.expired)) for i in part]
        return {"scanned": self.scanned, "purged": len(self.goes),
                "quarantined": len(self.quarantined), "expired": len(self.expired),
                "kept": self.kept, "actions": actions}


async def scan_all(store: MemoryStore, agent_id: str | None = None) -> builtins.list[MemoryRecord]:
    """Every live and archived memory (of ``agent_id``, else of every agent), page by page."""
    return await list_all(store, ListQuery(agent_id=agent_id, include_archived=True,
                                           limit=_PAGE))


def _rules_doc(rules: VerdictRules | None) -> dict[str, Any]:
    if rules is None:
        return {}
    return {"trusted": sorted(rules.trusted),
            "detectors": rules.detectors.names if rules.detectors is not None else [],
            "quarantine": rules.quarantine, "expire_below": rules.expire_below,
            "purge_unknown": rules.purge_unknown}


def plan_recovery(records: Sequence[MemoryRecord], selector: RecoverySelector,
                  rules: VerdictRules | None = None, *, hard: bool | None = None,
                  ) -> RecoveryPlan:
    """Seeds or verdicts, then derivations to a fixed point; pure, so a dry run is the plan.

    ``rules``: the verdict model (needed without seeds; with seeds only its detectors run).
    ``hard``: erase what goes; ``None`` means with seeds yes, by verdict no (0.5's default).
    """
    if not selector.seeded and rules is None:
        rules = VerdictRules()
    by_id = {r.id: r for r in records}
    scope = [r for r in records if selector.in_scope(r)]
    goes: dict[str, str] = {}
    quarantined: dict[str, str] = {}
    expired: dict[str, str] = {}
    taint = set(selector.all_sources)
    if selector.seeded:
        goes = {r.id: "matches the selector" for r in scope if selector.matches(r)}
        if rules is not None and rules.detectors is not None:
            for r in scope:
                if r.id not in goes and not rules.untrusted(r):
                    verdict, why = rules.verdict(r)
                    if verdict == "quarantine":
                        quarantined[r.id] = why
    else:
        assert rules is not None
        for r in scope:
            verdict, why = rules.verdict(r)
            if verdict == "purge":
                goes[r.id] = why
                taint.add(r.source or "unknown")
            elif verdict == "quarantine":
                quarantined[r.id] = why
            elif verdict == "expire":
                expired[r.id] = why
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
            by_source = sorted(taint & set(derived_sources(r.metadata)))
            if not tainted and not by_source:
                continue
            if parents and all(p in goes for p in parents):
                goes[r.id] = f"derived only from removed memories {sorted(tainted)}"
                quarantined.pop(r.id, None)
                expired.pop(r.id, None)
                changed = True
            elif r.id not in quarantined:
                quarantined[r.id] = (
                    f"derived from removed {sorted(tainted)} and from others" if tainted
                    else f"absorbed content from source {by_source[0]!r} in a merge")
                expired.pop(r.id, None)
                changed = True
    stays: dict[str, str] = {}
    for r in records:
        if r.id in goes or r.id in quarantined or r.id in expired:
            continue
        hit = [x for x in links_of(r.metadata) if x in goes or x in quarantined]
        if hit:
            stays[r.id] = f"only links to {sorted(hit)}; a link is not a derivation"

    def items(d: dict[str, str]) -> tuple[PlanItem, ...]:
        return tuple(PlanItem(i, by_id[i].agent_id, by_id[i].user_id, why, by_id[i].source)
                     for i, why in sorted(d.items()))

    changing = set(goes) | set(quarantined) | set(expired)
    return RecoveryPlan(selector.to_dict(), items(goes), items(quarantined), items(stays),
                        len(scope), items(expired),
                        kept=sum(r.id not in changing for r in scope),
                        hard=selector.seeded if hard is None else hard,
                        rules=_rules_doc(rules))


@dataclass
class RecoveryResult:
    plan: RecoveryPlan
    receipts: list[dict[str, Any]] = field(default_factory=list)
    quarantined_ids: list[str] = field(default_factory=list)
    pending_approval: bool = False
    receipt: dict[str, Any] | None = None
    #: Purged by a soft forget (the plan was not ``hard``) and expired memories.
    removed_ids: list[str] = field(default_factory=list)
    expired_ids: list[str] = field(default_factory=list)
    #: The reviewer's queue items holding the quarantined memories (governed stores only).
    review: list[dict[str, Any]] = field(default_factory=list)


async def apply_recovery(
    store: MemoryStore,
    plan: RecoveryPlan,
    key: Ed25519PrivateKey,
    *,
    audit: AuditSink | None = None,
    reason: str = "recover",
    now_ms: int,
    hold: Any = None,
) -> RecoveryResult:
    """Act on ``plan`` through the store's own forget, so governance policies apply to it.

    Per agent/user scope: one forget of what goes (hard with its receipt, or soft), one soft
    forget of what is quarantined and one of what expires; then one summary receipt over it
    all. ``hold`` (a :class:`~memorywire.governance.quarantine.QuarantineDesk`) puts each
    quarantined memory before a reviewer.
    """
    out = RecoveryResult(plan)
    scopes: dict[tuple[str, str | None], tuple[list[str], list[str], list[str]]] = {}
    for part, n in ((plan.goes, 0), (plan.quarantined, 1), (plan.expired, 2)):
        for item in part:
            scopes.setdefault((item.agent_id, item.user_id), ([], [], []))[n].append(item.id)
    for (agent, user), (gone, held, old) in sorted(scopes.items(), key=lambda kv: str(kv[0])):
        if gone and plan.hard:
            er = await erase_with_receipt(
                store, ForgetRequest(agent_id=agent, user_id=user, ids=gone, hard_delete=True,
                                     reason=reason),
                key, audit=audit, policy="recover", details={"selector": plan.selector})
            out.pending_approval |= bool(er.response.pending_approval)
            if er.receipt is not None:
                out.receipts.append(er.receipt)
        elif gone:
            resp = await store.forget(ForgetRequest(agent_id=agent, user_id=user, ids=gone,
                                                    reason=f"{reason}: purge"))
            out.pending_approval |= bool(resp.pending_approval)
            out.removed_ids.extend(resp.forgotten_ids)
        if held:
            records = {i: await store.get(agent, i, user) for i in held}
            resp = await store.forget(ForgetRequest(agent_id=agent, user_id=user, ids=held,
                                                    reason=f"{reason}: quarantined"))
            out.pending_approval |= bool(resp.pending_approval)
            out.quarantined_ids.extend(resp.forgotten_ids)
            if hold is not None and not resp.pending_approval:
                why = {i.id: i.why for i in plan.quarantined}
                for mid in resp.forgotten_ids:
                    rec = records.get(mid)
                    if rec is not None:
                        out.review.append(await hold.hold(rec, why.get(mid, ""), reason))
        if old:
            resp = await store.forget(ForgetRequest(agent_id=agent, user_id=user, ids=old,
                                                    reason=f"{reason}: expired"))
            out.pending_approval |= bool(resp.pending_approval)
            out.expired_ids.extend(resp.forgotten_ids)
    erased: dict[str, list[str]] = {}
    for rc in out.receipts:
        for st, ids in rc["erased"].items():
            erased.setdefault(st, []).extend(ids)
    out.receipt = sign_receipt(key, unsigned_receipt(
        erased=erased, actor=str(out.receipts[0]["actor"]) if out.receipts else "system",
        policy="recover", digest="", ts=now_ms, reason_redacted=False,
        details={"selector": plan.selector, "quarantined": sorted(out.quarantined_ids),
                 "soft_deleted": sorted(out.removed_ids), "expired": sorted(out.expired_ids),
                 "part_receipts": [rc["receipt_id"] for rc in out.receipts],
                 "part_content_sha256": [rc["content_sha256"] for rc in out.receipts]}))
    return out
