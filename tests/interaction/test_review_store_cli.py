"""``memorywire review-store`` on the default store (governance on by default): lists the
near-duplicates and contradictions already stored, and ``--apply`` carries the chosen ones
out through governance as the local operator, audited."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from memorywire.cli import main
from memorywire.core.timeline import validity_of
from memorywire.server.config import load_config
from memorywire.server.runtime import running
from memorywire.wire.models import RememberRequest


def _cli(capsys: pytest.CaptureFixture[str], *argv: str, code: int = 0) -> Any:
    got = main(["review-store", *argv, "--embedder", "hashing", "--json"])
    out = capsys.readouterr()
    assert got == code, out.err
    return json.loads(out.out)


def test_lists_and_applies_through_governance(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("MEMORYWIRE_HOME", str(tmp_path / "data"))
    config = load_config(None, overrides={"embedder": "hashing"})

    async def write() -> list[str]:
        ids = []
        async with running(config) as rt:
            assert rt.governed is not None
            for text in ("Alice lives in Berlin", "Alice lives in Paris now"):
                time.sleep(0.005)
                resp = await rt.governed.remember(RememberRequest(
                    agent_id="a1", type="semantic", content=text))
                ids.append(resp.id)
        return ids

    berlin, paris = anyio.run(write)
    [found] = _cli(capsys)
    assert (found["kind"], found["keep"]["id"], [o["id"] for o in found["others"]]) == \
        ("contradiction", paris, [berlin])
    assert _cli(capsys, "--apply", f"{found['key']}=merge", code=1)[0]["error"] == \
        "action must be supersede or forget"
    [done] = _cli(capsys, "--apply", f"{found['key']}=supersede")
    assert (done["done"], done["staged"]) == ([paris], [])
    assert _cli(capsys) == []

    async def check() -> tuple[Any, list[dict[str, Any]]]:
        async with running(config) as rt:
            assert rt.governed is not None
            old = await rt.governed.get("a1", berlin)
            return old, rt.governed.audit_entries(memory_id=paris, limit=100)

    old, entries = anyio.run(check)
    assert validity_of(old.metadata, old.created_at).superseded_by == paris
    assert any(e["actor"] == "operator" and e["action"] == "update" for e in entries)
