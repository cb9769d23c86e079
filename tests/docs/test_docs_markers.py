"""The docs test's own rules bite: markers, fences, sessions and failing blocks."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import pytest

from tests.docs import runner
from tests.docs.blocks import Block, Unit, console_commands, parse, units
from tests.docs.runner import port_open, run_unit

PAGE = Path("page.md")


def _problems(text: str) -> list[str]:
    return parse(PAGE, text).problems


def test_a_skip_without_a_reason_is_refused() -> None:
    text = "<!-- docs-test: skip -->\n```sh\nfalse\n```\n"
    assert _problems(text) and "reason" in _problems(text)[0]
    assert "reason" in _problems("<!-- docs-test: skip () -->\n```sh\nx\n```\n")[0]


def test_an_unknown_directive_or_a_stray_marker_is_refused() -> None:
    assert "unknown" in _problems("<!-- docs-test: skp (x) -->\n```sh\nx\n```\n")[0]
    assert "no code block" in _problems("<!-- docs-test: skip (x) -->\nprose\n")[0]
    assert "no code block" in _problems("text\n<!-- docs-test: session a -->\n")[0]
    assert "never run" in _problems("<!-- docs-test: skip (x) -->\n```json\n{}\n```\n")[0]
    assert "nothing else" in _problems("<!-- docs-test: skip (x); session a -->\n```sh\n"
                                       "x\n```\n")[0]
    assert "cannot also" in _problems("<!-- docs-test: session a; skip (x) -->\n```sh\n"
                                      "x\n```\n")[0]


def test_a_fence_without_a_language_is_refused() -> None:
    assert "no language" in _problems("```\nmemorywire recall x\n```\n")[0]


def test_markers_attach_to_the_next_block_across_blank_lines() -> None:
    text = ("<!-- docs-test: skip (needs a dataset; minutes) -->\n\n```sh\nbench\n```\n"
            "```python\nprint(1)\n```\n"
            "<!-- docs-test: session s; server 8999 -->\n```sh\nserve\n```\n"
            "<!-- docs-test: session s -->\n```console\n$ curl x\nout\n```\n")
    page = parse(PAGE, text)
    assert page.problems == []
    skipped, alone, server, client = page.blocks
    assert (skipped.skip, skipped.runs, alone.runs) == ("needs a dataset; minutes", False, True)
    assert (server.session, server.server, client.session) == ("s", 8999, "s")
    assert [u.name for u in units(page.blocks)] == ["page.md:6", "page.md[s]"]
    assert units(page.blocks)[1].blocks == (server, client)
    assert console_commands(client.code) == "curl x\n"


def _unit(*codes: str, lang: str = "sh") -> Unit:
    return Unit("u", tuple(Block(PAGE, n, lang, c, session="s") for n, c in enumerate(codes)))


def test_an_unmarked_failing_block_fails(tmp_path: Path) -> None:
    outcome = run_unit(_unit("true\nfalse\necho never"), tmp_path)
    assert not outcome.ok and "exited with 1" in outcome.log[0]


def test_a_python_block_fails_on_a_future_warning(tmp_path: Path) -> None:
    code = "import warnings\nwarnings.warn('old form', FutureWarning)\n"
    outcome = run_unit(_unit(code, lang="python"), tmp_path)
    assert not outcome.ok and "old form" in outcome.log[0]


def test_a_block_never_reaches_a_config_folder_outside_its_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "real-codex"))
    monkeypatch.setenv("MEMORYWIRE_AGENT", "someone")
    outcome = run_unit(_unit('test -z "${CODEX_HOME:-}" && test -z "${MEMORYWIRE_AGENT:-}"'),
                       tmp_path / "u")
    assert outcome.ok, outcome.log


def test_a_session_shares_its_folder_and_home_and_nothing_else(tmp_path: Path) -> None:
    outcome = run_unit(_unit('echo hi > note; touch "$HOME/mark"', 'test -f note',
                             'test -f "$HOME/mark"; test "$HOME" != "' + str(Path.home()) + '"',
                             "command -v memorywire; test -x .venv/bin/python"), tmp_path)
    assert outcome.ok, outcome.log
    assert not (tmp_path / "other").exists()
    fresh = run_unit(_unit("test ! -e note"), tmp_path / "other")
    assert fresh.ok, fresh.log


def test_a_server_block_must_open_its_port_and_keep_running(tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    serve = f"exec python -m http.server {port} --bind 127.0.0.1"
    blocks = (Block(PAGE, 1, "sh", serve, session="s", server=port),
              Block(PAGE, 2, "sh", f"curl -sf http://127.0.0.1:{port}/ >/dev/null "
                    f"|| python -c 'import urllib.request as u; u.urlopen(\"http://127.0.0.1:{port}/\")'",
                    session="s"))
    assert run_unit(Unit("u", blocks), tmp_path / "a").ok
    assert not port_open(port), "the server was not stopped"
    dies = (Block(PAGE, 1, "sh", "exit 4", session="s", server=port),)
    outcome = run_unit(Unit("u", dies), tmp_path / "b")
    assert not outcome.ok and "exited with 4 before port" in outcome.log[0]


def test_a_block_that_hangs_fails_and_leaves_no_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(runner, "BLOCK_TIMEOUT_S", 1.0)
    outcome = run_unit(_unit("sleep 300 & echo $! > child; wait"), tmp_path)
    assert not outcome.ok and "still running after 1 s" in outcome.log[0]
    child = int((tmp_path / "work" / "child").read_text())
    assert _gone(child), "the block's background child outlived it"


def _gone(pid: int) -> bool:
    """Ended (a zombie waiting for init to reap it counts as ended), within 5 s."""
    stat = Path(f"/proc/{pid}/stat")
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            state = stat.read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return True
        if state in ("Z", "X"):
            return True
        time.sleep(0.1)
    return False
