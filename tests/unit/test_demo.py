"""``make demo`` is the README's first command: it must keep doing what it prints."""

from __future__ import annotations

from pathlib import Path

import pytest

from memorywire.demo import run_demo


@pytest.mark.anyio
async def test_demo_walks_every_step(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    summary = await run_demo(tmp_path)
    out = capsys.readouterr().out
    assert "peanuts" in str(summary["paraphrase_top"])
    assert summary["no_match_results"] == 0
    assert summary["procedure_state"] == "confirmed"
    assert summary["audit_ok"] is True
    assert summary["audit_entries"] > 5
    assert summary["current_airline"] == ["The user's favourite airline is Ryanair."]
    assert "supersedes? " in out and "KLM" in out
    for step in ("remember", "approval-gated", "approve", "hard forget", "audit verify",
                 "truth over time"):
        assert step in out
