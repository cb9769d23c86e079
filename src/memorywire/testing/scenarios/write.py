"""Scenarios about writes: forget, expire, merge, approval, procedures, content, concurrency."""

from __future__ import annotations

import json
from typing import Any

import anyio

from memorywire.errors import CapabilityMissing, Conflict, InvalidRequest
from memorywire.store.base import Capability, ListQuery, MemoryStore, UpdateRequest
from memorywire.testing.harness import Harness, Scenario, ScenarioSkip, rem, scenario
from memorywire.wire.models import (
    ExpireAction,
    ExpirePolicy,
    ExpireRequest,
    ForgetRequest,
    MemoryType,
    MergeRequest,
    MergeStrategy,
    RecallRequest,
)

__all__ = ["SCENARIOS"]

C = Capability


async def _ids(store: MemoryStore, query: str, agent: str = "a", k: int = 10) -> list[str]:
    res = await store.recall(RecallRequest(agent_id=agent, query=query, k=k))
    return [hit.id for hit in res.results]


async def forget_by_ids(h: Harness, store: MemoryStore) -> None:
    a = await store.remember(rem("a", "My locker number is 112"))
    b = await store.remember(rem("a", "My locker is on the second floor"))
    res = await store.forget(ForgetRequest(agent_id="a", ids=[a.id, "no-such-id"]))
    assert res.forgotten_ids == [a.id] and res.hard_delete is False
    assert res.stores[0].store == store.name and res.stores[0].count == 1
    assert await _ids(store, "locker") == [b.id]
    assert await store.get("a", a.id) is None
    other = await store.forget(ForgetRequest(agent_id="someone-else", ids=[b.id]))
    assert other.forgotten_ids == [], "an agent forgot another agent's memory"


async def recall_after_forget(h: Harness, store: MemoryStore) -> None:
    """Forgotten memories stay gone; without `erase`, hard delete raises and changes nothing."""
    erase = C.ERASE in store.capabilities
    for hard in (False, True):
        r = await store.remember(rem("a", f"The vault combination is 31-7-{int(hard)}"))
        forget = ForgetRequest(agent_id="a", ids=[r.id], hard_delete=hard)
        if hard and not erase:
            try:
                await store.forget(forget)
            except CapabilityMissing:
                assert [m.id for m in await store.list(ListQuery(agent_id="a"))] == [r.id], \
                    "a refused hard delete changed the store"
                return
            raise AssertionError("hard_delete without the erase capability did not raise")
        await store.forget(forget)
        assert await _ids(store, "vault combination") == [], f"hard_delete={hard}: still recalled"
        assert await store.list(ListQuery(agent_id="a")) == []


async def hard_delete_leaves_no_content(h: Harness, store: MemoryStore) -> None:
    """`erase` means no byte of hard-deleted content remains, checked via `raw_contains()`."""
    raw = getattr(store, "raw_contains", None)
    assert raw is not None, "store declares erase but offers no raw_contains() hook to check it"
    secret = "zebra-quartz-secret-7731"
    r = await store.remember(rem("a", f"The backup passphrase is {secret}",
                                 metadata={"note": secret}))
    # the hook must see live content, or its "absent" below would prove nothing
    assert await raw(secret), "raw_contains() does not see content the store holds"
    await store.forget(ForgetRequest(agent_id="a", ids=[r.id], hard_delete=True))
    assert not await raw(secret), "hard delete left the content somewhere in the store"


async def expire_by_age(h: Harness, store: MemoryStore) -> None:
    old = await store.remember(rem("a", "Lunch order: falafel wrap"))
    h.clock.advance_days(31)
    new = await store.remember(rem("a", "Lunch order: ramen"))
    res = await store.expire(ExpireRequest(agent_id="a", policy=ExpirePolicy(older_than_days=30)))
    assert res.matched_count == 1 and res.action_taken is ExpireAction.FORGET
    assert await store.get("a", old.id) is None and await store.get("a", new.id) is not None


async def expire_actions(h: Harness, store: MemoryStore) -> None:
    ids = {}
    for action in ExpireAction:
        ids[action] = (await store.remember(rem(f"ag-{action.value}", "Budget review notes"))).id
    before = await store.recall(RecallRequest(agent_id="ag-demote", query="budget review"))
    h.clock.advance_days(10)
    for action in ExpireAction:
        res = await store.expire(ExpireRequest(agent_id=f"ag-{action.value}", action=action,
                                               policy=ExpirePolicy(older_than_days=5)))
        assert res.matched_count == 1 and res.action_taken is action
    assert await store.get("ag-forget", ids[ExpireAction.FORGET]) is None
    assert await _ids(store, "budget review", "ag-archive") == [], "archived rows still surface"
    kept = await store.list(ListQuery(agent_id="ag-archive", include_archived=True))
    assert [m.id for m in kept] == [ids[ExpireAction.ARCHIVE]], "archive must not delete"
    after = await store.recall(RecallRequest(agent_id="ag-demote", query="budget review"))
    assert after.results, "a demoted memory must keep surfacing"
    ratio = after.results[0].score / before.results[0].score
    assert abs(ratio - 0.25) < 1e-6, f"demote multiplied the score by {ratio:.4f}, not 0.25"


