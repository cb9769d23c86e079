"""The README's ten-line example is executed, so the first thing a user copies works."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def _python_blocks() -> list[str]:
    text = README.read_text(encoding="utf-8")
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


def test_readme_starts_with_the_two_commands() -> None:
    text = README.read_text(encoding="utf-8")
    first_block = re.search(r"```sh\n(.*?)```", text, flags=re.S)
    assert first_block is not None
    assert first_block.group(1).splitlines()[:2][0].startswith("make demo")
    assert first_block.group(1).splitlines()[:2][1].startswith("make test")


def test_readme_example_runs_verbatim_in_an_empty_folder_with_an_empty_home(
    tmp_path: Path,
) -> None:
    """As on a fresh machine: no data folder, no model cache, no file the example expects."""
    blocks = _python_blocks()
    assert blocks, "README lost its example"
    code = blocks[0]
    assert len([ln for ln in code.splitlines() if ln.strip()]) <= 10
    cwd, home = tmp_path / "work", tmp_path / "home"
    cwd.mkdir()
    home.mkdir()
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("MEMORYWIRE_", "XDG_"))}
    env["HOME"] = str(home)
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=180, cwd=cwd,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.splitlines()
    assert "peanuts" in out[0]
    assert out[-1] == "[]"
    assert [p.name for p in cwd.iterdir() if p.suffix == ".db"] == ["memorywire-readme.db"]
