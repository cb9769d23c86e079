"""The version this package reports, and refusing to run mixed with memorywire 0.5.

The real case (0.5.0 installed by pip, this code on the path) is ``packaging_tests``; here
the same rules on described installations, plus the CLI and SDK doors on this environment.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

import memorywire
from memorywire import installation
from memorywire._version import __version__
from memorywire.cli import main
from memorywire.installation import Distribution, problem, version_line

ROOT = Path(__file__).resolve().parents[2]


def test_the_version_is_above_the_first_implementation_and_built_from_one_place() -> None:
    major, minor, _ = (int(p) for p in __version__.split("."))
    assert (major, minor) > (0, 5)
    assert memorywire.__version__ == __version__
    with (ROOT / "pyproject.toml").open("rb") as fh:
        project = tomllib.load(fh)
    assert project["project"]["dynamic"] == ["version"]
    assert project["tool"]["hatch"]["version"]["path"] == "src/memorywire/_version.py"


def test_version_line_reads_the_metadata_and_names_a_stale_install() -> None:
    assert version_line([Distribution(__version__, "/site")]) == f"memorywire {__version__}"
    stale = version_line([Distribution("0.1.0", "/site")])
    assert stale.startswith("memorywire 0.1.0 (installed metadata;") and __version__ in stale
    assert "not installed" in version_line([])


def test_a_first_implementation_on_the_path_is_refused_with_the_fix(tmp_path: Path) -> None:
    assert problem([Distribution(__version__, "/venv/site")], tmp_path) is None
    assert problem([Distribution("0.1.0", "/venv/site")], tmp_path) is None  # our own dev
    text = problem([Distribution(__version__, "/venv/site"),
                    Distribution("0.5.0", "/usr/lib/python3/site")], tmp_path)
    assert text is not None
    assert "0.5.0 in /usr/lib/python3/site" in text and "pip uninstall memorywire" in text


def test_its_files_inside_this_package_are_refused(tmp_path: Path) -> None:
    (tmp_path / "recovery").mkdir()
    (tmp_path / "recovery" / "engine.py").write_text("")
    text = problem([], tmp_path)
    assert text is not None and "recovery/engine.py" in text and "copied over" in text


def test_cli_and_sdk_refuse_while_mixed(monkeypatch: pytest.MonkeyPatch,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(installation, "installed",
                        lambda: [Distribution("0.5.0", "/elsewhere/site-packages")])
    assert main(["schema", "--list"]) == 2
    err = capsys.readouterr().err
    assert "memorywire 0.5.0 in /elsewhere/site-packages" in err
    assert "Traceback" not in err
    with pytest.raises(ImportError, match="cannot be used side by side"):
        memorywire.Memory  # noqa: B018  (the lazy client import is the SDK's door)
    monkeypatch.undo()
    assert memorywire.Memory is not None


def test_cli_version_prints_the_installed_metadata(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    out = " ".join(capsys.readouterr().out.split())
    assert out.startswith(f"memorywire {installation.installed()[0].version}")
    assert out.endswith("(wire v0)")
