"""Start-up loads only what the command runs on: ``--version`` and ``--help`` import no
numpy, onnxruntime, jsonschema or tokenizers, and ``memorywire mcp`` answers ``initialize``
and ``tools/list`` without loading the embedding model (it loads on the first embedding).

The evidence is the interpreter's own import log (``python -X importtime``, one line per
module imported, on stderr) of the real command in a subprocess with an empty home.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from memorywire.cli import portability
from memorywire.portability.foreign import FORMATS
from memorywire.store.portable import OnConflict

SRC = str(Path(__file__).resolve().parents[2] / "src")
HEAVY = ("numpy", "onnxruntime", "jsonschema", "tokenizers")
#: What loading the MiniLM model imports (memorywire.embed.minilm imports them only there).
MODEL = ("onnxruntime", "tokenizers")


def _env(home: Path) -> dict[str, str]:
    return {"HOME": str(home), "PATH": os.environ.get("PATH", ""), "PYTHONPATH": SRC}


def _imported(importtime_log: str) -> set[str]:
    """Module names in ``-X importtime`` output (``import time: self | cumulative | name``)."""
    return {line.rsplit("|", 1)[1].strip() for line in importtime_log.splitlines()
            if line.startswith("import time:") and "|" in line}


def _top_level(modules: set[str]) -> set[str]:
    return {m.split(".", 1)[0] for m in modules}


@pytest.mark.parametrize("flag", ["--version", "--help"])
def test_version_and_help_import_nothing_heavy(flag: str, tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "memorywire", flag],
                          env=_env(tmp_path), cwd=tmp_path, capture_output=True, text=True,
                          timeout=120, check=True)
    if flag == "--version":
        assert done.stdout.startswith("memorywire ") and "(wire v0)" in done.stdout
    else:
        assert "forget" in done.stdout and "receipt" in done.stdout
    modules = _imported(done.stderr)
    assert "memorywire.cli.main" in modules  # the log is the command's own
    assert not _top_level(modules) & set(HEAVY), sorted(_top_level(modules) & set(HEAVY))
    # Nor the rest of what a data command needs: no store, model, governance or validator.
    assert not {m for m in modules if m.startswith(("memorywire.store", "memorywire.embed",
                                                    "memorywire.governance", "pydantic"))}


def test_the_console_script_module_runs_the_cli(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "memorywire", "schema", "--list"],
                          env=_env(tmp_path), cwd=tmp_path, capture_output=True, text=True,
                          timeout=120, check=True)
    assert "remember" in done.stdout.split()


def test_choices_written_out_for_help_match_their_sources() -> None:
    assert tuple(FORMATS) == portability.FOREIGN_FORMATS
    assert tuple(c.value for c in OnConflict) == portability.ON_CONFLICT


def _rpc(proc: subprocess.Popen[str], doc: dict[str, object]) -> dict[str, object]:
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(json.dumps(doc) + "\n")
    proc.stdin.flush()
    if "id" not in doc:
        return {}
    reply: dict[str, object] = json.loads(proc.stdout.readline())
    return reply


@pytest.mark.slow
def test_mcp_answers_the_handshake_without_loading_the_model(tmp_path: Path) -> None:
    """The default store with the default (MiniLM) embedder, as a desktop client starts it;
    the import log is written to a file, so the server never blocks on a full stderr pipe."""
    home = tmp_path / "home"
    home.mkdir()
    log = tmp_path / "importtime.log"
    argv = [sys.executable, "-X", "importtime", "-m", "memorywire", "mcp"]
    with log.open("w", encoding="utf-8") as err, subprocess.Popen(
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, env=_env(home),
        cwd=tmp_path, text=True,
    ) as proc:
        init = _rpc(proc, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "test", "version": "0"}}})
        _rpc(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        tools = _rpc(proc, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        assert proc.stdin is not None
        proc.stdin.close()  # end of the session: the server exits
        proc.wait(timeout=120)
    result = init["result"]
    assert isinstance(result, dict) and result["serverInfo"]["name"]  # type: ignore[index]
    names = {t["name"] for t in tools["result"]["tools"]}  # type: ignore[index]
    assert {"remember", "recall", "forget"} <= names
    assert proc.returncode == 0
    modules = _top_level(_imported(log.read_text(encoding="utf-8")))
    assert "memorywire" in modules
    assert not modules & set(MODEL), sorted(modules & set(MODEL))
    assert "jsonschema" not in modules  # no document was checked yet
    # Nor was the model's graph built or cached anywhere under this home.
    assert not (home / ".cache").exists()
