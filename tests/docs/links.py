"""Relative links and ``#anchors`` of the project's markdown, checked without a network.

What a reader clicks on GitHub or in the ``make docs`` site must lead somewhere: a link to a
file of the repository must name one that exists, and a ``#fragment`` must name a heading (or
an ``<a id>``) of the page it points at. Anchors are GitHub's: the heading lowercased, every
character that is not a letter, digit, space, ``-`` or ``_`` dropped, each space a ``-``
(so " — " leaves ``--``), a repeated heading suffixed ``-1``, ``-2``. External links
(``http:``, ``https:``, ``mailto:``) are not fetched: nothing here may reach the network.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

_FENCE = re.compile(r"^ *(```|~~~)")
_CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")
_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_HTML_ID = re.compile(r"<a\s+(?:id|name)=\"([^\"]+)\"")
_EXTERNAL = ("http://", "https://", "mailto:")


@dataclass(frozen=True)
class Broken:
    """One link that leads nowhere: where it is written and why it fails."""

    source: Path
    line: int
    target: str
    why: str

    def __str__(self) -> str:
        where = self.source.relative_to(ROOT) if self.source.is_relative_to(ROOT) else self.source
        return f"{where}:{self.line}: {self.target} ({self.why})"


def doc_pages(root: Path = ROOT) -> list[Path]:
    """The pages a reader meets: the top-level ones and everything under docs/."""
    top = [root / n for n in ("README.md", "CONTRIBUTING.md", "CHANGELOG.md")]
    return [p for p in top if p.is_file()] + sorted((root / "docs").rglob("*.md"))


def _prose_lines(text: str, *, code_spans: bool = False) -> list[tuple[int, str]]:
    """Lines outside fenced code; inline code spans blanked out unless ``code_spans``
    (a link inside backticks is an example, but a heading's code is part of its anchor)."""
    out: list[tuple[int, str]] = []
    fence: str | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        opened = _FENCE.match(line)
        if opened:
            if fence is None:
                fence = opened.group(1)
            elif opened.group(1) == fence:
                fence = None
            continue
        if fence is None:
            out.append((number, line if code_spans else _CODE_SPAN.sub("", line)))
    return out


def slug(heading: str) -> str:
    """GitHub's anchor for a heading's text (markdown links and code marks removed)."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = text.replace("`", "").replace("*", "").lower()
    text = "".join(ch for ch in text if ch.isalnum() or ch in " -_")
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """Every anchor a link into ``page`` may name."""
    seen: dict[str, int] = {}
    found: set[str] = set()
    for _, line in _prose_lines(page.read_text(encoding="utf-8"), code_spans=True):
        found.update(_HTML_ID.findall(line))
        heading = _HEADING.match(line)
        if not heading:
            continue
        base = slug(heading.group(2))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def broken_links(pages: list[Path], root: Path = ROOT) -> list[Broken]:
    """Every relative link or anchor of ``pages`` that names nothing."""
    cache: dict[Path, set[str]] = {}
    out: list[Broken] = []
    for page in pages:
        for number, line in _prose_lines(page.read_text(encoding="utf-8")):
            for target in _LINK.findall(line):
                if target.startswith(_EXTERNAL):
                    continue
                path_part, _, fragment = target.partition("#")
                dest = (page.parent / path_part).resolve() if path_part else page
                if not dest.exists():
                    out.append(Broken(page, number, target, "no such file"))
                    continue
                if not dest.is_relative_to(root):
                    out.append(Broken(page, number, target, "outside the repository"))
                    continue
                if fragment and dest.suffix == ".md":
                    if dest not in cache:
                        cache[dest] = anchors(dest)
                    if fragment not in cache[dest]:
                        out.append(Broken(page, number, target, "no such anchor"))
    return out
