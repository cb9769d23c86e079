"""The expiry sweep: expired memories leave the SQLite files (after the grace period, with
receipts), unexpired ones stay, and a sweep killed with SIGKILL loses nothing unexpired."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from memorywire.core.clock import FakeClock
from memorywire.embed.hashing import HashingEmbedder
from memorywire.governance.audit import AuditLog
from memorywire.governance.purge import sweep_once
from memorywire.governance.receipts import dump_receipt, verify_receipt
from memorywire.store.base import ListQuery
from memorywire.store.memory import InMemoryStore
from memorywire.store.sqlite import SqliteStore
from memorywire.wire.models import MemoryType, RememberRequest

pytestmark = pytest.mark.anyio
HOUR = 3_600_000
T0 = 1_700_000_000_000


def _req(i: int, expires_at: int | None) -> RememberRequest:
    tag = "gone" if expires_at is not None else "kept"
    return RememberRequest(id=f"m{i:05d}", agent_id=f"agent-{i % 7}", type=MemoryType.SEMANTIC,
                           content=f"{tag}-marker-{i:05d} some text", expires_at=expires_at)


async def _fill(store: SqliteStore | InMemoryStore, n: int) -> None:
    for start in range(0, n, 200):
        await store.remember_many([_req(i, T0 + HOUR if i % 2 else None)
                                   for i in range(start, min(n, start + 200))])


async def test_grace_period_then_purge_with_receipts(tmp_path: Path) -> None:
    clock = FakeClock(T0)
    store = SqliteStore(tmp_path / "m.db", embedder=HashingEmbedder(32), clock=clock)
    audit = AuditLog.open(tmp_path / "gov.db")
    key = Ed25519PrivateKey.generate()
    try:
        await _fill(store, 40)
        clock.advance(2 * HOUR)  # expired an hour ago: hidden, but inside a 2 h grace
        assert await sweep_once(store, key, grace_ms=2 * HOUR, clock=clock) == []
        assert any(b"gone-marker-00001" in f.read_bytes() for f in tmp_path.glob("m.db*"))
        clock.advance(2 * HOUR)
        receipts = await sweep_once(store, key, grace_ms=2 * HOUR, clock=clock, audit=audit,
                                    batch=7)
        assert sum(len(ids) for r in receipts for ids in r["erased"].values()) == 20
        assert all(verify_receipt(dump_receipt(r))[0] for r in receipts)
        left = await store.list(ListQuery(agent_id=None, limit=1000))
        assert sorted(r.id for r in left) == [f"m{i:05d}" for i in range(0, 40, 2)]
    finally:
        await store.aclose()
    assert len([e for e in audit.entries() if e.action == "receipt"]) == len(receipts)
    audit.close()
    for f in tmp_path.glob("m.db*"):
        assert b"gone-marker" not in f.read_bytes(), f"{f.name} still holds expired content"


async def test_in_memory_store_purges_too() -> None:
    clock = FakeClock(T0)
    store = InMemoryStore(embedder=HashingEmbedder(32), clock=clock)
    await _fill(store, 10)
    clock.advance(2 * HOUR)
    receipts = await sweep_once(store, Ed25519PrivateKey.generate(), grace_ms=0, clock=clock)
    assert sorted(i for r in receipts for ids in r["erased"].values() for i in ids) == [
        f"m{i:05d}" for i in range(1, 10, 2)]


_SWEEP = """
import sys, anyio
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from memorywire.embed.hashing import HashingEmbedder
from memorywire.governance.purge import sweep_once
from memorywire.store.sqlite import SqliteStore

async def main():
    store = SqliteStore(sys.argv[1], embedder=HashingEmbedder(32))
    print("ready", flush=True)
    while True:  # a long sweep: many one-row batches, so the kill lands mid-way
        await sweep_once(store, Ed25519PrivateKey.generate(), grace_ms=0, batch=1)

anyio.run(main)
"""


def test_sigkill_mid_sweep_loses_nothing_unexpired(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    n = 600

    async def fill() -> None:
        store = SqliteStore(db, embedder=HashingEmbedder(32))
        try:
            await _fill(store, n)
        finally:
            await store.aclose()

    anyio.run(fill)
    # T0 + 1 h is long past in real time, so every odd memory is expired now.
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen([sys.executable, "-c", _SWEEP, str(db)], stdout=subprocess.PIPE,
                            env=env)
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == b"ready"
    time.sleep(0.3)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    proc.stdout.close()

    async def check() -> tuple[list[str], int]:
        store = SqliteStore(db, embedder=HashingEmbedder(32))
        try:
            kept = sorted(r.id for r in await store.list(ListQuery(agent_id=None, limit=n)))
            receipts = await sweep_once(store, Ed25519PrivateKey.generate(), grace_ms=0)
            return kept, sum(len(v) for r in receipts for v in r["erased"].values())
        finally:
            await store.aclose()

    kept, finished = anyio.run(check)
    assert kept == [f"m{i:05d}" for i in range(0, n, 2)]
    assert finished < n // 2, "the kill landed after the sweep had finished; nothing was tested"
    for f in tmp_path.glob("m.db*"):
        assert b"gone-marker" not in f.read_bytes(), f"{f.name} still holds expired content"
