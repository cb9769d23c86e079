"""Restated facts are one answer on every store: with ``duplicate_share`` set, a turn that
says again what a higher turn of its session said yields its place in the first k to the
session's distinct turn; turns of other sessions keep theirs; off (the default) is the
store's order; an unusable share is refused naming the setting."""

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

QUESTION = "What is my goal level in Apex Legends?"
TURNS = (
    ("goal", "apex", "My goal level in Apex Legends is 150, and I want to reach it this year."),
    ("again", "apex", "As I said, my goal level in Apex Legends is 150, and I want to reach it "
                      "soon."),
    ("old", "apex", "Before that I aimed for level 100 in Apex Legends."),
    ("chess", "board", "I play chess on Sunday mornings with my uncle."),
    ("tea", "board", "My uncle drinks green tea while we play."),
)
SHARE = 0.3


def _turns(sessions: Sequence[str] | None = None) -> list[RememberRequest]:
    return [RememberRequest(agent_id="a", type=MemoryType.EPISODIC, id=mid, content=text,
                            metadata={"session": sessions[n] if sessions else s})
            for n, (mid, s, text) in enumerate(TURNS)]


async def _ids(store: MemoryStore, reqs: Sequence[RememberRequest], k: int = 5) -> list[str]:
    return await ranked_ids(store, reqs, QUESTION, k=k)


async def test_a_restated_turn_yields_its_place_to_the_distinct_one(
        kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    off = await _ids(await make_store(kind, tmp_path / "off", request), _turns(), k=2)
    on = await _ids(await make_store(kind, tmp_path, request, duplicate_share=SHARE),
                    _turns(), k=2)
    assert sorted(off) == ["again", "goal"]  # without the rule: the fact twice
    assert on == [off[0], "old"]  # with it: the fact once, and the other thing said


async def test_the_copy_stays_in_the_list_right_behind_the_distinct_turn(
        kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    off = await _ids(await make_store(kind, tmp_path / "off", request), _turns())
    on = await _ids(await make_store(kind, tmp_path, request, duplicate_share=SHARE),
                    _turns())
    assert on[:3] == [off[0], "old", off[1]]
    assert on[3:] == off[3:]  # the other session keeps its places


async def test_the_same_words_in_another_session_are_not_a_restatement(
        kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    split = ["apex", "apex2", "apex", "board", "board"]
    off = await _ids(await make_store(kind, tmp_path / "off", request), _turns(split))
    on = await _ids(await make_store(kind, tmp_path, request, duplicate_share=SHARE),
                    _turns(split))
    assert on == off


async def test_off_by_default(kind: str, tmp_path: Path,
                              request: pytest.FixtureRequest) -> None:
    default = await _ids(await make_store(kind, tmp_path / "default", request), _turns())
    off = await _ids(await make_store(kind, tmp_path, request, duplicate_share=0.0), _turns())
    assert default == off
    assert sorted(default[:2]) == ["again", "goal"]


@pytest.mark.parametrize("bad", [-0.5, 1.5, float("nan"), float("inf")])
def test_a_share_that_cannot_work_is_refused_naming_the_setting(
        tmp_path: Path, bad: float) -> None:
    with pytest.raises(InvalidRequest, match="duplicate_share"):
        SqliteStore(tmp_path / "bad.db", EMB,
                    recall=replace(SqliteStore.DEFAULT_RECALL, duplicate_share=bad))
    with pytest.raises(InvalidRequest, match="duplicate_share"):
        InMemoryStore(EMB, recall=replace(InMemoryStore.DEFAULT_RECALL, duplicate_share=bad))


def test_postgres_refuses_a_bad_share_before_connecting() -> None:
    pytest.importorskip("psycopg")
    from memorywire.store.postgres import PostgresStore

    with pytest.raises(InvalidRequest, match="duplicate_share"):
        PostgresStore("postgresql://nobody@127.0.0.1:1/none", EMB,
                      recall=replace(PostgresStore.DEFAULT_RECALL, duplicate_share=2.0))
