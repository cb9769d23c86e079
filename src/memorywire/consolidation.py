"""Short-term to long-term consolidation, run as a background task over any ``MemoryStore``.

Tiers live in metadata: ``metadata.tier`` is ``"stm"`` or ``"ltm"``. A store does not need
to know about tiers: a memory without ``tier`` *is* short-term, so new writes are STM by
default and nothing has to stamp them. Each tick scores every STM memory with a plain,
pluggable function and then

* **promotes** those scoring at least the threshold, with one metadata patch
  (``tier="ltm"``, ``promoted_at``); content, ``source``, ``confidence`` and the agent/user
  scope are never touched, so an untrusted source stays untrusted and ``importance`` never
  turns into confidence;
* **evicts** (soft ``forget``, reason ``"consolidation: expired"``) those older than the STM
  TTL that were not promoted;
* **keeps** the rest for a later tick.

Safety: every action is one atomic store call on one memory (or one ``forget`` of a set of
ids), and a decision is recomputed from the store on the next tick, so a crash mid-tick
neither duplicates nor loses a memory; re-running a finished tick changes nothing (promoted
memories are LTM and no longer candidates). Pending (approval-staged) writes are never seen:
stores never hold them — :class:`~memorywire.governance.GovernedStore` keeps them in its own
database — and a record still carrying the v0 pending sentinel is skipped defensively.

A memory changed between the listing and the action (recalled, promoted by hand) is decided
on the listed facts; the next tick sees the new ones.

Audit: pass any object with ``async record(event: dict) -> None`` (:class:`AuditSink`, which
:class:`memorywire.governance.audit.AuditLog` satisfies). Each promote or evict decision sends
``{"action": "promote"|"evict", "actor": "consolidator", "agent_id", "memory_ids": [id],
"details": {"score", "user_id", "reason", ...}}`` after the store call succeeded. Keep
decisions repeat on every tick, so they are only sent when ``audit_keeps=True``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Literal, Protocol

import anyio
from anyio.abc import TaskGroup

from memorywire.core.clock import DAY_MS, Clock, SystemClock
from memorywire.errors import MemorywireError, NotFound
from memorywire.store.base import ListQuery, MemoryStore, UpdateRequest, list_all
from memorywire.wire.models import PENDING_APPROVAL_DELETED_AT, ForgetRequest, MemoryRecord

__all__ = [
    "EVICT_REASON",
    "LTM",
    "STM",
    "TIER_KEY",
    "AuditSink",
    "Consolidator",
    "Decision",
    "ScoreInputs",
    "Scorer",
    "TickReport",
    "decide",
    "default_scorer",
    "score_inputs",
    "tier_of",
]

TIER_KEY = "tier"
STM = "stm"
LTM = "ltm"
EVICT_REASON = "consolidation: expired"
#: Recency of creation and of the last recall both halve every day.
HALF_LIFE_MS = DAY_MS
#: Recalls after which salience saturates.
SALIENT_RECALLS = 3


class AuditSink(Protocol):
    async def record(self, event: dict[str, Any]) -> None: ...


@dataclass(frozen=True)
class ScoreInputs:
    """What a scorer may look at; all derived from the record, missing facts as 0."""

    age_ms: int
    recall_count: int
    since_last_recall_ms: int | None
    confidence: float
    importance: float


Scorer = Callable[[ScoreInputs], float]


def _decay(ms: int) -> float:
    return math.pow(0.5, max(ms, 0) / HALF_LIFE_MS)


def default_scorer(f: ScoreInputs) -> float:
    """0.15·recency + 0.35·salience + 0.20·confidence + 0.30·importance, in 0..1.

    recency = ½^(age/1d); salience = min(recalls/3, 1)·½^(since last recall/1d), 0 if never
    recalled. A fresh, confident, never-recalled note scores 0.35: it needs importance or
    recalls to reach the default threshold of 0.5.
    """
    recency = _decay(f.age_ms)
    salience = 0.0
    if f.recall_count > 0 and f.since_last_recall_ms is not None:
        salience = min(f.recall_count / SALIENT_RECALLS, 1.0) * _decay(f.since_last_recall_ms)
    return 0.15 * recency + 0.35 * salience + 0.20 * f.confidence + 0.30 * f.importance


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def tier_of(record: MemoryRecord) -> str:
    tier = (record.metadata or {}).get(TIER_KEY)
    return STM if tier is None else str(tier)


def score_inputs(record: MemoryRecord, now_ms: int) -> ScoreInputs:
    extras: Mapping[str, Any] = record.model_extra or {}
    recalls = _number(extras.get("recall_count"))
    last = _number(extras.get("last_recalled_at"))
    importance = _number((record.metadata or {}).get("importance"))
    return ScoreInputs(
        age_ms=max(now_ms - record.created_at, 0),
        recall_count=int(recalls) if recalls and recalls > 0 else 0,
        since_last_recall_ms=None if last is None else max(now_ms - int(last), 0),
        confidence=1.0 if record.confidence is None else record.confidence,
        importance=min(max(importance or 0.0, 0.0), 1.0),
    )


@dataclass(frozen=True)
class Decision:
    action: Literal["promote", "evict", "keep"]
    score: float


def decide(
    record: MemoryRecord, now_ms: int, *, scorer: Scorer, threshold: float, stm_ttl_ms: int
) -> Decision:
    """Promote at or above the threshold; else evict past the TTL; else keep."""
    facts = score_inputs(record, now_ms)
    score = float(scorer(facts))
    if score >= threshold:
        return Decision("promote", score)
    if facts.age_ms > stm_ttl_ms:
        return Decision("evict", score)
    return Decision("keep", score)


@dataclass
class TickReport:
    promoted: list[str] = field(default_factory=list)
    evicted: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    #: Candidates that vanished or changed under us, or were pending; left alone.
    skipped: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, list[str]]:
        return {
            "promoted": self.promoted,
            "evicted": self.evicted,
            "kept": self.kept,
            "skipped": self.skipped,
        }


def _is_pending(record: MemoryRecord) -> bool:
    extras = record.model_extra or {}
    return extras.get("deleted_at") == PENDING_APPROVAL_DELETED_AT or bool(
        extras.get("pending_approval")
    )


class Consolidator:
    """Runs :meth:`tick` now, or every ``interval_s`` seconds as a background task."""

    def __init__(
        self,
        store: MemoryStore,
        clock: Clock | None = None,
        interval_s: float = 300.0,
        scorer: Scorer = default_scorer,
        promote_threshold: float = 0.5,
        stm_ttl_ms: int = 7 * DAY_MS,
        audit: AuditSink | None = None,
        *,
        agent_id: str | None = None,
        page_size: int = 500,
        audit_keeps: bool = False,
    ) -> None:
        self.store = store
        self.clock: Clock = clock or SystemClock()
        self.interval_s = interval_s
        self.scorer = scorer
        self.promote_threshold = promote_threshold
        self.stm_ttl_ms = stm_ttl_ms
        self.audit = audit
        self.agent_id = agent_id
        self.page_size = page_size
        self.audit_keeps = audit_keeps
        self.ticks = 0
        self.last_report: TickReport | None = None
        self.last_error: MemorywireError | None = None
        self._scope: anyio.CancelScope | None = None
        self._tg: TaskGroup | None = None

    async def _candidates(self) -> list[MemoryRecord]:
        # Listed whole before acting: evicting while paging could pull the anchor away.
        return await list_all(self.store, ListQuery(agent_id=self.agent_id,
                                                    limit=self.page_size))

    async def _audit(self, action: str, record: MemoryRecord, score: float, **details: Any) -> None:
        if self.audit is None:
            return
        await self.audit.record(
            {
                "action": action,
                "actor": "consolidator",
                "agent_id": record.agent_id,
                "memory_ids": [record.id],
                "details": {"score": round(score, 6), "user_id": record.user_id, **details},
            }
        )

    async def tick(self) -> TickReport:
        now = self.clock.now_ms()
        report = TickReport()
        evict: dict[tuple[str, str | None], list[tuple[MemoryRecord, float]]] = {}
        for record in await self._candidates():
            if tier_of(record) != STM:
                continue
            if _is_pending(record):
                report.skipped.append(record.id)
                continue
            d = decide(
                record,
                now,
                scorer=self.scorer,
                threshold=self.promote_threshold,
                stm_ttl_ms=self.stm_ttl_ms,
            )
            if d.action == "promote":
                try:
                    await self.store.update(
                        UpdateRequest(
                            agent_id=record.agent_id,
                            id=record.id,
                            user_id=record.user_id,
                            metadata_patch={TIER_KEY: LTM, "promoted_at": now},
                        )
                    )
                except NotFound:
                    report.skipped.append(record.id)
                    continue
                report.promoted.append(record.id)
                await self._audit("promote", record, d.score, tier=LTM, promoted_at=now)
            elif d.action == "evict":
                evict.setdefault((record.agent_id, record.user_id), []).append((record, d.score))
            else:
                report.kept.append(record.id)
                if self.audit_keeps:
                    await self._audit("keep", record, d.score, tier=STM)
        for (agent_id, user_id), items in evict.items():
            res = await self.store.forget(
                ForgetRequest(
                    agent_id=agent_id,
                    user_id=user_id,
                    ids=[r.id for r, _ in items],
                    reason=EVICT_REASON,
                )
            )
            gone = set(res.forgotten_ids)
            for record, score in items:
                if record.id not in gone:
                    report.skipped.append(record.id)
                    continue
                report.evicted.append(record.id)
                await self._audit("evict", record, score, reason=EVICT_REASON)
        self.ticks += 1
        self.last_report = report
        return report

    async def run(self) -> None:
        """Tick forever; a failed tick is remembered in ``last_error`` and retried later."""
        while True:
            try:
                await self.tick()
                self.last_error = None
            except MemorywireError as exc:
                self.last_error = exc
            await anyio.sleep(self.interval_s)

    async def _run_scoped(self, scope: anyio.CancelScope) -> None:
        with scope:
            await self.run()

    def start(self, task_group: TaskGroup) -> None:
        """Run in ``task_group`` until :meth:`stop` (or the group) cancels it."""
        if self.running:
            raise RuntimeError("consolidator already running")
        self._scope = anyio.CancelScope()
        task_group.start_soon(self._run_scoped, self._scope)

    def stop(self) -> None:
        if self._scope is not None:
            self._scope.cancel()

    @property
    def running(self) -> bool:
        return self._scope is not None and not self._scope.cancel_called

    async def __aenter__(self) -> Consolidator:
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        self.start(self._tg)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        self.stop()
        assert self._tg is not None
        tg, self._tg = self._tg, None
        return await tg.__aexit__(exc_type, exc, tb)
