"""A forget (or cascade) a router child misses is kept in a durable outbox and delivered once
the child is back: on the router's next call, after a restart, and before a remember that
reuses the id. The child is a real store behind a switch that makes it unreachable."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from memorywire.core.clock import FakeClock
from memorywire.embed.hashing import HashingEmbedder
from memorywire.errors import BackendUnavailable
from memorywire.router import MemoryRouter
from memorywire.router.outbox import ForgetOutbox
from memorywire.store.base import ListQuery
from memorywire.store.memory import InMemoryStore
from memorywire.store.sqlite import SqliteStore
from memorywire.wire.models import ForgetRequest, Link, RecallRequest, RememberRequest

pytestmark = pytest.mark.anyio


class Switchable:
    """A real store that is unreachable while ``down`` (or silent while ``hang``)."""

    def __init__(self, inner: SqliteStore) -> None:
        self.inner, self.down, self.hang = inner, False, False

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.inner, name)
        if not callable(attr) or name in ("capabilities", "name"):
            return attr

        async def call(*a: Any, **kw: Any) -> Any:
            if self.hang:
                await anyio.sleep(30)
            if self.down:
                raise BackendUnavailable("injected outage")
            return await attr(*a, **kw)

        return call

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def capabilities(self) -> Any:
        return self.inner.capabilities


def _rem(id_: str, text: str, parent: str | None = None) -> RememberRequest:
    return RememberRequest(agent_id="ag", type="semantic", content=text, id=id_,
                           links=[Link(id=parent, type="derived_from")] if parent else None)


async def _ids(store: Any) -> list[str]:
    return sorted(r.id for r in await store.list(ListQuery(agent_id="ag",
                                                           include_archived=True)))


def _rig(tmp_path: Path, clock: FakeClock) -> tuple[InMemoryStore, Switchable, MemoryRouter]:
    a = InMemoryStore(HashingEmbedder(32), name="a")
    b = Switchable(SqliteStore(tmp_path / "b.db", embedder=HashingEmbedder(32), name="b"))
    router = MemoryRouter([a, b], timeout=0.3,  # type: ignore[list-item]
                          outbox=ForgetOutbox(tmp_path / "outbox.db", clock=clock))
    return a, b, router


async def test_a_missed_cascade_is_delivered_when_the_child_is_back_even_after_restart(
    tmp_path: Path,
) -> None:
    clock = FakeClock(1_000_000)
    a, b, router = _rig(tmp_path, clock)
    for req in (_rem("seed", "vault phrase marmalade"), _rem("sum", "summary: marmalade", "seed"),
                _rem("other", "apple trees")):
        await router.remember(req)
    b.down = True
    out = await router.forget(ForgetRequest(agent_id="ag", ids=["seed"], hard_delete=True,
                                            cascade=True))
    assert sorted(out.forgotten_ids) == ["seed", "sum"]
    assert [c.store for c in out.stores if c.error] == ["b"]
    assert router.outbox is not None
    [entry] = router.outbox.entries("b")
    assert sorted(entry.request.ids or []) == ["seed", "sum"]  # the cascade, expanded
    router.outbox.close()

    # A restart: a new router over the same files; the child is reachable again.
    b.down = False
    router2 = MemoryRouter([a, b], timeout=0.3,  # type: ignore[list-item]
                           outbox=ForgetOutbox(tmp_path / "outbox.db", clock=clock))
    assert await _ids(b.inner) == ["other", "seed", "sum"]  # still owed
    clock.advance(1_000)
    hits = await router2.recall(RecallRequest(agent_id="ag", query="marmalade", k=5))
    assert not [h for h in hits.results if "marmalade" in str(h.content)]
    assert await _ids(b.inner) == ["other"]
    assert router2.outbox is not None and router2.outbox.entries() == []
    assert not any(b"marmalade" in f.read_bytes() for f in tmp_path.glob("b.db*"))
    await router2.aclose()


async def test_a_child_still_down_waits_longer_each_time_and_keeps_the_entry(
    tmp_path: Path,
) -> None:
    clock = FakeClock(1_000_000)
    _, b, router = _rig(tmp_path, clock)
    await router.remember(_rem("x", "secret x"))
    b.hang = True  # silent, not refusing: the deadline decides
    await router.forget(ForgetRequest(agent_id="ag", ids=["x"]))
    b.hang, b.down = False, True
    assert router.outbox is not None
    clock.advance(1_000)
    assert await router.deliver_outbox() == 0
    [e] = router.outbox.entries()
    assert e.attempts == 1 and e.next_at == clock.now_ms() + 2_000
    assert "injected outage" in (e.last_error or "")
    assert not router.outbox.due()
    b.down = False
    clock.advance(2_000)
    assert await router.deliver_outbox() == 1
    assert await b.inner.get("ag", "x") is None
    await router.aclose()


async def test_a_remember_reusing_a_pending_id_first_delivers_the_older_forget(
    tmp_path: Path,
) -> None:
    clock = FakeClock(1_000_000)
    _, b, router = _rig(tmp_path, clock)
    await router.remember(_rem("x", "old text"))
    b.down = True
    await router.forget(ForgetRequest(agent_id="ag", ids=["x"], hard_delete=True))
    b.down = False  # back, but the entry is not due yet
    await router.remember(_rem("x", "new text"))
    got = await b.inner.get("ag", "x")
    assert got is not None and got.content == "new text"
    assert router.outbox is not None and router.outbox.entries() == []
    clock.advance(600_000)
    await router.deliver_outbox(force=True)
    assert (await b.inner.get("ag", "x")) is not None  # the old forget cannot reach it now
    await router.aclose()
