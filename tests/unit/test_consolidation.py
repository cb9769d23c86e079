"""STM→LTM consolidation: scoring table, decisions on a real store, audit, background task."""

from __future__ import annotations

import json
import re
import time
from typing import Any

import anyio
import pytest

from memorywire.consolidation import (
    EVICT_REASON,
    LTM,
    Consolidator,
    ScoreInputs,
    TickReport,
    decide,
    default_scorer,
)
from memorywire.core.clock import DAY_MS, FakeClock
from memorywire.embed.hashing import HashingEmbedder
from memorywire.errors import BackendUnavailable, NotFound
from memorywire.store.base import ListQuery, UpdateRequest
from memorywire.store.memory import InMemoryStore
from memorywire.wire.models import MemoryRecord, MemoryType, RecallRequest, RememberRequest

pytestmark = pytest.mark.anyio

H = DAY_MS // 24


def facts(age_d: float = 0, recalls: int = 0, since_d: float | None = None,
          conf: float = 1.0, imp: float = 0.0) -> ScoreInputs:  # fmt: skip
    since = None if since_d is None else int(since_d * DAY_MS)
    return ScoreInputs(int(age_d * DAY_MS), recalls, since, conf, imp)


# Hand-computed: 0.15·½^age + 0.35·min(n/3,1)·½^since + 0.20·conf + 0.30·imp
SCORE_TABLE = [
    (facts(), 0.35),
    (facts(imp=1.0), 0.65),
    (facts(age_d=1, recalls=3, since_d=0), 0.075 + 0.35 + 0.2),
    (facts(age_d=4), 0.15 / 16 + 0.2),
    (facts(age_d=4, imp=1.0), 0.15 / 16 + 0.2 + 0.3),
    (facts(age_d=2, recalls=1, since_d=1, conf=0.5), 0.0375 + 0.35 / 3 / 2 + 0.1),
    (facts(age_d=4, recalls=6, since_d=2, conf=0.9, imp=0.2), 0.15 / 16 + 0.35 / 4 + 0.18 + 0.06),
    (facts(recalls=2, since_d=None), 0.35),  # a count without a time is no salience
    (facts(conf=0.0, imp=0.0, age_d=30), 0.15 * 0.5**30),
]


@pytest.mark.parametrize(("inputs", "expected"), SCORE_TABLE)
def test_default_scorer_matches_hand_table(inputs: ScoreInputs, expected: float) -> None:
    assert default_scorer(inputs) == pytest.approx(expected, abs=1e-12)


def record(age_d: float = 0, now: int = 10 * DAY_MS, **extra: Any) -> MemoryRecord:
    return MemoryRecord.model_validate(
        {"id": "m", "agent_id": "a", "type": "semantic", "content": "x",
         "created_at": now - int(age_d * DAY_MS), **extra}
    )  # fmt: skip


@pytest.mark.parametrize(
    ("rec", "action"),
    [
        (record(), "keep"),
        (record(metadata={"importance": 1.0}), "promote"),
        (record(age_d=4), "evict"),
        (record(age_d=4, metadata={"importance": 1}), "promote"),
        (record(age_d=2.9), "keep"),
        (record(age_d=1, recall_count=3, last_recalled_at=10 * DAY_MS), "promote"),
        (record(age_d=4, recall_count="many", last_recalled_at="now"), "evict"),
        (record(metadata={"importance": "high"}), "keep"),
        (record(metadata={"importance": True}), "keep"),
        (record(metadata={"importance": 7.0}, confidence=0.0), "keep"),  # clamped: 0.45
        (record(metadata={"importance": float("nan")}), "keep"),
    ],
)
def test_decide_table(rec: MemoryRecord, action: str) -> None:
    d = decide(rec, 10 * DAY_MS, scorer=default_scorer, threshold=0.5, stm_ttl_ms=3 * DAY_MS)
    assert d.action == action


def test_threshold_is_inclusive_and_scorer_pluggable() -> None:
    d = decide(record(age_d=9), 10 * DAY_MS, scorer=lambda f: 0.5, threshold=0.5, stm_ttl_ms=1)
    assert d.action == "promote"


# --- on a real store -------------------------------------------------------------------------


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(start_ms=100 * DAY_MS)


@pytest.fixture
def store(clock: FakeClock) -> InMemoryStore:
    return InMemoryStore(embedder=HashingEmbedder(), clock=clock)


async def put(store: InMemoryStore, content: str, agent: str = "agent", **kw: Any) -> str:
    res = await store.remember(
        RememberRequest(agent_id=agent, type=MemoryType.SEMANTIC, content=content, **kw)
    )
    return res.id


