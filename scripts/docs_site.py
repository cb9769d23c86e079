"""``make docs``: the markdown laid out as in the repository, then ``mkdocs build --strict``.

mkdocs reads pages from one folder below its configuration, but README.md, CONTRIBUTING.md
and CHANGELOG.md sit beside docs/ and link into it (``docs/mcp.md``), and docs/ links back
(``../CONTRIBUTING.md``). Copying the four into ``.cache/docs-site/src`` with their relative
places kept lets every link mean on the site what it means on GitHub, so ``--strict`` can
fail the build on any link or anchor that names nothing, with no rewriting of the pages.
External links are not fetched (no network at build time); tests/docs/test_docs_links.py
checks the same links in the core suite without mkdocs.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / ".cache" / "docs-site" / "src"
TOP = ("README.md", "CONTRIBUTING.md", "CHANGELOG.md")


def lay_out() -> None:
    """A fresh copy of the pages (and docs/'s images and files) under ``SRC``."""
    if SRC.exists():
        shutil.rmtree(SRC)
    SRC.mkdir(parents=True)
    for name in TOP:
        shutil.copy2(ROOT / name, SRC / name)
    shutil.copytree(ROOT / "docs", SRC / "docs")


def main() -> int:
    lay_out()
    cmd = [sys.executable, "-m", "mkdocs", "build", "--strict", "--clean",
           "--config-file", str(ROOT / "mkdocs.yml"), *sys.argv[1:]]
    return subprocess.run(cmd, cwd=ROOT, check=False).returncode


if __name__ == "__main__":
    raise SystemExit(main())
