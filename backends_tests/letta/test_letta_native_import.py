"""Importing an agent's archival memory that Letta itself wrote (``POST
/v1/agents/{id}/archival-memory``, as a Letta application does), from the live server
``make test-letta`` starts."""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from memorywire.embed.hashing import HashingEmbedder
from memorywire.errors import InvalidRequest
from memorywire.portability.foreign import import_foreign, open_foreign
from memorywire.portability.letta_native import LettaNativeSource
from memorywire.portability.moves import rows_of
from memorywire.store.sqlite import SqliteStore

pytestmark = pytest.mark.anyio


@pytest.fixture
async def native_agent() -> AsyncIterator[tuple[str, str, dict[str, Any]]]:
    """A Letta agent made over REST with three archival passages, one then deleted."""
    url = os.environ["MEMORYWIRE_LETTA_URL"]
    embed = os.environ["MEMORYWIRE_LETTA_EMBED_URL"]
    async with httpx.AsyncClient(base_url=url, timeout=120) as http:
        made = await http.post("/v1/agents/", json={
            "name": f"native-{uuid.uuid4().hex[:8]}", "include_base_tools": False,
            "memory_blocks": [],
            "llm_config": {"model": "gpt-4o-mini", "model_endpoint_type": "openai",
                           "model_endpoint": "http://127.0.0.1:9/v1", "context_window": 8192},
            "embedding_config": {"embedding_endpoint_type": "openai",
                                 "embedding_endpoint": embed,
                                 "embedding_model": "all-MiniLM-L6-v2", "embedding_dim": 384,
                                 "embedding_chunk_size": 100_000}})
        assert made.status_code == 200, made.text
        agent = made.json()["id"]
        written: dict[str, Any] = {}
        for text, tags, when in [
                ("The user is allergic to peanuts.", ["health"], "2024-05-01T10:00:00+00:00"),
                ("Booked a window seat to Lisbon.", ["travel", "trip"], None),
                ("A note the user asked to delete.", None, None)]:
            body: dict[str, Any] = {"text": text}
            if tags:
                body["tags"] = tags
            if when:
                body["created_at"] = when
            got = await http.post(f"/v1/agents/{agent}/archival-memory", json=body)
            assert got.status_code == 200, got.text
            written[text] = got.json()[0]
        gone = written.pop("A note the user asked to delete.")["id"]
        assert (await http.delete(f"/v1/agents/{agent}/archival-memory/{gone}")).status_code \
            < 300
        yield url, agent, written
        await http.delete(f"/v1/agents/{agent}")


async def test_archival_passages_become_records(
        native_agent: tuple[str, str, dict[str, Any]], tmp_path: Path) -> None:
    url, agent, written = native_agent
    target = SqliteStore(tmp_path / "t.db", embedder=HashingEmbedder())
    try:
        # A page of one, so reading crosses pages exactly as a big archive would.
        source = LettaNativeSource(url, agent=agent, page=1)
        plan, counts = await import_foreign(target, source)
        rows = {r.id: r async for r in rows_of(target)}
        _, again = await import_foreign(target, open_foreign("letta", url, agent))
    finally:
        await target.aclose()
    assert counts.inserted == 2 and (again.inserted, again.skipped) == (0, 2)
    assert {rows[p["id"]].stored for p in written.values()} == set(written)
    peanuts = rows[written["The user is allergic to peanuts."]["id"]]
    assert peanuts.agent_id == agent and peanuts.user_id is None
    assert peanuts.created_at == int(datetime.fromisoformat(
        "2024-05-01T10:00:00+00:00").timestamp() * 1000)
    assert peanuts.metadata["letta"]["tags"] == ["health"]
    assert peanuts.metadata["letta"]["archive_id"] == \
        written["The user is allergic to peanuts."]["archive_id"]
    lisbon = rows[written["Booked a window seat to Lisbon."]["id"]]
    assert sorted(lisbon.metadata["letta"]["tags"]) == ["travel", "trip"]
    notes = {n.field: (n.fate, n.records) for n in plan.notes}
    assert notes["tags"] == ("transformed", 2) and plan.lost == []


async def test_an_agent_is_required_and_must_exist() -> None:
    url = os.environ["MEMORYWIRE_LETTA_URL"]
    with pytest.raises(InvalidRequest, match="needs --agent"):
        open_foreign("letta", url)
    with pytest.raises(InvalidRequest, match="has no agent"):
        await open_foreign("letta", url, f"agent-{uuid.uuid4()}").read()
