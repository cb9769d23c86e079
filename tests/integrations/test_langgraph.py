"""LangGraph: a graph keeps its long-term memory in memorywire, and the store behaves like
LangGraph's own (checked operation by operation against its InMemoryStore)."""

from __future__ import annotations

import time
from typing import Any, TypedDict

import pytest

pytest.importorskip("langgraph", reason="needs the memorywire[langgraph] extra")

from langgraph.graph import END, START, StateGraph
from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    SearchOp,
)
from langgraph.store.memory import InMemoryStore as LangGraphMemoryStore

from memorywire.client import SyncMemory
from memorywire.errors import PendingApproval
from memorywire.integrations.langgraph import MemorywireStore

from .conftest import MakeClient


class State(TypedDict):
    user: str
    said: str
    recalled: list[str]


def test_a_graph_writes_and_searches_its_store(client: SyncMemory[Any]) -> None:
    store = MemorywireStore(client, agent_id="assistant", user_segment=1)

    def remember(state: State, store: BaseStore) -> dict[str, Any]:
        store.put(("memories", state["user"]), f"m{len(state['said'])}", {"text": state["said"]})
        return {}

    def recall(state: State, store: BaseStore) -> dict[str, Any]:
        found = store.search(("memories", state["user"]), query="what food does the user like?")
        return {"recalled": [item.value["text"] for item in found]}

    graph = (
        StateGraph(State)
        .add_node("remember", remember)
        .add_node("recall", recall)
        .add_edge(START, "remember")
        .add_edge("remember", "recall")
        .add_edge("recall", END)
        .compile(store=store)
    )
    graph.invoke({"user": "alice", "said": "I love spicy Thai food", "recalled": []})
    graph.invoke({"user": "bob", "said": "Bob only eats pasta at dinner", "recalled": []})
    out = graph.invoke({"user": "alice", "said": "My cat is called Miso", "recalled": []})
    assert out["recalled"][0] == "I love spicy Thai food"
    assert "Bob only eats pasta at dinner" not in out["recalled"]

    rows = client.list(agent_id="assistant", user_id="alice").memories
    assert sorted(r.content for r in rows) == ["I love spicy Thai food", "My cat is called Miso"]
    assert {(r.type.value, r.source, r.user_id) for r in rows} == {("semantic", "agent", "alice")}
    assert all((r.metadata or {})["lg_ns"] == ["memories", "alice"] for r in rows)


# One scenario, run against LangGraph's InMemoryStore and ours; results must agree.
_SEED = [
    PutOp(("docs", "u1"), "a", {"kind": "note", "n": 1, "text": "apples are red"}),
    PutOp(("docs", "u1"), "b", {"kind": "todo", "n": 5, "text": "buy bread", "tags": ["x"]}),
    PutOp(("docs", "u2"), "c", {"kind": "note", "n": 9, "meta": {"lang": "en"}, "text": "hi"}),
    PutOp(("cache", "u1", "tmp"), "d", {"kind": "note", "n": 3, "text": "temp"}),
]
CASES: list[tuple[str, Op]] = [
    ("get existing", GetOp(("docs", "u1"), "a")),
    ("get missing key", GetOp(("docs", "u1"), "zzz")),
    ("get wrong namespace", GetOp(("docs", "u2"), "a")),
    ("prefix search", SearchOp(("docs",), None, 10, 0)),
    ("full-namespace search", SearchOp(("docs", "u1"), None, 10, 0)),
    ("empty prefix search", SearchOp((), None, 10, 0)),
    ("equality filter", SearchOp(("docs",), {"kind": "note"}, 10, 0)),
    ("$gt filter", SearchOp((), {"n": {"$gt": 2}}, 10, 0)),
    ("$lte and $ne", SearchOp((), {"n": {"$lte": 5, "$ne": 1}}, 10, 0)),
    ("nested filter", SearchOp((), {"meta": {"lang": "en"}}, 10, 0)),
    ("list filter", SearchOp((), {"tags": ["x"]}, 10, 0)),
    ("filter matching nothing", SearchOp((), {"kind": "nope"}, 10, 0)),
    ("list namespaces", ListNamespacesOp(None, None, 100, 0)),
    ("prefix condition", ListNamespacesOp((MatchCondition("prefix", ("docs",)),), None, 100, 0)),
    ("suffix wildcard", ListNamespacesOp((MatchCondition("suffix", ("*", "tmp")),), None, 100, 0)),
    ("max depth", ListNamespacesOp(None, 1, 100, 0)),
    ("limit and offset", ListNamespacesOp(None, None, 1, 1)),
]


