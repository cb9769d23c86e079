"""Within a session, the turn whose own words answer comes before a neighbour that matched
through its context, on every store; ``turn_weight=0`` keeps the store's order.

Each turn carries the assistant's long reply as ``metadata.context`` (the session is found
mostly through its replies, as LongMemEval's are). The neighbour ("How did I do it?") wins
the full-text list through its reply (which names Tybee Island and the hours) and the
vector list through the question's function words; the answer says it in its own words
among thirty others. The substance prior is off here, so that only turn focus can put the
long answer first.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import pytest

from memorywire.errors import InvalidRequest
from memorywire.store.base import MemoryStore
from memorywire.store.memory import InMemoryStore
from memorywire.store.sqlite import SqliteStore
from memorywire.testing import postgres as _pg
from memorywire.wire.models import MemoryType, RememberRequest
from tests.integration import boost_stores
from tests.integration.boost_stores import EMB, make_store, ranked_ids

pytestmark = pytest.mark.anyio
pg_server = _pg.pg_server
kind = boost_stores.kind  # each store kind in turn

QUESTION = "How many hours did I drive to Tybee Island?"
#: The assistant's reply, several times longer than the user's turn (LongMemEval's keys).
REPLY = " Here is what I would suggest, step by step, with all of the details." * 12
TURNS = (
    ("chat", "trip", "How did I do it? I did it, how did I?",
     "Tybee Island: many hours, a long drive." + REPLY),
    ("answer", "trip", "Last spring, after a long week at work, six hours of driving with my "
                       "sister and our old dog finally got me to Tybee Island, where we stayed "
                       "at a small inn by the pier.", "Nice." + REPLY),
    ("plans", "trip", "What should I pack for the beach?", "Sunscreen and a towel." + REPLY),
    ("dog", "home", "My dog ate my homework.", "Oh no." + REPLY),
    ("cat", "home", "The cat sleeps all day.", "Cats do." + REPLY),
)


def _turns(sessions: bool = True) -> list[RememberRequest]:
    return [RememberRequest(agent_id="a", type=MemoryType.EPISODIC, id=mid, content=text,
                            metadata={"context": reply, **({"session": s} if sessions else {})})
            for mid, s, text, reply in TURNS]


async def _ids(store: MemoryStore, reqs: Sequence[RememberRequest]) -> list[str]:
    return await ranked_ids(store, reqs, QUESTION, k=5)


async def test_the_turn_that_says_it_comes_first_in_its_session(
        kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    off = await _ids(await make_store(kind, tmp_path / "off", request, substance_weight=0.0,
                                      turn_weight=0.0), _turns())
    on = await _ids(await make_store(kind, tmp_path, request, substance_weight=0.0), _turns())
    assert off[:2] == ["chat", "answer"]
    assert on[:2] == ["answer", "chat"]
    # the other session keeps its place: only the trip's turns changed places
    assert on.index("dog") == off.index("dog")


async def test_without_sessions_the_order_is_the_stores(
        kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    off = await _ids(await make_store(kind, tmp_path / "off", request, substance_weight=0.0,
                                      turn_weight=0.0), _turns(sessions=False))
    on = await _ids(await make_store(kind, tmp_path, request, substance_weight=0.0),
                    _turns(sessions=False))
    assert on == off


@pytest.mark.parametrize("bad", [-1.0, float("nan"), float("inf")])
def test_a_turn_weight_that_cannot_work_is_refused_naming_the_setting(
        tmp_path: Path, bad: float) -> None:
    with pytest.raises(InvalidRequest, match="turn_weight"):
        SqliteStore(tmp_path / "bad.db", EMB,
                    recall=replace(SqliteStore.DEFAULT_RECALL, turn_weight=bad))
    with pytest.raises(InvalidRequest, match="turn_weight"):
        InMemoryStore(EMB, recall=replace(InMemoryStore.DEFAULT_RECALL, turn_weight=bad))


def test_postgres_refuses_a_bad_turn_weight_before_connecting() -> None:
    pytest.importorskip("psycopg")
    from memorywire.store.postgres import PostgresStore

    with pytest.raises(InvalidRequest, match="turn_weight"):
        PostgresStore("postgresql://nobody@127.0.0.1:1/none", EMB,
                      recall=replace(PostgresStore.DEFAULT_RECALL, turn_weight=-1.0))
