"""Importing memories plain mem0 wrote (``Memory.add`` with ``infer=False``; no memorywire
fields), from the configuration file a mem0 application uses: real mem0, local Qdrant on
disk, its SQLite history, our hashing embedder standing in for the model."""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from memorywire.embed.hashing import HashingEmbedder
from memorywire.errors import InvalidRequest
from memorywire.portability.foreign import import_foreign, open_foreign
from memorywire.portability.moves import rows_of
from memorywire.store.sqlite import SqliteStore
from memorywire.wire.models import MemoryType, RecallRequest, RememberRequest

if importlib.util.find_spec("mem0") is None:
    pytest.skip("needs: pip install 'memorywire[mem0]'", allow_module_level=True)

from memorywire.store.mem0 import Mem0Store
from memorywire.store.mem0.mapping import EmbedderForMem0, import_mem0

pytestmark = pytest.mark.anyio
EMB = HashingEmbedder()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _config(tmp: Path, collection: str = "notes") -> dict[str, Any]:
    return {"vector_store": {"provider": "qdrant", "config": {
                "collection_name": collection, "path": str(tmp / "qdrant"),
                "embedding_model_dims": EMB.dim, "on_disk": True}},
            "history_db_path": str(tmp / "history.db")}


def _native(config: dict[str, Any]) -> Any:
    """A mem0 ``Memory`` as an application builds it (no memorywire in between)."""
    unused = {"api_key": "unused", "openai_base_url": "http://127.0.0.1:9/v1"}
    memory = import_mem0().Memory.from_config({
        **config, "llm": {"provider": "openai", "config": unused},
        "embedder": {"provider": "openai", "config": {**unused, "embedding_dims": EMB.dim}}})
    memory.embedding_model = EmbedderForMem0(EMB)
    return memory


@pytest.fixture
def written(tmp_path: Path) -> Iterator[tuple[Path, dict[str, Any]]]:
    config = _config(tmp_path)
    memory = _native(config)
    expires = (date.today() + timedelta(days=30)).isoformat()
    ids = {
        "peanuts": memory.add("Alice is allergic to peanuts", user_id="alice",
                              agent_id="travel-bot", metadata={"topic": "health"},
                              infer=False)["results"][0]["id"],
        "lisbon": memory.add([{"role": "user", "content": "I live in Lisbon"}],
                             user_id="alice", run_id="session-1",
                             metadata={"expiration_date": expires},
                             infer=False)["results"][0]["id"],
        "gone": memory.add("Temporary note", agent_id="travel-bot",
                           infer=False)["results"][0]["id"],
    }
    memory.update(ids["peanuts"], "Alice is allergic to peanuts and cashews")
    memory.delete(ids["gone"])
    points, _ = memory.vector_store.client.scroll(memory.vector_store.collection_name,
                                                  limit=100, with_payload=True)
    payloads = {str(p.id): p.payload for p in points}
    memory.vector_store.client.close()  # a local Qdrant folder is one process's at a time
    memory.db.close()
    path = tmp_path / "mem0.json"
    path.write_text(json.dumps(config))
    yield path, {"ids": ids, "payloads": payloads, "expires": expires}


def _ms(iso: str) -> int:
    return int(datetime.fromisoformat(iso).timestamp() * 1000)


async def test_native_memories_map_to_records_and_the_report_names_the_losses(
        written: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    path, facts = written
    ids, payloads = facts["ids"], facts["payloads"]
    target = SqliteStore(tmp_path / "t.db", embedder=EMB)
    try:
        plan, counts = await import_foreign(target, open_foreign("mem0", str(path), "assistant"),
                                            allow_loss={"revisions", "deleted"})
        rows = {r.id: r async for r in rows_of(target)}
        hits = await target.recall(RecallRequest(
            agent_id="travel-bot", query="Alice is allergic to peanuts and cashews"))
    finally:
        await target.aclose()
    assert counts.inserted == 2 and set(rows) == {ids["peanuts"], ids["lisbon"]}
    peanuts, lisbon = rows[ids["peanuts"]], rows[ids["lisbon"]]
    p = payloads[ids["peanuts"]]
    assert (peanuts.agent_id, peanuts.user_id, peanuts.type) == ("travel-bot", "alice",
                                                                 MemoryType.SEMANTIC)
    assert peanuts.stored == "Alice is allergic to peanuts and cashews"
    assert peanuts.created_at == _ms(p["created_at"])
    assert peanuts.updated_at == _ms(p["updated_at"]) > peanuts.created_at
    assert peanuts.metadata == {"topic": "health",
                                "mem0": {"hash": p["hash"], "role": "user"}}
    # No mem0 agent_id: the agent given; run_id and role carried; the date an expiry.
    assert (lisbon.agent_id, lisbon.user_id, lisbon.updated_at) == ("assistant", "alice", None)
    assert lisbon.metadata["mem0"]["run_id"] == "session-1"
    day = date.fromisoformat(facts["expires"]) + timedelta(days=1)
    assert lisbon.expires_at == int(datetime(day.year, day.month, day.day,
                                             tzinfo=UTC).timestamp() * 1000)
    assert hits.results[0].id == ids["peanuts"]
    notes = {n.field: (n.fate, n.records) for n in plan.notes}
    assert notes["revisions"] == ("lost", 1) and notes["deleted"] == ("lost", 1)
    assert notes["mem0_fields"] == ("transformed", 2)
    assert notes["agent_assigned"] == ("transformed", 1)
    assert notes["expiration_date"] == ("transformed", 1)
    assert notes["text_lemmatized"][0] == "derived"


async def test_losses_are_refused_and_unscoped_memories_need_an_agent(
        written: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    path, _ = written
    target = SqliteStore(tmp_path / "t.db", embedder=EMB)
    try:
        with pytest.raises(InvalidRequest, match="1 mem0 memories have no agent_id"):
            await import_foreign(target, open_foreign("mem0", str(path)),
                                 allow_loss={"revisions", "deleted"})
        with pytest.raises(InvalidRequest, match="loses revisions, deleted"):
            await import_foreign(target, open_foreign("mem0", str(path), "assistant"))
        assert [r async for r in rows_of(target)] == []
        source = open_foreign("mem0", str(path), "assistant")
        await import_foreign(target, source, allow_loss={"revisions", "deleted"})
        _, again = await import_foreign(target, source, allow_loss={"revisions", "deleted"})
        assert (again.inserted, again.skipped) == (0, 2)
    finally:
        await target.aclose()


async def test_a_collection_memorywire_wrote_is_sent_to_migrate(tmp_path: Path) -> None:
    store = Mem0Store(embedder=EMB, path=str(tmp_path / "qdrant"), collection="mw")
    await store.remember(RememberRequest(agent_id="a", type=MemoryType.SEMANTIC, content="x"))
    await store.aclose()
    path = tmp_path / "mem0.json"
    path.write_text(json.dumps(_config(tmp_path, "mw")))
    with pytest.raises(InvalidRequest, match="memorywire migrate --from mem0://"):
        await open_foreign("mem0", str(path), "a").read()
    path.write_text("{not json")
    with pytest.raises(InvalidRequest, match="cannot read the mem0 configuration"):
        await open_foreign("mem0", str(path)).read()
