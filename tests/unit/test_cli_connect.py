"""``memorywire connect``: each client's real file format, in a temporary home.

Every test points HOME (and the XDG/Codex/AppData variables) at a temp folder, runs the
command through ``main`` as a user would, and reads the file back with the parser the
client uses (json, tomllib).
"""

from __future__ import annotations

import json
import os
import stat
import sys
import tomllib
from pathlib import Path

import pytest

from memorywire.cli.connect import CLIENTS, toml_table
from memorywire.cli.main import main


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    h = tmp_path / "home"
    h.mkdir()
    monkeypatch.setenv("HOME", str(h))
    monkeypatch.setenv("USERPROFILE", str(h))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(h / ".config"))
    monkeypatch.setenv("APPDATA", str(h / "AppData" / "Roaming"))
    monkeypatch.setenv("MEMORYWIRE_HOME", str(h / "data"))
    monkeypatch.delenv("CODEX_HOME", raising=False)
    monkeypatch.chdir(tmp_path)
    return h


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["connect", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_claude_desktop_print_is_valid_json_whose_command_exists(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _run(capsys, "claude-desktop", "--print")
    assert code == 0
    entry = json.loads(out)["mcpServers"]["memorywire"]
    command = Path(entry["command"])
    assert command.is_absolute() and command.is_file()
    assert os.access(command, os.X_OK)
    assert entry["args"][-1] == "mcp"
    assert entry["env"] == {"MEMORYWIRE_AGENT": "claude-desktop"}
    assert not any(home.rglob("*.json"))  # --print writes nothing


def test_cursor_merges_without_losing_other_servers(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = home / ".cursor" / "mcp.json"
    path.parent.mkdir()
    other = {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"],
             "env": {"GITHUB_TOKEN": "x"}}
    original = {"mcpServers": {"github": other}, "someSetting": True}
    path.write_text(json.dumps(original), encoding="utf-8")
    code, out, _ = _run(capsys, "cursor")
    assert code == 0
    doc = json.loads(path.read_text(encoding="utf-8"))
    assert doc["mcpServers"]["github"] == other and doc["someSetting"] is True
    assert doc["mcpServers"]["memorywire"]["env"]["MEMORYWIRE_AGENT"] == "cursor"
    backups = list(path.parent.glob("mcp.json.*.bak"))
    assert len(backups) == 1 and json.loads(backups[0].read_text("utf-8")) == original
    assert "backup" in out
    # Running it again replaces its own entry, still keeping the other one.
    assert _run(capsys, "cursor", "--agent", "me")[0] == 0
    doc = json.loads(path.read_text(encoding="utf-8"))
    assert set(doc["mcpServers"]) == {"github", "memorywire"}
    assert doc["mcpServers"]["memorywire"]["env"]["MEMORYWIRE_AGENT"] == "me"
    # --remove takes out only ours.
    assert _run(capsys, "cursor", "--remove")[0] == 0
    assert json.loads(path.read_text(encoding="utf-8")) == original


def test_malformed_file_is_refused_in_one_line_and_left_alone(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = home / ".codeium" / "windsurf" / "mcp_config.json"
    path.parent.mkdir(parents=True)
    path.write_text('{"mcpServers": {"a": 1,}', encoding="utf-8")
    code, _, err = _run(capsys, "windsurf")
    assert code == 1
    assert len(err.strip().splitlines()) == 1
    assert str(path) in err and "not valid JSON" in err
    assert path.read_text(encoding="utf-8") == '{"mcpServers": {"a": 1,}'
    assert list(path.parent.iterdir()) == [path]  # no backup, no temp file


def test_servers_key_of_the_wrong_type_is_refused(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = home / ".claude.json"
    path.write_text('{"mcpServers": []}', encoding="utf-8")
    code, _, err = _run(capsys, "claude-code")
    assert code == 1 and "'mcpServers' is not an object" in err
    assert path.read_text(encoding="utf-8") == '{"mcpServers": []}'


def test_vscode_writes_the_workspace_file_with_servers_and_type(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _run(capsys, "vscode")[0] == 0
    doc = json.loads((tmp_path / ".vscode" / "mcp.json").read_text("utf-8"))
    assert doc["servers"]["memorywire"]["type"] == "stdio"
    assert "mcpServers" not in doc


def test_claude_code_user_scope_keeps_the_rest_of_claude_json_and_its_mode(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = home / ".claude.json"
    state = {"numStartups": 3, "projects": {"/x": {"mcpServers": {}}}}
    path.write_text(json.dumps(state), encoding="utf-8")
    path.chmod(0o600)
    assert _run(capsys, "claude-code")[0] == 0
    doc = json.loads(path.read_text("utf-8"))
    assert doc["numStartups"] == 3 and doc["projects"] == state["projects"]
    assert doc["mcpServers"]["memorywire"]["type"] == "stdio"
    if sys.platform != "win32":
        assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_claude_desktop_default_path_per_os(home: Path) -> None:
    path = CLIENTS["claude-desktop"].path()
    assert path.name == "claude_desktop_config.json" and path.parent.name == "Claude"
    if sys.platform.startswith("linux"):
        assert path == home / ".config" / "Claude" / "claude_desktop_config.json"


CODEX_FILE = """\
# my codex settings
model = "o4-mini"

[mcp_servers.github]
command = "npx"
args = ["-y", "server-github"] # trailing comment

[mcp_servers.github.env]
TOKEN = "t"

[profiles.fast]
model = "gpt-5"
"""


def test_codex_toml_round_trip_keeps_everything_else(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = home / ".codex" / "config.toml"
    path.parent.mkdir()
    path.write_text(CODEX_FILE, encoding="utf-8")
    assert _run(capsys, "codex", "--agent", "co dex \"q\" ✓")[0] == 0
    text = path.read_text("utf-8")
    doc = tomllib.loads(text)
    assert doc["model"] == "o4-mini" and doc["profiles"] == {"fast": {"model": "gpt-5"}}
    assert doc["mcp_servers"]["github"]["env"] == {"TOKEN": "t"}
    ours = doc["mcp_servers"]["memorywire"]
    assert Path(ours["command"]).is_file() and ours["args"][-1] == "mcp"
    assert ours["env"] == {"MEMORYWIRE_AGENT": "co dex \"q\" ✓"}
    assert text.startswith(CODEX_FILE)  # comments and layout untouched
    # Again (replaced, not duplicated), then removed: back to the original text.
    assert _run(capsys, "codex")[0] == 0
    assert tomllib.loads(path.read_text("utf-8"))["mcp_servers"]["memorywire"]["env"] == {
        "MEMORYWIRE_AGENT": "codex"}
    assert _run(capsys, "codex", "--remove")[0] == 0
    assert path.read_text("utf-8").rstrip("\n") == CODEX_FILE.rstrip("\n")


def test_codex_print_is_a_toml_table(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "codex", "--print", "--store", "sqlite:///C:\\m.db")
    assert code == 0
    entry = tomllib.loads(out)["mcp_servers"]["memorywire"]
    assert entry["args"][-3:] == ["mcp", "--store", "sqlite:///C:\\m.db"]
    assert not (home / ".codex").exists()


def test_codex_inline_definition_is_refused_not_damaged(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = home / ".codex" / "config.toml"
    path.parent.mkdir()
    text = 'mcp_servers = { memorywire = { command = "old" } }\n'
    path.write_text(text, encoding="utf-8")
    code, _, err = _run(capsys, "codex")
    assert code == 1 and "edit it by hand" in err
    assert path.read_text("utf-8") == text


def test_codex_malformed_toml_is_refused(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = home / ".codex" / "config.toml"
    path.parent.mkdir()
    path.write_text("[mcp_servers\n", encoding="utf-8")
    code, _, err = _run(capsys, "codex")
    assert code == 1 and "not valid TOML" in err and len(err.strip().splitlines()) == 1


def test_toml_table_escapes_what_toml_needs() -> None:
    table = toml_table("s", "n", {"command": "a\\b\"c\x7f\n😀", "args": ["x"], "env": {}})
    assert tomllib.loads(table)["s"]["n"]["command"] == "a\\b\"c\x7f\n😀"


def test_uvx_flag_runs_the_package_from_the_index(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _run(capsys, "cursor", "--print", "--uvx")
    entry = json.loads(out)["mcpServers"]["memorywire"]
    assert code == 0 and Path(entry["command"]).name.startswith("uvx")
    assert entry["args"] == ["--from", "memorywire[mcp]", "memorywire", "mcp"]


def test_hooks_are_claude_code_only(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(capsys, "cursor", "--hooks")
    assert code == 2 and "only claude-code" in err


def test_bad_name_is_refused(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(capsys, "cursor", "--name", "a.b")
    assert code == 2 and "--name" in err
