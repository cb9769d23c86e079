"""The ``memorywire`` command: schema printing, validation output and exit codes."""

from __future__ import annotations

import argparse
import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from memorywire import cli
from memorywire.wire import schema, schema_names

BAD = '{"agent_id": "", "type": "semantik"}'


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = cli.main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_schema_list(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["schema", "--list"], capsys)
    assert code == 0
    assert out.splitlines() == schema_names()


def test_schema_prints_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["schema", "types/fsm"], capsys)
    assert code == 0 and json.loads(out) == schema("types/fsm")


def test_schema_unknown_name(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(["schema", "nope"], capsys)
    assert code == 2 and "no wire schema named 'nope'" in err


def test_schema_needs_a_name(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["schema"], capsys)[0] == 2


def test_validate_file_valid(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = tmp_path / "r.json"
    doc.write_text(json.dumps({"agent_id": "a", "query": "q", "hops": 2}), encoding="utf-8")
    assert run(["validate", "recall", str(doc)], capsys)[:2] == (0, "valid\n")


def test_validate_stdin_prints_every_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO(BAD))
    code, out, _ = run(["validate", "remember", "-"], capsys)
    assert code == 1
    lines = out.splitlines()
    assert lines[0] == "/agent_id: must not be empty [minLength]"
    assert lines[1] == "/content: missing required field 'content' [required]"
    assert lines[2].startswith("/type: must be one of semantic, episodic, procedural, emotional")
    assert lines[2].endswith("[enum]") and len(lines) == 3


def test_validate_malformed_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = tmp_path / "bad.json"
    doc.write_text('{\n  "agent_id": "a",\n  "query": \n}', encoding="utf-8")
    code, out, _ = run(["validate", "recall", str(doc)], capsys)
    assert code == 1 and "line 4, column 1" in out


def test_validate_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(["validate", "recall", str(tmp_path / "none.json")], capsys)
    assert code == 2 and "cannot read" in err


def test_validate_unknown_kind_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        cli.main(["validate", "remembr", "-"])
    assert info.value.code == 2


def test_no_command_prints_help(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run([], capsys)
    assert code == 2 and "schema" in out and "validate" in out


def test_a_new_subcommand_registers_like_the_builtins(capsys: pytest.CaptureFixture[str]) -> None:
    def register_hello(subparsers: Any) -> None:
        p = subparsers.add_parser("hello")
        p.add_argument("who")

        def handler(args: argparse.Namespace) -> int:
            print(f"hello {args.who}")
            return 0

        p.set_defaults(handler=handler)

    args = cli.build_parser(extra=[register_hello]).parse_args(["hello", "wire"])
    assert args.handler(args) == 0
    assert capsys.readouterr().out == "hello wire\n"


def test_installed_console_script() -> None:
    exe = Path(sys.executable).with_name("memorywire")
    assert exe.exists(), "console script missing: reinstall with `pip install -e .`"
    proc = subprocess.run(
        [str(exe), "validate", "remember", "-"],
        input=BAD,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 1
    assert [line.split(":")[0] for line in proc.stdout.splitlines()] == [
        "/agent_id",
        "/content",
        "/type",
    ]
