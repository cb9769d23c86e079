"""The SDK's methods have real signatures, sync and async, local and remote, and still take
the request models and mappings earlier code passes."""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from memorywire import SyncMemory
from memorywire.client import Memory, RemoteMemory
from memorywire.errors import CapabilityMissing, InvalidRequest
from memorywire.server.dispatch import Dispatcher
from memorywire.server.http import create_app
from memorywire.store.memory import InMemoryStore
from memorywire.wire.models import RecallRequest, RememberRequest

OPS = ("remember", "recall", "get", "forget", "merge", "expire", "list", "update", "history",
       "erase")


@pytest.mark.parametrize("cls", [SyncMemory, Memory, RemoteMemory])
@pytest.mark.parametrize("op", OPS)
def test_every_operation_names_its_parameters(cls: type, op: str) -> None:
    sig = inspect.signature(getattr(cls, op))
    params = sig.parameters
    assert "agent_id" in params and params["agent_id"].kind is inspect.Parameter.KEYWORD_ONLY
    assert not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    assert getattr(cls, op).__doc__


def test_sync_remember_signature_leads_with_content() -> None:
    params = list(inspect.signature(SyncMemory.remember).parameters)
    assert params[:4] == ["self", "content", "agent_id", "type"]
    assert {"user_id", "metadata", "confidence", "source", "id"} <= set(params)
    assert list(inspect.signature(SyncMemory.recall).parameters)[1] == "query"
    assert list(inspect.signature(SyncMemory.get).parameters)[1] == "id"
    assert list(inspect.signature(SyncMemory.forget).parameters)[1] == "ids"


@pytest.fixture
def mem(tmp_path: Path) -> Iterator[SyncMemory[Memory]]:
    with SyncMemory.local(f"sqlite:///{tmp_path / 'm.db'}") as m:
        yield m


def test_positional_calls_local(mem: SyncMemory[Memory]) -> None:
    one = mem.remember("Alice drinks green tea.", agent_id="a")
    two = mem.remember("Alice drinks green tea every morning.", agent_id="a", type="semantic")
    got = mem.get(one.id, agent_id="a")
    assert got.memory.content == "Alice drinks green tea." and got.memory.type == "semantic"
    hits = mem.recall("what does Alice drink?", agent_id="a", k=3)
    assert {h.id for h in hits.results} == {one.id, two.id}
    assert mem.update(one.id, agent_id="a", content="Alice drinks oolong.").memory is not None
    assert [m.id for m in mem.list(agent_id="a").memories] == [one.id, two.id]
    assert mem.forget(one.id, agent_id="a").forgotten_ids == [one.id]
    assert mem.forget([two.id], agent_id="a").forgotten_ids == [two.id]


def test_request_models_and_mappings_still_work(mem: SyncMemory[Memory]) -> None:
    req = RememberRequest(agent_id="a", type="semantic", content="Bob likes jazz.")
    rid = mem.remember(req).id
    assert mem.remember({"agent_id": "a", "type": "episodic", "content": "Met Bob."}).id
    assert mem.recall(RecallRequest(agent_id="a", query="Bob music"), k=1).results[0].id == rid
    assert mem.get({"agent_id": "a", "id": rid}).memory.id == rid
    assert mem.get(agent_id="a", id=rid).memory.id == rid


def test_missing_argument_is_named(mem: SyncMemory[Memory]) -> None:
    with pytest.raises(InvalidRequest, match="missing argument 'agent_id'") as err:
        mem.remember("no agent")
    assert [d.message for d in err.value.details] == ["'agent_id' is a required property"]
    with pytest.raises(InvalidRequest, match="missing argument 'query'"):
        mem.recall(agent_id="a")
    with pytest.raises(InvalidRequest, match="missing argument 'id'"):
        mem.get(agent_id="a")


def test_history_without_governance_says_how_to_turn_it_on(mem: SyncMemory[Memory]) -> None:
    rid = mem.remember("x", agent_id="a").id
    with pytest.raises(CapabilityMissing) as err:
        mem.history(rid, agent_id="a")
    assert "--governance-db PATH" in err.value.message
    assert "start the server" not in err.value.message
    assert "on by default only for the default store" in err.value.message


@pytest.mark.anyio
async def test_remote_client_takes_the_same_positional_calls() -> None:
    app = create_app(Dispatcher(InMemoryStore()), tokens=None)
    async with RemoteMemory("http://127.0.0.1", transport=httpx.ASGITransport(app=app)) as r:
        rid = (await r.remember("Carol runs marathons.", agent_id="c")).id
        assert (await r.get(rid, agent_id="c")).memory.content == "Carol runs marathons."
        assert (await r.recall("marathons", agent_id="c")).results[0].id == rid
        assert (await r.forget(rid, agent_id="c")).forgotten_ids == [rid]
