"""Portability pairs for a backend that runs only in its own suite (Letta, Cognee).

Each check moves the same sample (live, updated, forgotten, merged-away and recalled records
in two agents) between the backend and SQLite, or from the backend into a second, empty
instance of itself, and compares what arrives field by field.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from memorywire.core.clock import FakeClock
from memorywire.core.records import UpdateRequest
from memorywire.embed.hashing import HashingEmbedder
from memorywire.errors import CapabilityMissing, InvalidRequest
from memorywire.portability import export_dump, import_dump, migrate, verify_dump
from memorywire.store.sqlite import SqliteStore
from memorywire.testing.harness import StoreFactory
from memorywire.wire.models import (
    ForgetRequest,
    MemoryType,
    MergeRequest,
    RecallRequest,
    RememberRequest,
)

AGENTS = ("pa1", "pa2")
#: Fields Letta and Cognee do not keep (no recall tracking).
RECALL_FIELDS = {"recall_count", "last_recalled_at"}


async def sample(tmp: Path) -> SqliteStore:
    clock = FakeClock()
    store = SqliteStore(tmp / "sample.db", embedder=HashingEmbedder(), clock=clock)
    for i in range(6):
        clock.advance(1000)
        await store.remember(RememberRequest(agent_id="pa1", id=f"m{i}", type=MemoryType.SEMANTIC,
                                             content=f"fact number {i} about tea", user_id="u1",
                                             metadata={"i": i}, confidence=0.5 + i / 100,
                                             source="test"))
    clock.advance(1000)
    await store.remember(RememberRequest(agent_id="pa2", id="e1", type=MemoryType.EPISODIC,
                                         content="met Bob at the station",
                                         metadata={"links": ["m1"]}))
    clock.advance(1000)
    await store.forget(ForgetRequest(agent_id="pa1", ids=["m1"]))
    await store.merge(MergeRequest(agent_id="pa1", canonical="m2", duplicates=["m3"]))
    await store.update(UpdateRequest(agent_id="pa1", id="m4", metadata_patch={"x": 1}))
    await store.recall(RecallRequest(agent_id="pa1", query="fact number 5 about tea", k=1))
    return store


async def records(store: Any, agent_id: str) -> list[dict[str, Any]]:
    """The agent's dump records, every state, without the fields the backend does not keep."""
    out = io.BytesIO()
    await export_dump(store, out, url="x://", agent_id=agent_id, include_forgotten=True)
    lines = [json.loads(x) for x in out.getvalue().splitlines()[1:-1]]
    return [{k: v for k, v in line["record"].items() if k not in RECALL_FIELDS}
            for line in lines]


async def check_migrate_from_sqlite(make: StoreFactory, tmp: Path) -> None:
    """SQLite -> backend with ``migrate``: refused until the recall counters may go, then
    every record arrives and verifies."""
    source, target = await sample(tmp), make()
    try:
        with pytest.raises(InvalidRequest, match="recall_count"):
            await migrate(source, target, source_url="sqlite:///s", target_url="x://t",
                          checkpoint=tmp / "refused.json")
        result = await migrate(source, target, source_url="sqlite:///s", target_url="x://t",
                               checkpoint=tmp / "ck.json", allow_loss=set(RECALL_FIELDS))
        assert result.counts.inserted == 7 and result.verified == 7, result.to_json()
        assert not result.mismatches
        lost = {f.field: f.records for f in result.plan.fields if f.fate == "lost"}
        assert lost == {"recall_count": 1, "last_recalled_at": 1}
        for agent in AGENTS:
            assert await records(target, agent) == await records(source, agent)
        merged = {r["id"]: r for r in await records(target, "pa1")}
        assert merged["m3"]["merged_into"] == "m2" and merged["m1"]["deleted_at"] is not None
    finally:
        await source.aclose()
        await target.aclose()


async def check_dump_round_trips(make: StoreFactory, tmp: Path) -> None:
    """backend -> dump -> empty backend -> dump gives the same records; backend -> dump ->
    SQLite too; ``migrate`` from the backend, which cannot list its agents, is refused."""
    seed = await sample(tmp)
    first, second = make(), make()
    plain = SqliteStore(tmp / "plain.db", embedder=HashingEmbedder())
    try:
        await migrate(seed, first, source_url="sqlite:///s", target_url="x://t",
                      checkpoint=tmp / "seed.json", allow_loss=set(RECALL_FIELDS))
        for agent in AGENTS:
            path = tmp / f"{agent}.jsonl.gz"
            with open(path, "wb") as out:
                await export_dump(first, out, url="x://first", agent_id=agent,
                                  include_forgotten=True, gzip_it=True)
            assert verify_dump(str(path)) == len(await records(seed, agent))
            for target in (second, plain):
                plan, counts = await import_dump(target, str(path))
                assert plan.lost == [] and counts.inserted == verify_dump(str(path))
            expected = await records(first, agent)
            assert await records(second, agent) == expected
            assert await records(plain, agent) == expected
            assert expected == await records(seed, agent)
        with pytest.raises(CapabilityMissing):
            await migrate(first, plain, source_url="x://first", target_url="sqlite:///p",
                          checkpoint=tmp / "from.json")
    finally:
        for s in (seed, first, second, plain):
            await s.aclose()
