"""A turn that states something outranks a short remark that repeats the question, on
every store.

The remark ("Books are great! What books has John read?") repeats the question's words and
wins both the full-text and the vector list; the turn that answers it names the books among
thirty other words. With the substance prior the answer comes first; with
``substance_weight=0`` the store's own order stands; a store of short facts keeps its order.
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

QUESTION = "What books has John read?"
TURNS = (
    ("remark", "Tim: Books are great! What books has John read?"),
    ("answer", "John: I finished Dune by Frank Herbert last month, a long story about "
               "religion, ecology and power on a desert planet, and now I am reading The "
               "Alchemist again because it keeps me dreaming."),
    ("other", "Tim: My dog ate my homework."),
)


def _turns(turns: Sequence[tuple[str, str]] = TURNS) -> list[RememberRequest]:
    return [RememberRequest(agent_id="a", type=MemoryType.EPISODIC, id=mid, content=text)
            for mid, text in turns]


async def _ids(store: MemoryStore, reqs: Sequence[RememberRequest]) -> list[str]:
    return await ranked_ids(store, reqs, QUESTION, k=3)


async def test_the_turn_that_states_the_answer_comes_before_the_remark(
        kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    ids = await _ids(await make_store(kind, tmp_path, request), _turns())
    assert ids[:2] == ["answer", "remark"]


async def test_substance_weight_zero_turns_the_prior_off(
        kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    ids = await _ids(await make_store(kind, tmp_path, request, substance_weight=0.0), _turns())
    assert ids[:2] == ["remark", "answer"]


async def test_a_store_of_short_facts_keeps_its_order(
        kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    facts = (("tea", "John reads books about tea."), ("dune", "John read Dune."),
             ("dog", "Tim has a dog."))
    with_prior = await _ids(await make_store(kind, tmp_path, request), _turns(facts))
    without = await _ids(await make_store(kind, tmp_path / "off", request, substance_weight=0.0),
                         _turns(facts))
    assert with_prior == without


@pytest.mark.parametrize("bad", [-0.1, float("nan"), float("inf")])
def test_a_weight_that_cannot_work_is_refused_naming_the_setting(bad: float,
                                                                  tmp_path: Path) -> None:
    with pytest.raises(InvalidRequest, match="substance_weight"):
        SqliteStore(tmp_path / "bad.db", EMB,
                    recall=replace(SqliteStore.DEFAULT_RECALL, substance_weight=bad))
    with pytest.raises(InvalidRequest, match="substance_weight"):
        InMemoryStore(EMB, recall=replace(InMemoryStore.DEFAULT_RECALL, substance_weight=bad))


@pytest.mark.parametrize("bad", [-0.1, float("nan")])
def test_postgres_refuses_the_weight_before_connecting(bad: float) -> None:
    pytest.importorskip("psycopg")
    from memorywire.store.postgres import PostgresStore

    with pytest.raises(InvalidRequest, match="substance_weight"):
        PostgresStore("postgresql://nobody@127.0.0.1:1/none", EMB,
                      recall=replace(PostgresStore.DEFAULT_RECALL, substance_weight=bad))
