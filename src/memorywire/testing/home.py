"""A test session's own home, so that no test writes into the real one.

A command run with no settings keeps its data under the data directory (``$MEMORYWIRE_HOME``,
else ``$XDG_DATA_HOME/memorywire``, else ``~/.local/share/memorywire``: the default store, its
governance database and keys, ``tokens.db``, ``router-outbox.db``), and PostgreSQL
governance keeps its keys in ``~/.memorywire``. A test that forgets to name a temporary path
would otherwise write there, and a developer's own settings (``MEMORYWIRE_STORE``,
``MEMORYWIRE_SERVER``, ...) would change what a test runs on.

:func:`private_home` points ``HOME``, the XDG base directories and ``MEMORYWIRE_HOME`` at a
temporary folder and removes every variable that configures a deployment (each
``MEMORYWIRE_<setting>`` of :class:`~memorywire.server.config.ServerConfig`, the config file,
the key files, the CLI's server and token). Variables that steer the tests themselves
(``MEMORYWIRE_TEST_PG_DSN``, the backend URLs, the conformance report) are kept, and so is
``MEMORYWIRE_CACHE_DIR`` when set: pointing the model cache somewhere is a deliberate choice
(a CI cache); unset, the built model lands in the temporary home like everything else. The
machine's pip configuration stays reachable through ``PIP_CONFIG_FILE``, as installs in the
packaging tests need its package sources.

:func:`real_data_dirs` and :func:`snapshot` let a session check, at its end, that the real
data directories are as it found them; :func:`private_home_session` is that fixture, used by
every test root's ``conftest.py``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import fields
from pathlib import Path

import pytest

__all__ = [
    "DEPLOYMENT_VARIABLES",
    "changes",
    "private_home",
    "private_home_session",
    "real_data_dirs",
    "snapshot",
]

#: Configure a deployment without being a ``ServerConfig`` setting.
_OTHER_SETTINGS = ("MEMORYWIRE_CONFIG", "MEMORYWIRE_AUDIT_KEY_FILE", "MEMORYWIRE_SERVER",
                   "MEMORYWIRE_TOKEN")
Snapshot = dict[str, tuple[int, int]]


def _deployment_variables() -> tuple[str, ...]:
    from memorywire.server.config import ServerConfig

    settings = (f"MEMORYWIRE_{f.name.upper()}" for f in fields(ServerConfig))
    return (*settings, *_OTHER_SETTINGS)


#: Removed for the session (``MEMORYWIRE_HOME`` is set instead).
DEPLOYMENT_VARIABLES = _deployment_variables()


def _home_of(env: Mapping[str, str]) -> Path:
    home = env.get("HOME")
    return Path(home) if home else Path.home()


def real_data_dirs(env: Mapping[str, str] | None = None) -> list[Path]:
    """Where commands with no settings write, under the environment ``env`` (the process's)."""
    env = os.environ if env is None else env
    home = _home_of(env)
    if env.get("MEMORYWIRE_HOME"):
        data = Path(env["MEMORYWIRE_HOME"])
    else:
        xdg = env.get("XDG_DATA_HOME")
        data = (Path(xdg) if xdg else home / ".local" / "share") / "memorywire"
    return [data, home / ".memorywire"]


def snapshot(dirs: list[Path]) -> Snapshot:
    """Every file under ``dirs`` with its size and modification time (absent dirs: none)."""
    found: Snapshot = {}
    for root in dirs:
        if not root.is_dir():
            continue
        for path in sorted(root.rglob("*")):
            try:
                st = path.stat()
            except OSError:  # removed while we looked
                continue
            if path.is_file():
                found[str(path)] = (st.st_size, st.st_mtime_ns)
    return found


def changes(before: Snapshot, after: Snapshot) -> list[str]:
    """``added``/``removed``/``changed`` lines, one per file that differs."""
    out = [f"added {p}" for p in sorted(after.keys() - before.keys())]
    out += [f"removed {p}" for p in sorted(before.keys() - after.keys())]
    out += [f"changed {p}" for p in sorted(before.keys() & after.keys())
            if before[p] != after[p]]
    return out


def _pip_config(env: Mapping[str, str]) -> str | None:
    home = _home_of(env)
    xdg = env.get("XDG_CONFIG_HOME")
    for candidate in ((Path(xdg) if xdg else home / ".config") / "pip" / "pip.conf",
                      home / ".pip" / "pip.conf"):
        if candidate.is_file():
            return str(candidate)
    return None


def private_env(root: Path, env: Mapping[str, str] | None = None) -> dict[str, str | None]:
    """The changes :func:`private_home` makes to ``env``: a value, or ``None`` to remove."""
    env = os.environ if env is None else env
    home = root / "home"
    out: dict[str, str | None] = dict.fromkeys(DEPLOYMENT_VARIABLES)
    out.update({
        "HOME": str(home),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "MEMORYWIRE_HOME": str(home / ".local" / "share" / "memorywire"),
    })
    pip = env.get("PIP_CONFIG_FILE") or _pip_config(env)
    if pip:
        out["PIP_CONFIG_FILE"] = pip
    return out


@contextmanager
def private_home(root: Path) -> Iterator[Path]:
    """``os.environ`` pointed at a home under ``root`` (created); restored on exit."""
    changed = private_env(root)
    saved = {name: os.environ.get(name) for name in changed}
    home = Path(str(changed["HOME"]))
    home.mkdir(parents=True, exist_ok=True)
    try:
        for name, value in changed.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        yield home
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@pytest.fixture(scope="session", autouse=True, name="memorywire_private_home")
def private_home_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Every test of the session runs in a private home; at the end, the real data
    directories must be as the session found them (a test wrote there otherwise, or another
    process used them meanwhile: the failure names the files either way)."""
    real = real_data_dirs()
    before = snapshot(real)
    with private_home(tmp_path_factory.mktemp("private-home")) as home:
        yield home
    differ = changes(before, snapshot(real))
    if differ:
        pytest.fail("the real data directories changed during the test run (a test wrote "
                    "outside its temporary folder?):\n  " + "\n  ".join(differ),
                    pytrace=False)
