"""kill -9 during a consolidation tick never duplicates or loses a memory.

A child process runs ticks on a SQLite store and is SIGKILLed at a random moment of its first
tick; a recovery tick then finishes the job and the result must equal an uninterrupted run.
Runs: ``MEMORYWIRE_CRASH_RUNS`` (default 10, which keeps this file under ~20 s on a busy
two-core machine; the issue's 50 is ``MEMORYWIRE_CRASH_RUNS=50``).
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio

from memorywire.consolidation import Consolidator, decide, default_scorer
from memorywire.core.clock import DAY_MS, FakeClock
from memorywire.embed.hashing import HashingEmbedder
from memorywire.store.base import ListQuery, MemoryStore
from memorywire.wire.models import MemoryType, RememberRequest

RUNS = int(os.environ.get("MEMORYWIRE_CRASH_RUNS", "10"))
ITEMS = 60
START = 1_000 * DAY_MS
NOW = START + 6 * DAY_MS
TTL = 3 * DAY_MS

CHILD = """
import sys, anyio
from memorywire.consolidation import Consolidator
from memorywire.core.clock import FakeClock
from memorywire.embed.hashing import HashingEmbedder
from memorywire.store.sqlite import SqliteStore

async def main() -> None:
    clock = FakeClock(int(sys.argv[2]))
    store = SqliteStore.from_url(sys.argv[1], embedder=HashingEmbedder(), clock=clock)
    c = Consolidator(store, clock=clock, stm_ttl_ms=int(sys.argv[3]))
    print("ready", flush=True)
    while True:
        await c.tick()
        print("tick", flush=True)

anyio.run(main)
"""


def open_store(path: Path, clock: FakeClock) -> MemoryStore:
    from memorywire.store.sqlite import SqliteStore

    return SqliteStore.from_url(  # type: ignore[no-any-return]
        f"sqlite:///{path}", embedder=HashingEmbedder(), clock=clock
    )


async def populate(path: Path) -> None:
    clock = FakeClock(START)
    store = open_store(path, clock)
    try:
        for i in range(ITEMS):
            meta: dict[str, Any] = {"n": i}
            if i % 3 == 0:
                meta["importance"] = 1.0
            await store.remember(
                RememberRequest(
                    agent_id=f"agent-{i % 2}",
                    user_id="u" if i % 5 == 0 else None,
                    type=MemoryType.SEMANTIC,
                    content=f"memory number {i}",
                    metadata=meta,
                    source="web_page" if i % 4 == 0 else "user",
                    confidence=0.5 + (i % 5) / 10,
                )
            )
            clock.advance(DAY_MS // 10)  # ages from 6 days down to 0
    finally:
        await store.aclose()


async def snapshot(path: Path) -> dict[str, dict[str, Any]]:
    store = open_store(path, FakeClock(NOW))
    try:
        rows = await store.list(ListQuery(agent_id=None, limit=10_000))
        assert len(rows) == len({r.id for r in rows}), "duplicate ids"
        return {r.id: r.model_dump(exclude={"updated_at"}) for r in rows}
    finally:
        await store.aclose()


async def recover(path: Path) -> None:
    clock = FakeClock(NOW)
    store = open_store(path, clock)
    try:
        await Consolidator(store, clock=clock, stm_ttl_ms=TTL).tick()
    finally:
        await store.aclose()


def db_files(path: Path) -> list[Path]:
    return [p for p in path.parent.iterdir() if p.name.startswith(path.name)]


def spawn(db: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", CHILD, f"sqlite:///{db}", str(NOW), str(TTL)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        encoding="utf-8",
    )


def reap(child: subprocess.Popen[str]) -> None:
    if child.poll() is None:
        child.kill()
        child.wait()
    for stream in (child.stdout, child.stderr):
        if stream is not None:
            stream.close()


def child_tick_seconds(db: Path) -> float:
    child = spawn(db)
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "ready"
        started = time.perf_counter()
        assert child.stdout.readline().strip() == "tick"
        return time.perf_counter() - started
    finally:
        reap(child)


def test_kill_minus_nine_mid_tick_loses_and_duplicates_nothing(tmp_path: Path) -> None:
    seed_dir = tmp_path / "seed"
    seed_dir.mkdir()
    seed = seed_dir / "mem.db"
    anyio.run(populate, seed)
    before = anyio.run(snapshot, seed)
    assert len(before) == ITEMS

    # The oracle: the same decisions, computed without any store writes.
    from memorywire.wire.models import MemoryRecord

    expected = {
        mid: decide(
            MemoryRecord.model_validate(rec), NOW, scorer=default_scorer, threshold=0.5,
            stm_ttl_ms=TTL,
        ).action
        for mid, rec in before.items()
    }  # fmt: skip
    assert {"promote", "evict", "keep"} == set(expected.values())

    # How long does a cold child's first tick take here? Kill within that window.
    probe = tmp_path / "probe"
    probe.mkdir()
    for f in db_files(seed):
        shutil.copy(f, probe / f.name)
    tick_s = child_tick_seconds(probe / "mem.db")

    rng = random.Random(int(os.environ.get("MEMORYWIRE_CRASH_SEED", "9")))
    interrupted = 0
    for run in range(RUNS):
        work = tmp_path / f"run{run}"
        work.mkdir()
        for f in db_files(seed):
            shutil.copy(f, work / f.name)
        db = work / "mem.db"
        child = spawn(db)
        try:
            assert child.stdout is not None
            line = child.stdout.readline()
            assert line.strip() == "ready", child.stderr.read() if child.stderr else line
            time.sleep(rng.uniform(0, tick_s * 1.2))
            child.send_signal(signal.SIGKILL)
            child.wait(timeout=10)
        finally:
            reap(child)
        assert child.returncode == -signal.SIGKILL
        mid_state = anyio.run(snapshot, db)
        done = sum(
            1
            for mid, rec in before.items()
            if (mid not in mid_state) or (mid_state[mid]["metadata"] or {}).get("tier") == "ltm"
        )
        if 0 < done < sum(1 for a in expected.values() if a != "keep"):
            interrupted += 1

        anyio.run(recover, db)
        after = anyio.run(snapshot, db)
        survivors = {m for m, a in expected.items() if a != "evict"}
        assert set(after) == survivors, f"run {run}: lost or resurrected memories"
        for mid in survivors:
            now_rec, old = after[mid], before[mid]
            for key in ("content", "source", "confidence", "agent_id", "user_id", "created_at"):
                assert now_rec[key] == old[key], (run, mid, key)
            meta = dict(now_rec["metadata"] or {})
            if expected[mid] == "promote":
                assert meta.pop("tier") == "ltm" and meta.pop("promoted_at") == NOW
            assert meta == old["metadata"], (run, mid)
    print(f"\n{RUNS} kill -9 runs, {interrupted} interrupted mid-tick (tick ≈ {tick_s:.3f}s)")
