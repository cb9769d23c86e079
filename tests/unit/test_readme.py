"""The README's ten-line example is executed, so the first thing a user copies works."""

from __future__ import annotations

import json
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


def test_readme_example_run_twice_on_the_governed_default_stores_each_memory_once(
    tmp_path: Path,
) -> None:
    """The ten lines on the deployment's default store (``SyncMemory.local()``: governed),
    run twice in one home: the second run's remembers are answered with the first run's
    memories (``deduplicated``), nothing is stored twice, and the audit chain verifies."""
    code = _python_blocks()[0]
    url = 'SyncMemory.local("sqlite:///memorywire-readme.db")'
    assert url in code
    code = code.replace(url, "SyncMemory.local()")
    cwd, home = tmp_path / "work", tmp_path / "home"
    cwd.mkdir()
    home.mkdir()
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("MEMORYWIRE_", "XDG_"))}
    env["HOME"] = str(home)
    check = (
        "import json\n"
        "from memorywire import SyncMemory\n"
        "with SyncMemory.local() as mem:\n"
        "    rows = mem.list(agent_id='travel-bot').memories\n"
        "    again = mem.remember(agent_id='travel-bot', type='semantic',\n"
        "                         content='The user is allergic to peanuts.')\n"
        "    print(json.dumps({'contents': sorted(r.content for r in rows),\n"
        "                      'ids': sorted(r.id for r in rows), 'again': again.id,\n"
        "                      'deduplicated': again.deduplicated,\n"
        "                      'verify': mem.call('audit.verify')}))\n"
    )
    outs = []
    for script in (code, code, check):
        proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                              timeout=180, cwd=cwd, env=env)
        assert proc.returncode == 0, proc.stderr
        outs.append(proc.stdout)
    assert outs[0] == outs[1], "the second run answered differently"
    got = json.loads(outs[2].splitlines()[-1])
    assert got["verify"]["entries"] > 0, "the default store is governed"
    assert got["contents"] == ["Booked a window seat to Lisbon.",
                               "The user is allergic to peanuts."]
    assert got["deduplicated"] is True and got["again"] in got["ids"]
    assert got["verify"]["ok"] is True, got["verify"]
