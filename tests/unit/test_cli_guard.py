"""A failing file-reading subcommand says one line naming itself and exits 2 (cli/guard.py):
what scripts that call ``memorywire audit`` or ``memorywire receipt`` test for."""

from __future__ import annotations

from pathlib import Path

import pytest

from memorywire.cli import main


@pytest.mark.parametrize(("argv", "prefix"), [
    (["audit", "list", "--db", "{d}/missing/gov.db"], "memorywire audit: no governance database"),
    (["receipt", "verify", "{d}/missing.json"], "memorywire receipt: cannot read"),
])
def test_a_failing_subcommand_prints_one_line_and_exits_2(
    argv: list[str], prefix: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MEMORYWIRE_HOME", str(tmp_path / "home"))
    assert main([a.format(d=tmp_path) for a in argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith(prefix) and err.count("\n") == 1, err
    assert "Traceback" not in err