def _norm(result: Any) -> Any:
    if result is None:
        return None
    if isinstance(result, list) and result and isinstance(result[0], tuple):
        return result
    if isinstance(result, list):  # search results: order is unspecified without a query
        return sorted((i.namespace, i.key, repr(i.value)) for i in result)
    return (result.namespace, result.key, result.value)


@pytest.fixture
def both(client: SyncMemory[Any]) -> tuple[BaseStore, BaseStore]:
    ours = MemorywireStore(client, agent_id="conf", user_segment=1)
    theirs = LangGraphMemoryStore()
    for store in (ours, theirs):
        store.batch(_SEED)
    return ours, theirs


@pytest.mark.parametrize(("name", "op"), CASES, ids=[c[0] for c in CASES])
def test_store_agrees_with_langgraphs_own(
    both: tuple[BaseStore, BaseStore], name: str, op: Op
) -> None:
    ours, theirs = both
    assert _norm(ours.batch([op])[0]) == _norm(theirs.batch([op])[0]), name


def test_batch_put_update_delete_and_pagination(both: tuple[BaseStore, BaseStore]) -> None:
    for store in both:
        store.batch(
            [
                PutOp(("docs", "u1"), "a", {"kind": "note", "n": 2, "text": "apples are green"}),
                PutOp(("docs", "u1"), "b", None),
            ]
        )
    ours, theirs = both
    for op in [GetOp(("docs", "u1"), "a"), GetOp(("docs", "u1"), "b"), SearchOp((), None, 10, 0)]:
        assert _norm(ours.batch([op])[0]) == _norm(theirs.batch([op])[0])
    item = ours.get(("docs", "u1"), "a")
    assert item is not None and item.updated_at >= item.created_at
    pages = [ours.search((), limit=2, offset=o) for o in (0, 2, 4)]
    keys = [i.key for page in pages for i in page]
    assert sorted(keys) == ["a", "c", "d"] and len(pages[0]) == 2


def test_updates_keep_one_memory_and_scope_users(client: SyncMemory[Any]) -> None:
    store = MemorywireStore(client, agent_id="s", user_segment=1)
    store.put(("prefs", "alice"), "seat", {"text": "window"})
    store.put(("prefs", "alice"), "seat", {"text": "aisle"})
    rows = client.list(agent_id="s").memories
    assert [(r.content, r.user_id) for r in rows] == [("aisle", "alice")]
    client.erase(agent_id="s", user_id="alice")
    assert store.get(("prefs", "alice"), "seat") is None


def test_ttl_expires_items_and_refresh_on_read_is_refused(client: SyncMemory[Any]) -> None:
    store = MemorywireStore(client, agent_id="t")
    store.put(("tmp",), "short", {"text": "soon gone"}, ttl=0.002)  # minutes: 120 ms
    store.put(("tmp",), "long", {"text": "stays"}, ttl=60)
    with pytest.raises(NotImplementedError, match="refresh_ttl"):
        store.get(("tmp",), "long", refresh_ttl=True)
    rec = client.list(agent_id="t").memories
    assert all(r.expires_at is not None for r in rec)
    time.sleep(0.3)
    assert store.get(("tmp",), "short") is None
    assert [i.key for i in store.search(("tmp",))] == ["long"]


def test_namespaces_are_validated_like_langgraph(client: SyncMemory[Any]) -> None:
    store = MemorywireStore(client, agent_id="v")
    for bad in [(), ("a.b",), ("",), ("langgraph", "x")]:
        with pytest.raises(InvalidNamespaceError):
            store.batch([PutOp(bad, "k", {"x": 1})])


def test_a_gated_delete_raises_pending_approval(make_client: MakeClient) -> None:
    client = make_client(gate=("forget",))
    store = MemorywireStore(client, agent_id="g")
    store.put(("n",), "k", {"text": "keep me"})
    with pytest.raises(PendingApproval, match="approval"):
        store.delete(("n",), "k")
    item = store.get(("n",), "k")
    assert item is not None and item.value == {"text": "keep me"}


@pytest.mark.anyio
async def test_async_variants(client: SyncMemory[Any]) -> None:
    store = MemorywireStore(client, agent_id="as")
    await store.aput(("ns", "x"), "k", {"text": "async memories work"})
    got = await store.aget(("ns", "x"), "k")
    assert got is not None and got.value == {"text": "async memories work"}
    found = await store.asearch(("ns",), query="async memories")
    assert [i.key for i in found] == ["k"] and found[0].score is not None
    assert await store.alist_namespaces() == [("ns", "x")]
    await store.adelete(("ns", "x"), "k")
    assert await store.aget(("ns", "x"), "k") is None
