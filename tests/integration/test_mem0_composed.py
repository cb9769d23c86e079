"""Mem0Store composed with the rest of memorywire: governance over it, a router across it and
SqliteStore, and the promise that using it never switches mem0's telemetry on."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import pytest

from memorywire.core.clock import FakeClock
from memorywire.embed.hashing import HashingEmbedder
from memorywire.governance import GovernedStore, acting_as
from memorywire.router import MemoryRouter
from memorywire.store.base import ListQuery, MemoryStore
from memorywire.store.mem0 import Mem0Store
from memorywire.store.sqlite import SqliteStore
from memorywire.testing import postgres as _pg
from memorywire.wire.models import ForgetRequest, RecallRequest, RememberRequest

if importlib.util.find_spec("mem0") is None:
    pytest.skip("the mem0 store needs: pip install 'memorywire[mem0]'", allow_module_level=True)

pytestmark = pytest.mark.anyio
A = "agent-1"
pg_server = _pg.pg_server
pg_dsn = _pg.pg_dsn


def mem0_store(clock: FakeClock) -> Mem0Store:
    return Mem0Store(embedder=HashingEmbedder(), clock=clock, relevance_floor=0.2,
                     lexical_floor=0.2)


@pytest.fixture
async def gov(tmp_path: Path) -> AsyncIterator[GovernedStore]:
    clock = FakeClock()
    g = GovernedStore(mem0_store(clock), tmp_path / "gov.db", clock=clock)
    yield g
    await g.aclose()


async def test_gated_remember_over_mem0_is_invisible_until_approved(gov: GovernedStore) -> None:
    with acting_as("writer"):
        staged = await gov.remember(RememberRequest(
            agent_id=A, type="semantic", content="Alice prefers green tea",
            approval_required=True))
    assert staged.pending_approval and staged.stores == []
    inner = gov.inner
    assert isinstance(inner, Mem0Store)
    assert inner.memory.get_all(filters={"agent_id": "*"}, top_k=100)["results"] == []
    hits = await gov.recall(RecallRequest(agent_id=A, query="Alice green tea"))
    assert hits.results == [] and await gov.get(A, staged.id) is None

    review = await gov.get_review(staged.id)
    await gov.approve(staged.id, "reviewer", review["content_hash"], "ok")
    hits = await gov.recall(RecallRequest(agent_id=A, query="Alice green tea"))
    assert [h.id for h in hits.results] == [staged.id]
    assert hits.results[0].source_store == "mem0"
    rec = await gov.get(A, staged.id)
    assert rec is not None and rec.content == "Alice prefers green tea"
    [item] = inner.memory.get_all(filters={"agent_id": "*"}, top_k=100)["results"]
    assert item["metadata"]["mw_id"] == staged.id


async def _route(children: list[MemoryStore], clock: FakeClock) -> None:
    """One remember lands in every child, one recall fuses them, one forget clears all."""
    router = MemoryRouter(children, timeout=30.0)
    names = sorted(c.name for c in children)
    try:
        ids = []
        for text in ("the cat is called Miso", "the cat hates the vacuum", "rent is due Friday"):
            out = await router.remember(RememberRequest(agent_id=A, type="semantic",
                                                        content=text))
            assert sorted(out.stores) == names
            ids.append(out.id)
            clock.advance(1)
        for child in children:
            assert [r.id for r in await child.list(ListQuery(agent_id=A))] == ids

        hits = await router.recall(RecallRequest(agent_id=A, query="the cat Miso", k=10))
        got = [h.id for h in hits.results]
        assert sorted(hits.stores_queried) == names
        assert len(got) == len(set(got)) and got[0] == ids[0] and ids[2] not in got

        gone = await router.forget(ForgetRequest(agent_id=A, ids=[ids[0]], hard_delete=True))
        assert gone.forgotten_ids == [ids[0]]
        assert {s.store: s.count for s in gone.stores} == dict.fromkeys(names, 1)
        for child in children:
            assert await child.get(A, ids[0]) is None
        assert ids[0] not in {h.id for h in (await router.recall(
            RecallRequest(agent_id=A, query="the cat Miso", k=10))).results}
    finally:
        await router.aclose()


async def test_router_across_sqlite_and_mem0(tmp_path: Path) -> None:
    clock = FakeClock()
    # Per-row floors (tail_gap=None): the scenario checks that an unrelated row stays out,
    # which the default list gate would let in as the tail of a relevant list.
    sqlite = SqliteStore(tmp_path / "m.db", embedder=HashingEmbedder(), clock=clock,
                         recall=replace(SqliteStore.DEFAULT_RECALL, relevance_floor=0.2,
                                        lexical_floor=0.2, tail_gap=None))
    await _route([sqlite, mem0_store(clock)], clock)


@pytest.mark.postgres
async def test_router_across_sqlite_postgres_and_mem0(tmp_path: Path, pg_dsn: str) -> None:
    from memorywire.store.postgres import PostgresStore

    clock = FakeClock()
    sqlite = SqliteStore(tmp_path / "m.db", embedder=HashingEmbedder(), clock=clock,
                         recall=replace(SqliteStore.DEFAULT_RECALL, relevance_floor=0.2,
                                        lexical_floor=0.2, tail_gap=None))  # per-row
    pg = PostgresStore(pg_dsn, HashingEmbedder(), clock,
                       recall=replace(PostgresStore.DEFAULT_RECALL, relevance_floor=0.2,
                                      lexical_floor=0.2))
    await _route([sqlite, pg, mem0_store(clock)], clock)


def test_using_the_store_leaves_telemetry_off_and_exits_promptly(tmp_path: Path) -> None:
    """mem0's telemetry reaches for the network and holds exit for seconds when it is on."""
    script = (
        "import anyio, os, threading\n"
        "from memorywire.embed.hashing import HashingEmbedder\n"
        "from memorywire.store.mem0 import Mem0Store\n"
        "from memorywire.wire.models import RememberRequest\n"
        "async def main():\n"
        "    s = Mem0Store(embedder=HashingEmbedder())\n"
        "    await s.remember(RememberRequest(agent_id='a', type='semantic', content='x'))\n"
        "    await s.aclose()\n"
        "anyio.run(main)\n"
        "import mem0.memory.telemetry as t\n"
        "assert t.MEM0_TELEMETRY is False, t.MEM0_TELEMETRY\n"
        "print(os.environ['MEM0_DIR'])\n"
    )
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert time.monotonic() - started < 20
    assert "posthog" not in done.stderr.lower()
    assert not (tmp_path / ".mem0").exists()
