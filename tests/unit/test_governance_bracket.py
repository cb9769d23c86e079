"""A governed remember on SQLite runs its audit bracket on the store's writing thread.

One worker-thread call per governed remember (store.bracket) instead of three hops through
the event loop; what must not change is the audit: the ``intent`` durable before the
store writes, ``done`` durable before the answer, ``failed`` for a write the store refused,
nothing written while the id is staged, and the async path's entries for everything else.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import anyio
import apsw
import pytest

from memorywire.embed.hashing import HashingEmbedder
from memorywire.errors import BackendUnavailable, InvalidRequest, PendingApproval
from memorywire.governance import GovernedStore, acting_as
from memorywire.store.sqlite import SqliteStore, writes
from memorywire.wire.models import RememberRequest

pytestmark = pytest.mark.anyio
A = "agent-1"


def _phases(db: Path, memory_id: str) -> list[str]:
    """What another connection reads now: the remember entries' phases for ``memory_id``."""
    conn = apsw.Connection(str(db))
    conn.set_busy_timeout(10_000)
    try:
        rows = conn.execute(
            "SELECT details FROM audit_log WHERE action = 'remember' AND memory_ids LIKE ? "
            "ORDER BY seq", (f'%"{memory_id}"%',)).fetchall()
    finally:
        conn.close()
    return [json.loads(str(r[0])).get("phase") for r in rows]


@pytest.fixture
def seen_at_write(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[list[list[str]]]:
    """The phases durable at the moment SQLite writes each remember."""
    seen: list[list[str]] = []
    real = writes.remember_many

    def spy(db, reqs, given=None):  # type: ignore[no-untyped-def]
        seen.append(_phases(tmp_path / "gov.db", str(reqs[0].id)))
        return real(db, reqs, given)

    monkeypatch.setattr(writes, "remember_many", spy)
    yield seen


def _governed(tmp_path: Path, store: type[SqliteStore] = SqliteStore,
              embedder: HashingEmbedder | None = None) -> GovernedStore:
    return GovernedStore(store(tmp_path / "mem.db", embedder=embedder or HashingEmbedder()),
                         tmp_path / "gov.db")


async def _refused_phases(tmp_path: Path, g: GovernedStore, error: type[Exception]) -> list[str]:
    """Remembers ``m1``, which the store refuses with ``error``; the phases then durable."""
    with pytest.raises(error):
        await g.remember(RememberRequest(agent_id=A, type="semantic", id="m1",
                                         content="the office is in Bergen"))
    return _phases(tmp_path / "gov.db", "m1")


@pytest.mark.parametrize("conflicts", ["report", "off"])
async def test_intent_is_durable_before_the_write_and_done_before_the_answer(
    tmp_path: Path, seen_at_write: list[list[str]], conflicts: str,
) -> None:
    g = GovernedStore(SqliteStore(tmp_path / "mem.db", embedder=HashingEmbedder()),
                      tmp_path / "gov.db", policies={"conflicts": conflicts})
    with acting_as("writer"):
        resp = await g.remember(RememberRequest(agent_id=A, type="semantic", id="m1",
                                                content="the office is in Bergen"))
    assert seen_at_write == [["intent"]]
    assert _phases(tmp_path / "gov.db", "m1") == ["intent", "done"]
    assert resp.stores == ["sqlite"]
    entries = g.audit_entries(memory_id="m1")
    assert [e["actor"] for e in entries] == ["writer", "writer"]
    assert entries[1]["details"]["stores"] == ["sqlite"]
    assert g.verify()["ok"]
    await g.aclose()


async def test_a_staged_id_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    g = _governed(tmp_path)
    staged = await g.remember(RememberRequest(agent_id=A, type="semantic", id="m1",
                                              content="the office is in Bergen",
                                              approval_required=True))
    assert staged.pending_approval
    with pytest.raises(PendingApproval):
        await g.remember(RememberRequest(agent_id=A, type="semantic", id="m1",
                                         content="the office is in Oslo"))
    assert await g.inner.get(A, "m1") is None
    assert _phases(tmp_path / "gov.db", "m1") == []  # no intent, no failed
    await g.aclose()


class _BrokenModel(HashingEmbedder):
    def embed(self, texts):  # type: ignore[no-untyped-def]
        raise BackendUnavailable("the model is down")


async def test_a_failure_before_the_write_is_recorded_after_its_intent(tmp_path: Path) -> None:
    g = _governed(tmp_path, embedder=_BrokenModel())
    assert await _refused_phases(tmp_path, g, BackendUnavailable) == ["intent", "failed"]
    (failed,) = [e for e in g.audit_entries(memory_id="m1") if e["details"]["phase"] == "failed"]
    assert failed["details"]["error"] == "backend_unavailable"
    await g.aclose()


class _RefusesUpFront(SqliteStore):
    """Declares the bracket but refuses before its thread runs (a store-side check)."""

    async def remember(self, req: RememberRequest):  # type: ignore[no-untyped-def]
        raise InvalidRequest("refused before the write")


async def test_a_refusal_before_the_thread_is_recorded_as_the_async_path_does(
    tmp_path: Path,
) -> None:
    g = _governed(tmp_path, store=_RefusesUpFront)
    assert await _refused_phases(tmp_path, g, InvalidRequest) == ["intent", "failed"]
    await g.aclose()


async def test_supersedes_keeps_the_async_path_so_done_follows_the_closing(
    tmp_path: Path, seen_at_write: list[list[str]],
) -> None:
    g = _governed(tmp_path)
    await g.remember(RememberRequest(agent_id=A, type="semantic", id="old",
                                     content="the office is in Bergen"))
    await g.remember(RememberRequest(agent_id=A, type="semantic", id="new",
                                     content="the office is in Oslo", supersedes=["old"]))
    assert _phases(tmp_path / "gov.db", "new") == ["intent", "done"]
    old = await g.inner.get(A, "old")
    assert old is not None
    assert old.metadata is not None and "valid" in json.dumps(old.metadata)
    await g.aclose()


async def test_concurrent_bracketed_writes_are_each_intent_then_done(
    tmp_path: Path,
) -> None:
    g = _governed(tmp_path)

    async def one(i: int) -> None:
        await g.remember(RememberRequest(agent_id=A, type="semantic", id=f"m{i}",
                                         content=f"note number {i} about the office"))

    async with anyio.create_task_group() as tg:
        for i in range(40):
            tg.start_soon(one, i)
    for i in range(40):
        assert _phases(tmp_path / "gov.db", f"m{i}") == ["intent", "done"]
        assert await g.inner.get(A, f"m{i}") is not None
    assert g.verify()["ok"]
    await g.aclose()
