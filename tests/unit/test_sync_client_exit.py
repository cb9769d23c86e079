"""A script that never closes its SyncMemory must still exit."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent(
    """
    from memorywire.client import SyncMemory
    from memorywire.embed.hashing import HashingEmbedder

    mem = SyncMemory.local("memory://", embedder=HashingEmbedder())
    mem.remember(agent_id="a", type="semantic", content="left open on purpose")
    assert mem.recall(agent_id="a", query="open").results
    print("done", flush=True)
    """
)


@pytest.mark.parametrize("delete_first", [False, True], ids=["at-exit", "garbage-collected"])
def test_a_script_without_close_exits(delete_first: bool) -> None:
    script = SCRIPT + ("del mem\nimport gc; gc.collect()\n" if delete_first else "")
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=30
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "done"