class Sink:
    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []

    async def record(self, event: dict[str, Any]) -> None:
        self.events.append(event)


async def test_tick_on_a_store_follows_the_table(store: InMemoryStore, clock: FakeClock) -> None:
    old_plain = await put(store, "old plain note", user_id="u1")
    old_important = await put(
        store, "old vital fact", metadata={"importance": 1.0}, source="user", confidence=0.9
    )
    clock.advance_days(4)
    fresh = await put(store, "fresh note")
    important = await put(store, "fresh vital", metadata={"importance": 0.8}, user_id="u2")
    recalled = await put(store, "zebra crossing rules")
    for _ in range(3):
        await store.recall(RecallRequest(agent_id="agent", query="zebra crossing rules", k=1))
    ltm = await put(store, "already long term", metadata={"tier": "ltm"})
    sink = Sink()
    c = Consolidator(store, clock=clock, promote_threshold=0.45, stm_ttl_ms=3 * DAY_MS, audit=sink)
    before = {r.id: r for r in await store.list(ListQuery(agent_id="agent"))}

    report = await c.tick()

    assert sorted(report.promoted) == sorted([old_important, important, recalled])
    assert report.evicted == [old_plain]
    assert report.kept == [fresh]
    assert ltm not in report.promoted + report.evicted + report.kept
    assert await store.get("agent", old_plain) is None
    for mid in report.promoted:
        after = await store.get("agent", mid)
        assert after is not None and after.metadata is not None
        assert after.metadata["tier"] == LTM
        assert after.metadata["promoted_at"] == clock.now_ms()
        prev = before[mid]
        assert (after.content, after.source, after.confidence) == (
            prev.content, prev.source, prev.confidence
        )  # fmt: skip
        assert (after.agent_id, after.user_id) == (prev.agent_id, prev.user_id)
    kept = await store.get("agent", fresh)
    assert kept is not None and "tier" not in (kept.metadata or {})
    actions = sorted((e["action"], e["memory_ids"][0]) for e in sink.events)
    assert actions == sorted([("promote", m) for m in report.promoted] + [("evict", old_plain)])
    evict = next(e for e in sink.events if e["action"] == "evict")
    assert evict["details"]["reason"] == EVICT_REASON
    assert evict["details"]["user_id"] == "u1"
    assert all(e["actor"] == "consolidator" and "content" not in e["details"] for e in sink.events)

    again = await c.tick()
    assert again.promoted == [] and again.evicted == [] and again.kept == [fresh]
    assert len(sink.events) == len(actions)


async def test_untrusted_source_stays_untrusted(store: InMemoryStore, clock: FakeClock) -> None:
    mid = await put(
        store, "page says so", source="web_page", confidence=0.2, metadata={"importance": 1.0}
    )
    report = await Consolidator(store, clock=clock, promote_threshold=0.4).tick()
    assert report.promoted == [mid]
    rec = await store.get("agent", mid)
    assert rec is not None
    assert rec.source == "web_page" and rec.confidence == 0.2
    assert rec.metadata == {"importance": 1.0, "tier": "ltm", "promoted_at": clock.now_ms()}


async def test_unknown_tier_and_other_agents_are_left_alone(
    store: InMemoryStore, clock: FakeClock
) -> None:
    odd = await put(store, "odd", metadata={"tier": "archive"})
    other = await put(store, "other agent", agent="someone-else")
    clock.advance_days(30)
    report = await Consolidator(store, clock=clock, agent_id="agent").tick()
    assert report == TickReport()
    assert await store.get("agent", odd) is not None
    assert await store.get("someone-else", other) is not None
    everyone = await Consolidator(store, clock=clock).tick()
    assert everyone.evicted == [other]


async def test_keep_decisions_audited_only_on_request(
    store: InMemoryStore, clock: FakeClock
) -> None:
    mid = await put(store, "note")
    sink = Sink()
    await Consolidator(store, clock=clock, audit=sink).tick()
    assert sink.events == []
    await Consolidator(store, clock=clock, audit=sink, audit_keeps=True).tick()
    assert [(e["action"], e["memory_ids"]) for e in sink.events] == [("keep", [mid])]


