"""Tests never write outside their temporary folders: the session runs in a private home
(memorywire/testing/home.py), and the check that ends the session would see a change to the
real data directory."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from memorywire.cli import main
from memorywire.server.config import data_dir, load_config
from memorywire.testing.home import (
    DEPLOYMENT_VARIABLES,
    changes,
    private_env,
    private_home,
    real_data_dirs,
    snapshot,
)


def test_the_session_runs_in_a_private_home(memorywire_private_home: Path) -> None:
    home = memorywire_private_home
    assert Path.home() == home and Path(os.environ["XDG_CACHE_HOME"]).is_relative_to(home)
    assert data_dir() == home / ".local" / "share" / "memorywire"
    assert not {v for v in DEPLOYMENT_VARIABLES if v in os.environ}
    # What a command with no settings opens is in there too.
    resolved = load_config().resolved()
    for path in (resolved.store.removeprefix("sqlite:///"), resolved.tokens_db,
                 resolved.governance_db):
        assert Path(path).is_relative_to(home), path


def test_a_command_with_no_settings_writes_into_the_private_home(
    memorywire_private_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["token", "create", "--role", "admin", "--name", "t", "--json"]) == 0
    capsys.readouterr()
    assert (memorywire_private_home / ".local" / "share" / "memorywire" / "tokens.db").is_file()


def test_deployment_settings_are_the_configuration_s_and_the_cli_s() -> None:
    for name in ("MEMORYWIRE_STORE", "MEMORYWIRE_STORES", "MEMORYWIRE_GOVERNANCE_DB",
                 "MEMORYWIRE_TOKENS_DB", "MEMORYWIRE_ROUTER_OUTBOX", "MEMORYWIRE_SIGNING_KEY",
                 "MEMORYWIRE_CONFIG", "MEMORYWIRE_AUDIT_KEY_FILE", "MEMORYWIRE_SERVER",
                 "MEMORYWIRE_TOKEN"):
        assert name in DEPLOYMENT_VARIABLES
    # What steers the tests themselves stays.
    for name in ("MEMORYWIRE_TEST_PG_DSN", "MEMORYWIRE_CACHE_DIR", "MEMORYWIRE_LETTA_URL"):
        assert name not in DEPLOYMENT_VARIABLES


def test_private_home_sets_and_restores_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMORYWIRE_STORE", "postgresql://someone-else/db")
    monkeypatch.setenv("MEMORYWIRE_LETTA_URL", "http://127.0.0.1:1")
    before = dict(os.environ)
    with private_home(tmp_path) as home:
        assert home == tmp_path / "home" and home.is_dir()
        assert os.environ["HOME"] == str(home)
        assert os.environ["MEMORYWIRE_HOME"] == str(home / ".local" / "share" / "memorywire")
        assert "MEMORYWIRE_STORE" not in os.environ
        assert os.environ["MEMORYWIRE_LETTA_URL"] == "http://127.0.0.1:1"
    assert dict(os.environ) == before


def test_the_machine_s_pip_configuration_stays_reachable(tmp_path: Path) -> None:
    real = tmp_path / "real"
    (real / ".config" / "pip").mkdir(parents=True)
    (real / ".config" / "pip" / "pip.conf").write_text("[global]\n", encoding="utf-8")
    got = private_env(tmp_path / "t", {"HOME": str(real)})
    assert got["PIP_CONFIG_FILE"] == str(real / ".config" / "pip" / "pip.conf")
    assert "PIP_CONFIG_FILE" not in private_env(tmp_path / "t", {"HOME": str(tmp_path)})


def test_real_data_dirs_follow_the_same_rules_as_the_server(tmp_path: Path) -> None:
    home = {"HOME": str(tmp_path)}
    assert real_data_dirs(home) == [tmp_path / ".local" / "share" / "memorywire",
                                    tmp_path / ".memorywire"]
    assert real_data_dirs({**home, "XDG_DATA_HOME": "/x"})[0] == Path("/x/memorywire")
    assert real_data_dirs({**home, "MEMORYWIRE_HOME": "/y", "XDG_DATA_HOME": "/x"})[0] == \
        Path("/y")


def test_the_end_of_session_check_sees_every_kind_of_change(tmp_path: Path) -> None:
    data = tmp_path / "data"
    assert snapshot([data]) == {}  # no data directory yet: nothing to compare
    data.mkdir()
    (data / "mem.db").write_bytes(b"1")
    (data / "tokens.db").write_bytes(b"1")
    before = snapshot([data])
    assert changes(before, snapshot([data])) == []
    (data / "router-outbox.db").write_bytes(b"")
    (data / "mem.db").write_bytes(b"22")
    (data / "tokens.db").unlink()
    assert changes(before, snapshot([data])) == [
        f"added {data / 'router-outbox.db'}",
        f"removed {data / 'tokens.db'}",
        f"changed {data / 'mem.db'}",
    ]
