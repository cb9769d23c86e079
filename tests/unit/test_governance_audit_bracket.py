"""The one audit bracket: ``intent`` durable before the write, then ``done`` or ``failed``.

Every governed write (remember, forget, merge, expire, update) runs its inner call through
:class:`memorywire.governance.bracket.AuditBracket`; these tests hold each path to the same
trail (success and refusal) and the bracket itself to its hooks: a guard that refuses writes
nothing, a settle job that fails leaves no ``done``, a store that skips a bracket it declared
is refused.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import apsw
import pytest

from memorywire.core.records import UpdateRequest
from memorywire.embed.hashing import HashingEmbedder
from memorywire.errors import BackendUnavailable, MemorywireError, PendingApproval
from memorywire.governance import GovernedStore, acting_as
from memorywire.governance.audit import AuditLog
from memorywire.governance.bracket import AuditBracket, Outcome
from memorywire.governance.worker import GovWorker
from memorywire.store.memory import InMemoryStore
from memorywire.wire.models import (
    ExpirePolicy,
    ExpireRequest,
    ForgetRequest,
    MergeRequest,
    RememberRequest,
)

pytestmark = pytest.mark.anyio
A = "agent-1"


def _trail(db: Path, action: str) -> list[tuple[str, list[str], dict[str, Any]]]:
    """(phase, ids, details) of ``action``'s entries, as another connection reads them now."""
    conn = apsw.Connection(str(db))
    conn.set_busy_timeout(10_000)
    try:
        rows = conn.execute("SELECT memory_ids, details FROM audit_log WHERE action = ? "
                            "ORDER BY seq", (action,)).fetchall()
    finally:
        conn.close()
    out = []
    for ids, details in rows:
        det = json.loads(str(details))
        out.append((det.pop("phase"), json.loads(str(ids)), det))
    return out


@pytest.fixture
async def gov(tmp_path: Path) -> AsyncIterator[GovernedStore]:
    g = GovernedStore(InMemoryStore(embedder=HashingEmbedder()), tmp_path / "gov.db")
    with acting_as("writer"):
        for i in ("m1", "m2"):
            await g.remember(RememberRequest(agent_id=A, type="semantic", id=i,
                                             content=f"fact number {i}", confidence=0.2))
    yield g
    await g.aclose()


#: operation -> (the governed call, the ids its intent names, the ids its done names)
WRITES: dict[str, tuple[Callable[[GovernedStore], Awaitable[Any]], list[str], list[str]]] = {
    "remember": (lambda g: g.remember(RememberRequest(agent_id=A, type="semantic", id="m3",
                                                      content="a third fact")),
                 ["m3"], ["m3"]),
    "forget": (lambda g: g.forget(ForgetRequest(agent_id=A, ids=["m1"])), ["m1"], ["m1"]),
    "merge": (lambda g: g.merge(MergeRequest(agent_id=A, canonical="m1", duplicates=["m2"])),
              ["m1", "m2"], ["m1", "m2"]),
    "expire": (lambda g: g.expire(ExpireRequest(agent_id=A,
                                                policy=ExpirePolicy(confidence_below=0.5))),
               [], ["m1", "m2"]),
    "update": (lambda g: g.update(UpdateRequest(agent_id=A, id="m1", confidence=0.9)),
               ["m1"], ["m1"]),
}


@pytest.mark.parametrize("op", sorted(WRITES))
async def test_every_write_path_records_intent_then_done(
    gov: GovernedStore, tmp_path: Path, op: str,
) -> None:
    call, intent_ids, done_ids = WRITES[op]
    with acting_as("writer"):
        await call(gov)
    trail = _trail(tmp_path / "gov.db", op)[-2:]
    assert [(phase, ids) for phase, ids, _ in trail] == [("intent", intent_ids),
                                                         ("done", done_ids)]
    # done carries what intent said, and for some operations what the write found
    assert trail[0][2].items() <= trail[1][2].items()


@pytest.mark.parametrize("op", sorted(WRITES))
async def test_every_write_path_records_failed_when_the_store_refuses(
    gov: GovernedStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, op: str,
) -> None:
    async def refuse(*args: Any, **kwargs: Any) -> Any:
        raise BackendUnavailable("the store is down")

    monkeypatch.setattr(gov.inner, op, refuse)
    call, intent_ids, _ = WRITES[op]
    before = len(_trail(tmp_path / "gov.db", op))
    with acting_as("writer"), pytest.raises(BackendUnavailable):
        await call(gov)
    trail = _trail(tmp_path / "gov.db", op)[before:]
    assert [(phase, ids) for phase, ids, _ in trail] == [("intent", intent_ids),
                                                         ("failed", intent_ids)]
    assert trail[1][2] == {"error": "backend_unavailable"}


