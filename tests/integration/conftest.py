"""What the portability tests share: the test's clock, the standard source records, the
``memorywire`` CLI run as a subprocess of this checkout, and a migration killed with ``-9``
once it has checkpointed enough rows (the resume tests)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from memorywire.core.clock import FakeClock
from memorywire.core.records import UpdateRequest
from memorywire.wire.models import ForgetRequest, MemoryType, MergeRequest, RememberRequest

SRC = str(Path(__file__).resolve().parents[2] / "src")
#: How long a resume test waits for the first checkpoint; generous, for a loaded machine.
CHECKPOINT_DEADLINE_S = 60.0


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


async def populate(store: Any, clock: FakeClock) -> None:
    """Live, updated, forgotten, merged-away and two-agent records, with links and users:
    13 records, every state a dump carries."""
    reqs = [RememberRequest(agent_id="a1", id=f"m{i}", type=MemoryType.SEMANTIC,
                            content=f"fact number {i} about topic {i % 3}", user_id="u1",
                            metadata={"i": i}, confidence=0.5 + i / 100, source="test")
            for i in range(12)]
    reqs.append(RememberRequest(agent_id="a2", id="e1", type=MemoryType.EPISODIC,
                                content="met Bob at the station",
                                metadata={"links": ["m1"]}))
    for r in reqs:
        clock.advance(1000)
        await store.remember(r)
    clock.advance(1000)
    await store.forget(ForgetRequest(agent_id="a1", ids=["m3"]))
    await store.merge(MergeRequest(agent_id="a1", canonical="m4", duplicates=["m5"]))
    await store.update(UpdateRequest(agent_id="a1", id="m6", metadata_patch={"x": 1}))


@pytest.fixture
def populated(clock: FakeClock) -> Callable[[Any], Awaitable[None]]:
    """:func:`populate` on the test's clock."""

    async def run(store: Any) -> None:
        await populate(store, clock)

    return run


@dataclass(frozen=True)
class Cli:
    """The CLI of this checkout (not an installed one) as a subprocess."""

    env: dict[str, str]

    def args(self, *args: str, hashing: bool = True) -> list[str]:
        """The command line; ``hashing`` adds ``--embedder hashing`` (no model download)."""
        extra = ("--embedder", "hashing") if hashing else ()
        return [sys.executable, "-m", "memorywire.cli", *args, *extra]


@pytest.fixture
def cli() -> Cli:
    return Cli(env={**os.environ, "PYTHONPATH": SRC})


def kill_once_checkpointed(proc: subprocess.Popen[bytes], checkpoint: Path,
                           done: int = 50) -> dict[str, Any]:
    """Wait until the migration's checkpoint counts ``done`` rows, kill it with ``-9`` and
    return the checkpoint it left (the caller asserts it had not finished)."""
    deadline = time.monotonic() + CHECKPOINT_DEADLINE_S
    while time.monotonic() < deadline:
        if checkpoint.exists() and json.loads(checkpoint.read_text() or "{}").get("done", 0) \
                >= done:
            break
        time.sleep(0.005)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    state: dict[str, Any] = json.loads(checkpoint.read_text())
    return state
