"""Finding 10: the CLI printed Python tracebacks for some bad inputs (a file that is not
UTF-8, a missing or malformed config file). Each bad input is now one clear line on
stderr and a non-zero exit; a traceback appears only with ``MEMORYWIRE_DEBUG=1``."""

from __future__ import annotations

from pathlib import Path

import pytest

from memorywire.cli import main


@pytest.fixture
def files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("MEMORYWIRE_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("MEMORYWIRE_DEBUG", raising=False)
    (tmp_path / "latin1.json").write_bytes(b'{"agent_id": "caf\xe9"}')
    (tmp_path / "broken.toml").write_text("[server\n", encoding="utf-8")
    (tmp_path / "broken.json").write_text('{"server": ', encoding="utf-8")
    return tmp_path


CASES = [
    ("validate-not-utf8", ["validate", "remember", "{d}/latin1.json"]),
    ("serve-missing-config", ["serve", "--config", "{d}/missing.toml"]),
    ("serve-broken-toml", ["serve", "--config", "{d}/broken.toml"]),
    ("serve-broken-json", ["serve", "--config", "{d}/broken.json"]),
]


@pytest.mark.parametrize(("name", "argv"), CASES, ids=[c[0] for c in CASES])
def test_bad_input_is_one_line_and_a_nonzero_exit(
    files: Path, capsys: pytest.CaptureFixture[str], name: str, argv: list[str]
) -> None:
    rc = main([a.replace("{d}", str(files)) for a in argv])
    out, err = capsys.readouterr()
    assert rc != 0
    assert "Traceback" not in out + err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("memorywire "), err
