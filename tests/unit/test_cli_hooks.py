"""Claude Code hooks: installed by ``connect claude-code --hooks``, run as Claude Code would
(hook JSON on stdin, stdout read back), on the default store of a temporary home."""

from __future__ import annotations

import io
import json
import shlex
from pathlib import Path

import pytest

from memorywire.cli.hooks import OFFER, REMINDER
from memorywire.cli.main import main


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    h = tmp_path / "home"
    h.mkdir()
    monkeypatch.setenv("HOME", str(h))
    monkeypatch.setenv("MEMORYWIRE_HOME", str(h / "data"))
    monkeypatch.chdir(tmp_path)
    return h


def _hook(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
          event: str, payload: dict[str, object]) -> str:
    monkeypatch.setattr("sys.stdin", io.StringIO(json.dumps(payload)))
    assert main(["hook", event, "--agent", "claude-code"]) == 0
    return capsys.readouterr().out


def test_connect_hooks_merge_into_settings_and_remove_cleanly(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = home / ".claude" / "settings.json"
    settings.parent.mkdir()
    theirs = {"matcher": "Bash", "hooks": [{"type": "command", "command": "lint.sh"}]}
    original = {"model": "opus", "hooks": {"PreToolUse": [theirs],
                                           "Stop": [{"hooks": [{"type": "command",
                                                                "command": "notify"}]}]}}
    settings.write_text(json.dumps(original), encoding="utf-8")
    assert main(["connect", "claude-code", "--hooks"]) == 0
    doc = json.loads(settings.read_text("utf-8"))
    assert doc["model"] == "opus" and doc["hooks"]["PreToolUse"] == [theirs]
    start = doc["hooks"]["SessionStart"][0]["hooks"][0]["command"]
    argv = shlex.split(start)
    assert Path(argv[0]).is_file() and argv[-4:] == ["hook", "session-start", "--agent",
                                                     "claude-code"]
    assert len(doc["hooks"]["Stop"]) == 2  # theirs kept, ours added
    assert main(["connect", "claude-code", "--hooks"]) == 0  # idempotent
    assert len(json.loads(settings.read_text("utf-8"))["hooks"]["Stop"]) == 2
    assert main(["connect", "claude-code", "--remove"]) == 0
    assert json.loads(settings.read_text("utf-8")) == original
    assert "memorywire" not in json.loads((home / ".claude.json").read_text("utf-8"))[
        "mcpServers"]


def test_stop_hook_offers_once_per_session(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    first = _hook(monkeypatch, capsys, "stop", {"session_id": "s1"})
    assert json.loads(first) == {"decision": "block", "reason": OFFER}
    assert _hook(monkeypatch, capsys, "stop", {"session_id": "s1"}) == ""
    assert _hook(monkeypatch, capsys, "stop",
                 {"session_id": "s2", "stop_hook_active": True}) == ""


def test_session_start_without_a_store_prints_only_the_reminder(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    out = _hook(monkeypatch, capsys, "session-start", {"cwd": "/src/payments"})
    assert out.strip() == REMINDER
    assert not (home / "data" / "mem.db").exists()  # a hook read creates no store


def test_session_start_recalls_the_projects_memories(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fact = "The payments project formats code with black and tests with pytest."
    assert main(["remember", "--agent", "claude-code", fact]) == 0
    capsys.readouterr()
    out = _hook(monkeypatch, capsys, "session-start", {"cwd": "/src/payments"})
    assert f"- [semantic] {fact}" in out and out.strip().endswith(REMINDER)


@pytest.mark.anyio
async def test_mcp_initialize_tells_the_model_when_to_use_each_tool() -> None:
    from mcp import Client

    from memorywire.server.dispatch import Dispatcher
    from memorywire.server.mcp.server import build_mcp_server
    from memorywire.store.memory import InMemoryStore

    async with Client(build_mcp_server(Dispatcher(InMemoryStore()))) as c:
        text = c.instructions or ""
    for tool in ("recall", "remember", "update", "forget", "erase", "merge", "expire"):
        assert f"{tool}" in text
    assert "staged for a human reviewer" in text
