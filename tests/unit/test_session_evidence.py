"""A memory rises with the other good hits of its session: the rule, the deeper re-ask only
for stores whose hits carry sessions, and the setting refused where it cannot work."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from memorywire.embed.hashing import HashingEmbedder
from memorywire.errors import InvalidRequest
from memorywire.recall.plan import recall_in_time
from memorywire.recall.rules import UNRANKED
from memorywire.recall.session_evidence import (
    SESSION_POOL,
    session_of,
    session_ranked,
)
from memorywire.store.memory import InMemoryStore
from memorywire.store.sqlite import SqliteStore
from memorywire.wire.models import (
    Fusion,
    MemoryType,
    RecallHit,
    RecallRequest,
    RecallResponse,
    RememberRequest,
)

#: The plan with only session evidence on.
SESSIONS = replace(UNRANKED, session_weight=0.5)


def _hit(id: str, session: Any = None) -> RecallHit:
    metadata = None if session is None else {"session": session}
    return RecallHit(id=id, type=MemoryType.EPISODIC, content=id, score=1.0, created_at=0,
                     metadata=metadata)


def _ids(hits: list[RecallHit]) -> list[str]:
    return [h.id for h in hits]


def test_a_turn_whose_session_holds_other_good_hits_moves_up() -> None:
    # "y" and "z" share session B, whose two hits outweigh the lone best hit of A or C:
    # y passes w (session C); x, the best hit, keeps first place at the default weight.
    hits = [_hit("x", "A"), _hit("w", "C"), _hit("y", "B"), _hit("z", "B")]
    assert _ids(session_ranked(hits)) == ["x", "y", "w", "z"]


def test_a_stronger_weight_lets_the_session_overtake_the_best_lone_hit() -> None:
    hits = [_hit("x", "A"), _hit("w", "C"), _hit("y", "B"), _hit("z", "B")]
    assert _ids(session_ranked(hits, weight=3.0))[:2] == ["y", "z"]


def test_order_is_kept_without_sessions_or_with_weight_zero() -> None:
    plain = [_hit("a"), _hit("b"), _hit("c")]
    assert _ids(session_ranked(plain)) == ["a", "b", "c"]
    one = [_hit("a"), _hit("b", "S"), _hit("c")]
    assert _ids(session_ranked(one)) == ["a", "b", "c"]
    hits = [_hit("x", "A"), _hit("w", "C"), _hit("y", "B"), _hit("z", "B")]
    assert _ids(session_ranked(hits, weight=0)) == ["x", "w", "y", "z"]


def test_integer_and_string_sessions_are_one_session_and_odd_values_none() -> None:
    assert session_of(_hit("a", 7)) == session_of(_hit("b", "7")) == "7"
    assert session_of(_hit("a", True)) is None
    assert session_of(_hit("a", "")) is None
    assert session_of(_hit("a", {"id": 1})) is None


def test_only_the_pool_is_reordered() -> None:
    hits = [_hit(f"h{i}", f"s{i}") for i in range(SESSION_POOL)] + \
        [_hit("late1", "s0"), _hit("late2", "s0")]
    out = session_ranked(hits, weight=5.0)
    assert _ids(out)[-2:] == ["late1", "late2"]


@pytest.mark.parametrize("bad", [-0.1, float("nan"), float("inf"), True, "1"])
def test_a_weight_that_cannot_work_is_refused_naming_the_setting(bad: Any) -> None:
    with pytest.raises(InvalidRequest, match="session_weight"):
        InMemoryStore(recall=replace(InMemoryStore.DEFAULT_RECALL, session_weight=bad))


def test_sqlite_store_refuses_a_negative_weight(tmp_path: Path) -> None:
    with pytest.raises(InvalidRequest, match="session_weight"):
        SqliteStore(tmp_path / "s.db", HashingEmbedder(),
                    recall=replace(SqliteStore.DEFAULT_RECALL, session_weight=-1))


class _Search:
    """Records the depth each search asks for; answers ``n`` hits of the given sessions."""

    def __init__(self, sessions: list[Any]) -> None:
        self.sessions = sessions
        self.asked: list[int] = []

    async def __call__(self, req: RecallRequest) -> RecallResponse:
        self.asked.append(req.k)
        hits = [_hit(f"h{i}", self.sessions[i % len(self.sessions)])
                for i in range(req.k)]
        return RecallResponse(results=hits, fusion_used=Fusion.RRF, stores_queried=["t"],
                              latency_ms=0)


@pytest.mark.anyio
async def test_only_answers_that_carry_sessions_are_asked_for_the_deeper_pool() -> None:
    req = RecallRequest(agent_id="a", query="what did we plan", k=5)
    plain = _Search([None])
    resp = await recall_in_time(req, plain, 0, settings=SESSIONS)
    assert plain.asked == [5] and len(resp.results) == 5
    with_sessions = _Search(["s1", "s2", "s3"])
    resp = await recall_in_time(req, with_sessions, 0, settings=SESSIONS)
    assert with_sessions.asked == [5, SESSION_POOL] and len(resp.results) == 5
    off = _Search(["s1", "s2", "s3"])
    await recall_in_time(req, off, 0, settings=UNRANKED)
    assert off.asked == [5]


@pytest.mark.anyio
async def test_a_store_ranks_by_session_evidence_end_to_end(tmp_path: Path) -> None:
    """Three turns of one session about a trip and a lone turn that shares the same words:
    with the boost off the lone turn ranks above one of the session's turns, with a strong
    boost the session's turns close up above it."""
    texts = [("lone", "x", "kyoto trip budget spreadsheet for the office"),
             ("t1", "trip", "we planned the kyoto trip together"),
             ("t2", "trip", "the kyoto trip hotel was near the station"),
             ("t3", "trip", "kyoto trip photos from the temple")]
    orders = {}
    for weight in (0.0, 3.0):
        store = SqliteStore(tmp_path / f"w{weight}.db", HashingEmbedder(),
                            recall=replace(SqliteStore.DEFAULT_RECALL, relevance_floor=-1.0,
                                           lexical_floor=-1.0, session_weight=weight))
        try:
            await store.remember_many([
                RememberRequest(agent_id="a", type=MemoryType.EPISODIC, content=text, id=id,
                                metadata={"session": session})
                for id, session, text in texts])
            resp = await store.recall(RecallRequest(agent_id="a", query="kyoto trip", k=4))
            orders[weight] = _ids(resp.results)
        finally:
            await store.aclose()
    assert set(orders[0.0]) == set(orders[3.0]) == {"lone", "t1", "t2", "t3"}
    assert orders[0.0][-1] != "lone"
    assert orders[3.0][-1] == "lone"