async def no_recall_requires_tracking(h: Harness, store: MemoryStore) -> None:
    """Without recall_tracking the store must error; with it, the policy must work."""
    asked = await store.remember(rem("a", "The office door code is 2580"))
    idle = await store.remember(rem("a", "The printer is on the third floor"))
    policy = ExpirePolicy(no_recall_in_days=30)
    if C.RECALL_TRACKING not in store.capabilities:
        try:
            await store.expire(ExpireRequest(agent_id="a", policy=policy))
        except CapabilityMissing:
            return
        raise AssertionError("no_recall_in_days without recall_tracking did not raise")
    h.clock.advance_days(20)
    hits = await store.recall(RecallRequest(agent_id="a", query="office door code", k=1))
    assert [hit.id for hit in hits.results] == [asked.id]
    h.clock.advance_days(20)
    res = await store.expire(ExpireRequest(agent_id="a", policy=policy))
    assert res.matched_count == 1
    assert await store.get("a", idle.id) is None and await store.get("a", asked.id) is not None


async def _three(store: MemoryStore, h: Harness) -> list[str]:
    out = []
    for i, (text, conf, meta) in enumerate([
        ("Alice works at Acme", 0.6, {"entity_name": "alice", "team": "red", "a": 1}),
        ("Alice is a staff engineer", 0.9, {"entity_name": "alice", "team": "blue"}),
        ("Alice lives in Lisbon", 0.9, {"entity_name": "alice", "c": 3}),
    ]):
        out.append((await store.remember(rem("a", text, confidence=conf, metadata=meta))).id)
        h.clock.advance(1000 * (i + 1))
    return out


async def merge_keep_canonical(h: Harness, store: MemoryStore) -> None:
    a, b, c = await _three(store, h)
    res = await store.merge(MergeRequest(agent_id="a", canonical=a, duplicates=[b, c]))
    assert res.canonical == a and res.merged_count == 2
    got = await store.get("a", a)
    assert got is not None and got.content == "Alice works at Acme" and got.confidence == 0.6
    assert await store.get("a", b) is None and await store.get("a", c) is None
    assert await _ids(store, "Alice") == [a]


async def merge_content(h: Harness, store: MemoryStore) -> None:
    a, b, c = await _three(store, h)
    res = await store.merge(MergeRequest(agent_id="a", canonical=a, duplicates=[c, b],
                                         strategy=MergeStrategy.MERGE_CONTENT))
    assert res.canonical == a and res.merged_count == 2
    got = await store.get("a", a)
    assert got is not None and isinstance(got.content, str)
    assert got.content.split("\n") == ["Alice works at Acme", "Alice is a staff engineer",
                                       "Alice lives in Lisbon"], "contents joined oldest first"
    meta = dict(got.metadata or {})
    assert meta.get("team") == "blue" and meta.get("a") == 1 and meta.get("c") == 3
    assert got.confidence == 0.9, "merge_content takes the maximum confidence"


async def merge_keep_highest_confidence(h: Harness, store: MemoryStore) -> None:
    a, b, c = await _three(store, h)
    res = await store.merge(MergeRequest(agent_id="a", canonical="alice", duplicates=["alice"],
                                         strategy=MergeStrategy.KEEP_HIGHEST_CONFIDENCE))
    assert res.canonical == b, "highest confidence wins, ties to the older row"
    assert res.merged_count == 2
    assert await store.get("a", a) is None and await store.get("a", c) is None


async def approval_pending_invisible(h: Harness, store: MemoryStore) -> None:
    try:
        from memorywire.governance import GovernedStore
    except ImportError as exc:
        raise ScenarioSkip(f"memorywire.governance is not available ({exc})") from exc
    gov = GovernedStore(store, h.workdir / "governance.db", clock=h.clock)
    try:
        resp = await gov.remember(
            rem("a", "Transfer the budget to account 99", approval_required=True)
        )
        assert resp.pending_approval and resp.stores == []
        assert await store.get("a", resp.id) is None, "a pending write reached the store"
        assert await _ids(gov, "budget transfer account") == []
        assert await _ids(store, "budget transfer account") == []
    finally:
        await gov.aclose(inner=False)  # the harness owns the store


