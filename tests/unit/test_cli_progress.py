"""Long moves say how far they are on stderr (records done / total, rate) when stderr is a
terminal or with ``--progress``, and never write progress to stdout, which carries the dump
or the report."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from memorywire.cli.progress import Progress
from memorywire.embed.hashing import HashingEmbedder
from memorywire.store.sqlite import SqliteStore
from memorywire.wire.models import MemoryType, RememberRequest

SRC = str(Path(__file__).resolve().parents[2] / "src")
N = 30


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_terminal_gets_one_line_redrawn_with_the_rate() -> None:
    out, clock = _Terminal(), _Clock()
    progress = Progress("migrate", stream=out, clock=clock)
    assert progress.enabled  # a terminal: on without asking
    progress(0, 1000)
    clock.now += 2.0
    progress(500, 1000)
    progress.close()
    text = out.getvalue()
    assert text.startswith("\r") and text.endswith("\n") and text.count("\n") == 1
    assert "migrate: 500/1000 records (50%), 250 records/s" in text


def test_a_log_gets_lines_at_most_once_a_second_and_the_last_one() -> None:
    out, clock = io.StringIO(), _Clock()
    assert not Progress("import", stream=out).enabled  # not a terminal: off unless asked
    progress = Progress("import", stream=out, enabled=True, clock=clock)
    for done in range(0, 1000, 100):
        progress(done, 1000)
        clock.now += 0.25
    progress(1000, 1000)
    progress.close()
    lines = out.getvalue().splitlines()
    assert "\r" not in out.getvalue()
    assert lines[0].startswith("import: 0/1000 records (0%)")
    assert lines[-1].startswith("import: 1000/1000 records (100%)")
    assert len(lines) == 4  # 0, 400, 800 (a second apart each), then the last
    unknown = io.StringIO()
    export = Progress("export", stream=unknown, enabled=True, clock=clock)
    export(7, None)
    assert unknown.getvalue().startswith("export: 7 records, ")


def _seed(path: Path) -> None:
    async def go() -> None:
        store = SqliteStore(path, embedder=HashingEmbedder())
        try:
            await store.remember_many([
                RememberRequest(agent_id="a", id=f"r{i}", type=MemoryType.SEMANTIC,
                                content=f"memory {i}") for i in range(N)])
        finally:
            await store.aclose()
    anyio.run(go)


def _cli(*args: str) -> subprocess.CompletedProcess[bytes]:
    argv = [sys.executable, "-m", "memorywire.cli", *args, "--embedder", "hashing"]
    return subprocess.run(argv, env={**os.environ, "PYTHONPATH": SRC}, capture_output=True,
                          timeout=120, check=False)


@pytest.mark.slow
def test_migrate_import_and_export_report_progress_on_stderr_only(tmp_path: Path) -> None:
    _seed(tmp_path / "src.db")
    src = f"sqlite:///{tmp_path / 'src.db'}"
    quiet = _cli("migrate", "--from", src, "--to", f"sqlite:///{tmp_path / 'q.db'}")
    assert quiet.returncode == 0, quiet.stderr
    assert b"records/s" not in quiet.stderr  # stderr is a pipe here: no progress unasked
    moved = _cli("migrate", "--from", src, "--to", f"sqlite:///{tmp_path / 'm.db'}",
                 "--page", "10", "--progress")
    assert moved.returncode == 0, moved.stderr
    assert f"migrate: {N}/{N} records (100%)".encode() in moved.stderr
    assert b"records/s" not in moved.stdout
    assert json.loads(moved.stdout)["verified"] == N  # stdout is the report alone

    dump = _cli("export", "--store", src, "--progress")
    assert dump.returncode == 0, dump.stderr
    assert f"export: {N}/{N} records (100%)".encode() in dump.stderr
    lines = dump.stdout.decode().splitlines()
    assert len(lines) == N + 2 and all(json.loads(line) for line in lines)  # the dump alone
    (tmp_path / "dump.jsonl").write_bytes(dump.stdout)

    loaded = _cli("import", "--store", f"sqlite:///{tmp_path / 'i.db'}",
                  str(tmp_path / "dump.jsonl"), "--progress")
    assert loaded.returncode == 0, loaded.stderr
    assert f"import: {N}/{N} records (100%)".encode() in loaded.stderr
    assert json.loads(loaded.stdout)["inserted"] == N
    silent = _cli("import", "--store", f"sqlite:///{tmp_path / 'j.db'}",
                  str(tmp_path / "dump.jsonl"), "--no-progress")
    assert silent.returncode == 0 and b"records/s" not in silent.stderr
