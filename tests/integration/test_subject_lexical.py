"""The subject lexical list on every store that runs the recall plan: Melanie's turn that
answers "What books has Melanie been reading?" in other forms of its words is outranked by
Caroline's turns that repeat the question's words (and Melanie's name), and the list lifts it
first when turned on (``subject_lexical_weight=SUBJECT_LEXICAL_WEIGHT``; off by default since
rank31b); ``subject_lexical_weight=0`` is the store's order as before. The subject boost is
off in both, so only the list can move it.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from memorywire.errors import InvalidRequest
from memorywire.recall.settings import SUBJECT_LEXICAL_WEIGHT
from memorywire.store.memory import InMemoryStore
from memorywire.store.sqlite import SqliteStore
from memorywire.testing import postgres as _pg
from memorywire.wire.models import MemoryType, RememberRequest
from tests.integration import boost_stores
from tests.integration.boost_stores import EMB, make_store, ranked_ids

pytestmark = pytest.mark.anyio
pg_server = _pg.pg_server
kind = boost_stores.kind  # each store kind in turn

QUESTION = "What books has Melanie been reading?"
TURNS = [(f"x{i}", "Caroline", f"Melanie, what have you been up to? Day {i} has been lovely.")
         for i in range(8)] + [
    ("answer", "Melanie", "I read two novels by Toni Morrison; the book club loved them.")] + [
    # Turns that do not name Melanie: her name is then no word every turn holds (a store
    # leaves such a word out of its full-text list), and still the one the other turns share.
    (f"y{i}", "Caroline", f"The garden looked grey on day {i}; the tomatoes are late.")
    for i in range(12)]


def _turns() -> list[RememberRequest]:
    return [RememberRequest(agent_id="a", type=MemoryType.EPISODIC, id=mid,
                            content=f"{speaker}: {text}", metadata={"speaker": speaker})
            for mid, speaker, text in TURNS]


async def test_the_named_persons_matching_turn_is_lifted_first(
        kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    off = await ranked_ids(await make_store(kind, tmp_path / "off", request, subject_weight=0.0,
                                            subject_lexical_weight=0.0), _turns(), QUESTION, k=5)
    on = await ranked_ids(await make_store(kind, tmp_path, request, subject_weight=0.0,
                                           subject_lexical_weight=SUBJECT_LEXICAL_WEIGHT),
                          _turns(), QUESTION, k=5)
    assert off[0] != "answer"
    assert on[0] == "answer"
    # the rest keep the store's order
    assert [i for i in on if i != "answer"] == [i for i in off if i != "answer"][:len(on) - 1]


async def test_a_question_that_names_no_one_keeps_the_stores_order(
        kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    query = "what books have been read?"
    off = await ranked_ids(await make_store(kind, tmp_path / "off", request,
                                            subject_lexical_weight=0.0), _turns(), query, k=5)
    on = await ranked_ids(await make_store(kind, tmp_path, request,
                                           subject_lexical_weight=SUBJECT_LEXICAL_WEIGHT),
                          _turns(), query, k=5)
    assert on == off


@pytest.mark.parametrize("bad", [-1.0, float("nan"), float("inf")])
def test_a_weight_that_cannot_work_is_refused_naming_the_setting(
        tmp_path: Path, bad: float) -> None:
    with pytest.raises(InvalidRequest, match="subject_lexical_weight"):
        SqliteStore(tmp_path / "bad.db", EMB,
                    recall=replace(SqliteStore.DEFAULT_RECALL, subject_lexical_weight=bad))
    with pytest.raises(InvalidRequest, match="subject_lexical_weight"):
        InMemoryStore(EMB, recall=replace(InMemoryStore.DEFAULT_RECALL, subject_lexical_weight=bad))


def test_postgres_refuses_a_bad_weight_before_connecting() -> None:
    pytest.importorskip("psycopg")
    from memorywire.store.postgres import PostgresStore

    with pytest.raises(InvalidRequest, match="subject_lexical_weight"):
        PostgresStore("postgresql://nobody@127.0.0.1:1/none", EMB,
                      recall=replace(PostgresStore.DEFAULT_RECALL, subject_lexical_weight=-1.0))