# --- the bracket on its own ----------------------------------------------------------------


@pytest.fixture
def parts(tmp_path: Path) -> Iterator[tuple[AuditLog, GovWorker]]:
    log = AuditLog.open(tmp_path / "gov.db")
    w = GovWorker(log)
    yield log, w
    w.close()
    log.close()


async def test_the_intent_is_durable_when_the_write_runs(
    parts: tuple[AuditLog, GovWorker], tmp_path: Path,
) -> None:
    log, w = parts
    seen: list[list[str]] = []

    async def write() -> int:
        seen.append([phase for phase, _, _ in _trail(tmp_path / "gov.db", "update")])
        return 7

    def done(n: int) -> Outcome:
        return ["a", "b"], {"n": n}

    b: AuditBracket[int] = AuditBracket(log, w, "update", A, ["a"], {"k": 1}, done=done)
    assert await b.run(write) == 7
    assert seen == [["intent"]]
    assert _trail(tmp_path / "gov.db", "update") == [("intent", ["a"], {"k": 1}),
                                                     ("done", ["a", "b"], {"n": 7})]
    assert b.recorded == ["a", "b"]


async def test_a_guard_that_refuses_writes_nothing_and_stops_the_write(
    parts: tuple[AuditLog, GovWorker], tmp_path: Path,
) -> None:
    log, w = parts
    wrote: list[bool] = []

    def guard() -> None:
        raise PendingApproval("m1 is awaiting approval")

    async def write() -> None:
        wrote.append(True)

    b: AuditBracket[None] = AuditBracket(log, w, "remember", A, ["m1"], {}, guard=guard)
    with pytest.raises(PendingApproval):
        await b.run(write)
    assert wrote == [] and _trail(tmp_path / "gov.db", "remember") == []


async def test_a_settle_job_that_fails_leaves_the_intent_alone(
    parts: tuple[AuditLog, GovWorker], tmp_path: Path,
) -> None:
    log, w = parts

    def settle(result: str) -> Callable[[], Outcome]:
        def job() -> Outcome:
            raise BackendUnavailable(f"cannot settle {result}")
        return job

    async def write() -> str:
        return "r1"

    b: AuditBracket[str] = AuditBracket(log, w, "forget", A, ["m1"], {}, settle=settle)
    with pytest.raises(BackendUnavailable, match="cannot settle r1"):
        await b.run(write)
    # the write happened and its done could not be written: an intent alone, as after a crash
    assert [p for p, _, _ in _trail(tmp_path / "gov.db", "forget")] == ["intent"]


async def test_done_and_settle_together_are_refused(parts: tuple[AuditLog, GovWorker]) -> None:
    log, w = parts
    with pytest.raises(ValueError, match="done or settle"):
        AuditBracket(log, w, "forget", A, [], {}, done=lambda r: ([], {}),
                     settle=lambda r: lambda: ([], {}))


async def test_a_store_that_declares_the_bracket_and_skips_it_is_refused(
    parts: tuple[AuditLog, GovWorker],
) -> None:
    log, w = parts

    async def write_without_it() -> str:
        return "written"

    b: AuditBracket[str] = AuditBracket(log, w, "remember", A, ["m1"], {})
    with pytest.raises(MemorywireError, match="'careless' wrote without its audit bracket"):
        await b.run_on_thread(write_without_it, "careless")


async def test_a_store_refusing_before_its_thread_runs_gets_intent_and_failed(
    parts: tuple[AuditLog, GovWorker], tmp_path: Path,
) -> None:
    log, w = parts

    async def refuse() -> str:
        raise BackendUnavailable("no thread for you")

    b: AuditBracket[str] = AuditBracket(log, w, "remember", A, ["m1"], {"k": 1})
    with pytest.raises(BackendUnavailable):
        await b.run_on_thread(refuse, "busy")
    assert _trail(tmp_path / "gov.db", "remember") == [
        ("intent", ["m1"], {"k": 1}), ("failed", ["m1"], {"error": "backend_unavailable"})]
