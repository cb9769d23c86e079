"""Typed memory fields: the rule table of ``where``, updates, the router and dumps."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from memorywire.core.clock import FakeClock
from memorywire.core.fields import matches_where
from memorywire.embed.hashing import HashingEmbedder
from memorywire.errors import InvalidRequest
from memorywire.portability import export_dump, import_dump
from memorywire.router import MemoryRouter
from memorywire.store.base import UpdateRequest
from memorywire.store.memory import InMemoryStore
from memorywire.store.sqlite import SqliteStore
from memorywire.wire.codec import parse_request
from memorywire.wire.models import RecallRequest, RememberRequest

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


EMO = {"valence": -0.5, "sentiment": "negative"}


@pytest.mark.parametrize(("mtype", "metadata", "where", "hit"), [
    ("emotional", EMO, {"valence": {"lt": 0}}, True),
    ("emotional", EMO, {"valence": {"lt": -0.5}}, False),
    ("emotional", EMO, {"valence": {"lte": -0.5, "gte": -0.5}}, True),
    ("emotional", EMO, {"valence": {"eq": -0.5}, "sentiment": {"eq": "negative"}}, True),
    ("emotional", EMO, {"sentiment": {"in": ["positive", "mixed"]}}, False),
    ("emotional", EMO, {"arousal": {"gte": 0}}, False),            # not held: no match
    ("semantic", EMO, {"valence": {"lt": 0}}, False),              # not a field of semantic
    ("emotional", {"valence": 5}, {"valence": {"gt": 0}}, False),  # malformed legacy value
    ("emotional", {"valence": True}, {"valence": {"eq": 1}}, False),
    ("episodic", {"participants": ["a", "b"]}, {"participants": {"contains": "b"}}, True),
    ("episodic", {"participants": ["a"]}, {"participants": {"contains": "b"}}, False),
    ("episodic", {"event_time": 10}, {"event_time": {"gte": 10, "lte": 20}}, True),
    ("episodic", {"event_time": 10}, {"event_time": {"gt": 10}}, False),
    ("episodic", {"location": "Lisbon"}, {"location": {"in": ["Porto", "Lisbon"]}}, True),
    ("episodic", {}, None, True),
])
def test_where_rule_table(mtype: str, metadata: dict[str, Any], where: Any, hit: bool) -> None:
    assert matches_where(mtype, metadata, where) is hit


@pytest.mark.parametrize(("doc", "pointer"), [
    ({"where": {}}, "/where"),
    ({"where": {"valence": {}}}, "/where/valence"),
    ({"where": {"valence": {"lt": "low"}}}, "/where/valence/lt"),
    ({"where": {"sentiment": {"eq": "sad"}}}, "/where/sentiment/eq"),
    ({"where": {"participants": {"eq": ["a"]}}}, "/where/participants/eq"),
    ({"where": {"emotion": {"in": []}}}, "/where/emotion/in"),
])
def test_malformed_where_is_refused_at_its_pointer(doc: dict[str, Any], pointer: str) -> None:
    with pytest.raises(InvalidRequest) as err:
        parse_request("recall", {"agent_id": "a", "query": "q", **doc})
    assert pointer in [d.path for d in err.value.details], err.value.details


def test_metadata_spelling_is_validated_and_the_field_wins() -> None:
    ok = parse_request("remember", {"agent_id": "a", "type": "semantic", "content": "x",
                                    "metadata": {"valence": 5}})
    assert ok.metadata == {"valence": 5}   # free-form on a type without the field
    req = parse_request("remember", {"agent_id": "a", "type": "emotional", "content": "x",
                                     "valence": 0.5, "metadata": {"valence": -0.5}})
    assert isinstance(req, RememberRequest)
    with pytest.raises(InvalidRequest, match="valence"):
        parse_request("remember", {"agent_id": "a", "type": "emotional", "content": "x",
                                   "metadata": {"valence": "very"}})


def _stores(tmp_path: Path) -> list[Any]:
    clock = FakeClock()
    return [InMemoryStore(embedder=HashingEmbedder(), clock=clock),
            SqliteStore(tmp_path / "s.db", embedder=HashingEmbedder(), clock=clock)]


async def test_field_wins_over_metadata_and_update_is_validated(tmp_path: Path) -> None:
    for store in _stores(tmp_path):
        await store.remember(RememberRequest(agent_id="a", type="emotional", content="x",
                                             id="e", valence=0.5, metadata={"valence": -0.5}))
        got = await store.get("a", "e")
        assert got is not None and got.model_dump()["valence"] == 0.5
        with pytest.raises(InvalidRequest, match="valence"):
            await store.update(UpdateRequest(agent_id="a", id="e",
                                             metadata_patch={"valence": 7}))
        moved = await store.update(UpdateRequest(agent_id="a", id="e",
                                                 metadata_patch={"valence": -0.25}))
        assert moved.model_dump()["valence"] == -0.25
        await store.aclose()


async def test_router_passes_where_to_every_child(tmp_path: Path) -> None:
    children = _stores(tmp_path)
    router = MemoryRouter(children)
    await router.remember(RememberRequest(agent_id="a", type="emotional", content="rainy day",
                                          id="neg", valence=-0.4))
    await router.remember(RememberRequest(agent_id="a", type="emotional", content="sunny day",
                                          id="pos", valence=0.4))
    res = await router.recall(RecallRequest(agent_id="a", query="day", k=5, min_relevance=0,
                                            where={"valence": {"lt": 0}}))
    assert [h.id for h in res.results] == ["neg"]
    assert res.stores_queried == [c.name for c in children]
    await router.aclose()


async def test_dump_carries_typed_fields(tmp_path: Path) -> None:
    src, dst = (SqliteStore(tmp_path / f"{n}.db", embedder=HashingEmbedder()) for n in "ab")
    await src.remember(RememberRequest(agent_id="a", type="episodic", content="offsite",
                                       id="ev", event_time=1_700_000_000_000,
                                       participants=["ana"]))
    path = tmp_path / "dump.jsonl"
    with path.open("wb") as out:
        assert await export_dump(src, out, url="sqlite:///a.db") == 1
    await import_dump(dst, str(path))
    got = await dst.get("a", "ev")
    assert got is not None
    assert (got.model_dump()["event_time"], got.model_dump()["participants"]) == \
        (1_700_000_000_000, ["ana"])
    res = await dst.recall(RecallRequest(agent_id="a", query="offsite", min_relevance=0,
                                         where={"event_time": {"lt": 1_800_000_000_000}}))
    assert [h.id for h in res.results] == ["ev"]
    await src.aclose()
    await dst.aclose()
