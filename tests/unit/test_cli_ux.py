"""The CLI as a person meets it: recall at 80 columns, colour, the default agent, help on
every flag, and one-line errors for a busy port and a bad configuration."""

from __future__ import annotations

import argparse
import io
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from rich.console import Console

from memorywire.cli import main
from memorywire.cli.main import build_parser
from memorywire.cli.render import render

ID = "01a23276-9e08-73f7-8a26-ed74913497fd"
LONG = ("The user is allergic to peanuts and tree nuts, carries an epinephrine pen on every "
        "trip, and asks airlines for a nut-free meal when booking long-haul flights.")


def _hit(**kw: object) -> dict[str, object]:
    return {"id": ID, "type": "semantic", "content": LONG, "score": 0.0327,
            "relevance": 0.8312, "created_at": 1_796_142_964_233, **kw}


def _rendered(doc: object, width: int, **console: object) -> str:
    out = io.StringIO()
    render("recall", doc, Console(file=out, width=width, **console))  # type: ignore[arg-type]
    return out.getvalue()


@pytest.mark.parametrize("width", [40, 80, 120])
def test_recall_shows_content_first_wrapped_never_dropped(width: int) -> None:
    text = _rendered({"results": [_hit()], "fusion_used": "rrf"}, width)
    lines = text.splitlines()
    assert lines[0].startswith("1. The user is allergic")
    assert " ".join(" ".join(lines).split()).find(LONG) >= 0  # every word, in order
    assert "relevance 0.83" in text and "0.0327" not in text
    assert ID in text and "2026-12-01T16:36:04Z" in text
    assert "not shown here" not in text
    if width >= 80:
        assert max(len(line) for line in lines) <= width


def test_recall_without_relevance_shows_the_score_and_empty_says_so() -> None:
    assert "score 0.033" in _rendered({"results": [_hit(relevance=None)]}, 80)
    assert _rendered({"results": [], "fusion_used": "rrf"}, 80).strip() == "no memories matched"


def test_no_color_and_non_terminals_get_no_colour(monkeypatch: pytest.MonkeyPatch) -> None:
    doc = {"results": [_hit()], "fusion_used": "rrf"}
    assert "\x1b[" not in _rendered(doc, 80)  # a file, not a terminal
    assert "\x1b[2m" in _rendered(doc, 80, force_terminal=True)  # dim meta on a terminal
    monkeypatch.setenv("NO_COLOR", "1")
    coloured = _rendered(doc, 80, force_terminal=True)
    assert "\x1b[3" not in coloured and "\x1b[38" not in coloured


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("MEMORYWIRE_HOME", str(tmp_path / "data"))
    monkeypatch.chdir(tmp_path)
    yield tmp_path


def test_columns_80_recall_end_to_end(home: Path) -> None:
    env = {**os.environ, "COLUMNS": "80", "MEMORYWIRE_AGENT": "travel-bot"}
    run = [sys.executable, "-m", "memorywire"]
    subprocess.run([*run, "remember", LONG], env=env, check=True, capture_output=True)
    out = subprocess.run([*run, "recall", "does the user have food allergies?"], env=env,
                         check=True, capture_output=True, text=True).stdout
    assert out.startswith("1. The user is allergic")
    assert " ".join(out.split()).find(LONG) >= 0
    assert max(len(line) for line in out.splitlines()) <= 80
    assert "\x1b[" not in out


def test_memorywire_agent_is_the_default_agent(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        main(["recall", "anything"])
    assert "--agent" in capsys.readouterr().err
    monkeypatch.setenv("MEMORYWIRE_AGENT", "a1")
    assert main(["remember", "--store", "memory://", "Alice likes tea", "--json"]) == 0
    assert '"agent_id"' not in capsys.readouterr().err
    assert main(["recall", "--store", "memory://", "tea", "--json"]) == 0


def _parsers(
    p: argparse.ArgumentParser, path: str
) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    yield path, p
    for a in p._actions:
        if isinstance(a, argparse._SubParsersAction):
            for name, sub in a.choices.items():
                yield from _parsers(sub, f"{path} {name}")


def test_every_flag_and_argument_has_help() -> None:
    missing = [
        f"{path} {a.option_strings or a.dest}"
        for path, p in _parsers(build_parser(), "memorywire")
        for a in p._actions
        if a.help is None
        and not isinstance(a, argparse._HelpAction | argparse._VersionAction
                           | argparse._SubParsersAction)
    ]
    assert missing == []


def test_serve_on_a_busy_port_is_one_line_and_exits_non_zero(home: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        proc = subprocess.run(
            [sys.executable, "-m", "memorywire", "serve", "--no-auth", "--store", "memory://",
             "--port", str(port)], capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert f"cannot listen on 127.0.0.1:{port}" in lines[0] and "--port" in lines[0]
    assert "memorywire serving" not in proc.stderr and proc.stdout == ""


@pytest.mark.parametrize("command", [["serve"], ["recall", "-a", "A", "x"], ["mcp"]])
def test_bad_config_is_one_line(
    home: Path, command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    bad = home / "bad.toml"
    bad.write_text("[server\nport = 1\n", encoding="utf-8")
    code = main([*command, "--config", str(bad)])
    err = capsys.readouterr().err
    assert code != 0 and len(err.strip().splitlines()) == 1, err
    assert "bad.toml" in err or "TOML" in err or "invalid" in err