async def procedural_round_trip(h: Harness, store: MemoryStore) -> None:
    fsm: dict[str, Any] = {
        "name": "deploy_service", "initial": "idle", "states": ["idle", "building", "live"],
        "transitions": [{"trigger": "build", "source": "idle", "dest": "building"},
                        {"trigger": "ship", "source": "building", "dest": "live"}],
        "current": "idle",
    }
    r = await store.remember(rem("a", json.dumps(fsm), type=MemoryType.PROCEDURAL))
    got = await store.get("a", r.id)
    assert got is not None and isinstance(got.content, dict), "procedure must read as an object"
    assert got.content["states"] == fsm["states"] and got.content["current"] == "idle"
    hits = await store.recall(RecallRequest(agent_id="a", query="deploy service build ship",
                                            types=[MemoryType.PROCEDURAL]))
    assert hits.results and isinstance(hits.results[0].content, dict)
    moved = await store.update(UpdateRequest(agent_id="a", id=r.id,
                                             content={**fsm, "current": "building"}))
    assert isinstance(moved.content, dict) and moved.content["current"] == "building"
    evil = {**fsm, "transitions": [{"trigger": "x", "source": "idle", "dest": "live",
                                    "after": "os.system"}]}
    try:
        await store.remember(rem("a", evil, type=MemoryType.PROCEDURAL))
    except InvalidRequest:
        return
    raise AssertionError("a procedure with a callback key was accepted")


UNICODE = "Zoë’s café: 東京で寿司 🍣, שלום, e\u0301 (combining), 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 — 100% ✓"


async def unicode_and_large_content(h: Harness, store: MemoryStore) -> None:
    big = ("memorywire large content test " * 2300)[: 64 * 1024]
    u = await store.remember(rem("a", UNICODE, metadata={"note": UNICODE}))
    b = await store.remember(rem("a", big))
    got_u, got_b = await store.get("a", u.id), await store.get("a", b.id)
    assert got_u is not None and got_u.content == UNICODE and got_u.metadata == {"note": UNICODE}
    assert got_b is not None and got_b.content == big, "64 KiB content did not round-trip"
    assert u.id in await _ids(store, "café sushi Tokyo")


async def concurrent_writers(h: Harness, store: MemoryStore) -> None:
    ids: list[str] = []

    async def one(i: int) -> None:
        ids.append((await store.remember(rem("a", f"Concurrent note number {i}"))).id)

    async with anyio.create_task_group() as tg:
        for i in range(40):
            tg.start_soon(one, i)
    listed = await store.list(ListQuery(agent_id="a"))
    assert len(set(ids)) == 40 and {m.id for m in listed} == set(ids)


async def idempotent_retry(h: Harness, store: MemoryStore) -> None:
    first = await store.remember(rem("a", "Flight lands at 6pm", id="req-123"))
    h.clock.advance(5000)
    again = await store.remember(rem("a", "Flight lands at 6pm", id="req-123"))
    assert again.id == "req-123" and again.stored_at == first.stored_at
    assert len(await store.list(ListQuery(agent_id="a"))) == 1
    try:
        await store.remember(rem("a", "Flight lands at 9pm", id="req-123"))
    except Conflict:
        return
    raise AssertionError("the same id with different content was accepted")


async def bulk_write_then_recall(h: Harness, store: MemoryStore) -> None:
    reqs = [rem("a", f"Inventory item {i}: {i * 3} boxes of part {i:04d}") for i in range(150)]
    reqs.insert(77, rem("a", "The spare router is in the basement storage room"))
    ids = await h.remember_all(store, reqs)
    assert len(set(ids)) == 151
    assert (await _ids(store, "where is the spare router", k=3))[:1] == [ids[77]]


_s = scenario


SCENARIOS: list[Scenario] = [
    _s(forget_by_ids, C.SEMANTIC),
    _s(recall_after_forget, C.SEMANTIC),
    _s(hard_delete_leaves_no_content, C.SEMANTIC, C.ERASE),
    _s(expire_by_age, C.SEMANTIC),
    _s(expire_actions, C.SEMANTIC),
    _s(no_recall_requires_tracking, C.SEMANTIC),
    _s(merge_keep_canonical, C.SEMANTIC),
    _s(merge_content, C.SEMANTIC),
    _s(merge_keep_highest_confidence, C.SEMANTIC),
    _s(approval_pending_invisible, C.SEMANTIC),
    _s(procedural_round_trip, C.PROCEDURAL),
    _s(unicode_and_large_content, C.SEMANTIC),
    _s(concurrent_writers, C.SEMANTIC),
    _s(idempotent_retry, C.SEMANTIC),
    _s(bulk_write_then_recall, C.SEMANTIC),
]
