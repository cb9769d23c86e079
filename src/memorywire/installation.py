"""Which memorywire is installed, and refusing to run mixed with the first implementation.

The first implementation was published under the same name (0.2.0 to 0.5.0). pip replaces it
when this package is installed into the same environment, but two copies can still meet: 0.5.0
in one ``site-packages`` (the system's, the user's) and this code in another folder of the path
or on ``PYTHONPATH``, or 0.5.0's files left inside this package's folder by an install that
did not go through pip. Either way ``import memorywire`` gives one of them and the metadata
(``memorywire --version``, ``pip show``) may describe the other, so a user would be debugging
code that is not the code they think runs. Both are found here, cheaply (one directory scan per
path entry, and four ``stat`` calls), and refused with the commands that fix them:
:func:`problem` returns the text, the CLI prints it and exits 2, and the SDK's ``from
memorywire import Memory`` raises ``ImportError`` with it.
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from memorywire._version import __version__

__all__ = ["FIRST_IMPLEMENTATION", "Distribution", "installed", "problem", "version_line"]

#: Release series of the first implementation on PyPI (its last release is 0.5.0).
FIRST_IMPLEMENTATION = ("0.2.", "0.3.", "0.4.", "0.5.")
#: Modules only the first implementation had; one of them inside this package's folder means
#: its files were copied over this one's.
_ITS_MODULES = ("api.py", "transformer.py", "recovery/engine.py", "store/mem0_adapter.py")
_PACKAGE_DIR = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Distribution:
    """One installed ``memorywire`` distribution on the import path."""

    version: str
    location: str

    @property
    def first_implementation(self) -> bool:
        return self.version.startswith(FIRST_IMPLEMENTATION)


def installed() -> list[Distribution]:
    """Every ``memorywire`` distribution on ``sys.path``, in path order (the first is what
    ``importlib.metadata.version`` and ``pip show`` report)."""
    out = []
    for dist in importlib.metadata.distributions(name="memorywire"):
        where = dist.locate_file("")
        out.append(Distribution(str(dist.version), str(where)))
    return out


def problem(dists: Iterable[Distribution] | None = None,
            package_dir: Path | None = None) -> str | None:
    """Why this environment mixes this package with the first implementation, with the fix;
    ``None`` when it does not."""
    here = package_dir or _PACKAGE_DIR
    stray = [m for m in _ITS_MODULES if (here / m).exists()]
    fix = ("Remove every copy with `pip uninstall memorywire` (repeat until pip finds none), "
           "then install this one: `pip install memorywire-" + __version__ +
           "-py3-none-any.whl` (or `pip install .` in a checkout). See CHANGELOG.md, "
           "'Upgrading from 0.5'.")
    if stray:
        return (f"memorywire {__version__} at {here} holds files of memorywire 0.5 "
                f"({', '.join(stray)}): the first implementation was copied over this one. "
                + fix)
    old = [d for d in (installed() if dists is None else dists) if d.first_implementation]
    if old:
        found = "; ".join(f"{d.version} in {d.location}" for d in old)
        return (f"memorywire {__version__} is running from {here}, but memorywire {found} "
                "is installed on the same path: the first implementation and this one "
                "cannot be used side by side (the same name, different code). " + fix)
    return None


def version_line(dists: Iterable[Distribution] | None = None) -> str:
    """What ``memorywire --version`` prints: the installed metadata's version, and the
    running code's when the two differ (an editable install older than its checkout)."""
    found = list(installed() if dists is None else dists)
    meta = found[0].version if found else None
    if meta is None:
        return f"memorywire {__version__} (not installed: running from {_PACKAGE_DIR})"
    if meta != __version__:
        return (f"memorywire {meta} (installed metadata; the code running is {__version__} "
                f"from {_PACKAGE_DIR}: reinstall to match)")
    return f"memorywire {meta}"
