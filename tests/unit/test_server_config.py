from __future__ import annotations

from pathlib import Path

import pytest

from memorywire.errors import InvalidRequest
from memorywire.server.config import is_loopback, load_config


def test_layers_file_env_overrides(tmp_path: Path) -> None:
    cfg = tmp_path / "mw.toml"
    cfg.write_text('[server]\nport = 9000\nmax_body_bytes = 4096\nstore = "memory://"\n',
                   encoding="utf-8")
    c = load_config(cfg, env={"MEMORYWIRE_PORT": "9001"}, overrides={"host": "::1"})
    assert (c.port, c.max_body_bytes, c.store, c.host) == (9001, 4096, "memory://", "::1")
    assert c.limits().max_body_bytes == 4096
    bad = tmp_path / "bad.json"
    bad.write_text('{"prot": 1}', encoding="utf-8")
    with pytest.raises(InvalidRequest, match="unknown setting"):
        load_config(bad, env={})


def test_no_auth_only_on_loopback(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("MEMORYWIRE_HOME", str(tmp_path))
    ok = load_config(env={}, overrides={"no_auth": True, "host": "127.0.0.1"}).resolved()
    assert ok.store == f"sqlite:///{tmp_path / 'mem.db'}"
    for host in ("0.0.0.0", "192.168.1.10", "example.com", "::"):
        with pytest.raises(InvalidRequest, match="non-loopback"):
            load_config(env={}, overrides={"no_auth": True, "host": host}).resolved()
    assert is_loopback("localhost") and is_loopback("127.9.9.9") and is_loopback("[::1]")