async def test_real_audit_log_accepts_the_events(
    store: InMemoryStore, clock: FakeClock, tmp_path: Any
) -> None:
    from memorywire.governance.audit import AuditLog

    log = AuditLog.open(tmp_path / "audit.db", clock=clock)
    try:
        mid = await put(store, "vital", metadata={"importance": 1.0})
        await Consolidator(store, clock=clock, audit=log).tick()
        entries = list(log.entries())
        assert [(e.action, e.memory_ids) for e in entries] == [("promote", (mid,))]
    finally:
        log.close()


async def test_hundred_items_in_under_two_seconds(store: InMemoryStore, clock: FakeClock) -> None:
    ids = []
    for i in range(100):
        imp = 1.0 if i % 3 == 0 else 0.0
        ids.append(await put(store, f"note number {i}", metadata={"importance": imp}))
        clock.advance(H)
    c = Consolidator(store, clock=clock, stm_ttl_ms=2 * DAY_MS)
    started = time.perf_counter()
    report = await c.tick()
    elapsed = time.perf_counter() - started
    assert elapsed < 2.0, elapsed
    assert len(report.promoted) == 34
    assert len(report.promoted) + len(report.evicted) + len(report.kept) == 100
    # created 100 h .. 1 h ago: those older than 48 h and unimportant are evicted
    assert len(report.evicted) == sum(1 for i in range(100) if i % 3 and 100 - i > 48)


class Faulty:
    """Wraps a real store and injects one fault."""

    def __init__(self, inner: InMemoryStore, fail_list: int = 0, vanish: str | None = None):
        self.inner = inner
        self.fail_list = fail_list
        self.vanish = vanish

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def list(self, query: ListQuery) -> list[MemoryRecord]:
        if self.fail_list > 0:
            self.fail_list -= 1
            raise BackendUnavailable("injected")
        return await self.inner.list(query)

    async def update(self, req: UpdateRequest) -> MemoryRecord:
        if req.id == self.vanish:
            raise NotFound("gone")
        return await self.inner.update(req)


async def test_vanished_or_pending_items_are_skipped(
    store: InMemoryStore, clock: FakeClock
) -> None:
    mid = await put(store, "vital", metadata={"importance": 1.0})
    report = await Consolidator(Faulty(store, vanish=mid), clock=clock).tick()  # type: ignore[arg-type]
    assert report.skipped == [mid] and report.promoted == []

    class Pending(Faulty):
        async def list(self, query: ListQuery) -> list[MemoryRecord]:
            rows = await self.inner.list(query)
            return [MemoryRecord.model_validate({**r.model_dump(), "deleted_at": -1}) for r in rows]

    report = await Consolidator(Pending(store), clock=clock).tick()  # type: ignore[arg-type]
    assert report.skipped == [mid] and report.promoted == []


async def test_background_task_starts_ticks_and_stops(
    store: InMemoryStore, clock: FakeClock
) -> None:
    await put(store, "note")
    c = Consolidator(Faulty(store, fail_list=1), clock=clock, interval_s=0.01)  # type: ignore[arg-type]
    async with anyio.create_task_group() as tg:
        c.start(tg)
        assert c.running
        with anyio.fail_after(5):
            while c.ticks < 3:
                await anyio.sleep(0.01)
        c.stop()
    assert not c.running
    ticks = c.ticks
    await anyio.sleep(0.05)
    assert c.ticks == ticks  # really stopped
    assert c.last_error is None  # the injected failure was survived, then cleared


async def test_context_manager_runs_in_background(store: InMemoryStore, clock: FakeClock) -> None:
    mid = await put(store, "vital", metadata={"importance": 1.0})
    async with Consolidator(store, clock=clock, interval_s=0.01) as c:
        with anyio.fail_after(5):
            while c.ticks < 1:
                await anyio.sleep(0.01)
    assert not c.running
    rec = await store.get("agent", mid)
    assert rec is not None and rec.metadata is not None and rec.metadata["tier"] == "ltm"


def test_cli_consolidate_once(capsys: pytest.CaptureFixture[str]) -> None:
    from memorywire.cli import main

    assert main(["consolidate", "--store", "memory://", "--once", "--json"]) == 0
    out = capsys.readouterr().out
    assert json.loads(out) == {"promoted": [], "evicted": [], "kept": [], "skipped": []}
    # For people: one line of counts per tick, never every id.
    assert main(["consolidate", "--store", "memory://", "--once"]) == 0
    line = capsys.readouterr().out.strip()
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ tick: 0 promoted, 0 evicted, "
                        r"0 kept, 0 skipped", line), line
    assert main(["consolidate", "--store", "nosuch://x", "--once"]) == 1
    assert "unknown store URL scheme" in capsys.readouterr().err
