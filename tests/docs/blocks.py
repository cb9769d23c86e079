"""The code blocks of the project's markdown, and the ``docs-test`` markers above them.

Every fenced block says what it is: ``sh``/``bash``/``shell``/``console`` and ``python``
blocks are run by tests/docs/test_docs_blocks.py; any other language (``text``, ``json``,
``toml``, ...) is shown, never run. A fence with no language is an error, so a shell block
cannot hide from the test by leaving its language out.

A block that cannot run in a fresh folder on this machine carries, on the nearest non-blank
line above its fence, an HTML comment (invisible on GitHub and on the site)::

    <!-- docs-test: skip (the reason, never empty) -->
    <!-- docs-test: session NAME -->
    <!-- docs-test: session NAME; server PORT -->

``session NAME`` runs the page's blocks of that name in page order, in one folder and one
home (a token created by one, used by the next). ``server PORT`` starts the block in the
background; the session's later blocks run once PORT accepts connections, the block must
still be running when they are done, and it is then stopped. A marker that is malformed,
unknown, without a reason, or above no runnable block is an error too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

RUN = ("sh", "bash", "shell", "console", "python")
_FENCE = re.compile(r"^( *)(```+|~~~+)\s*([\w+-]*)[^\n]*$")
_MARKER = re.compile(r"^\s*<!--\s*docs-test:(.*?)-->\s*$")
_SKIP = re.compile(r"^skip\s*\((.*)\)$", re.S)
_SESSION = re.compile(r"^session\s+([\w-]+)$")
_SERVER = re.compile(r"^server\s+(\d{2,5})$")


@dataclass(frozen=True)
class Block:
    """One fenced block and what its marker says about running it."""

    page: Path
    line: int
    lang: str
    code: str
    skip: str | None = None
    session: str | None = None
    server: int | None = None

    @property
    def runs(self) -> bool:
        return self.lang in RUN and self.skip is None


@dataclass
class Page:
    """A page's blocks and what is wrong with its fences and markers."""

    blocks: list[Block] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Marker:
    skip: str | None = None
    session: str | None = None
    server: int | None = None


def parse_marker(body: str) -> tuple[Marker, list[str]]:
    """The directives of one ``docs-test:`` comment, and what is wrong with them."""
    session: str | None = None
    server: int | None = None
    problems: list[str] = []
    body = body.strip()
    if body.startswith("skip"):  # the reason is free text, ";" included: nothing may follow
        if m := _SKIP.match(body):
            reason = m.group(1).strip()
            if reason:
                return Marker(skip=reason), []
            return Marker(skip=""), ["`skip` needs a reason: skip (why this block cannot "
                                     "run here)"]
        return Marker(), [f"`{body}`: a skip needs its reason in parentheses, and nothing "
                          "else in the marker"]
    for part in (p.strip() for p in body.split(";")):
        if part.startswith("skip"):
            problems.append("a skipped block cannot also be in a session or a server")
        elif m := _SESSION.match(part):
            session = m.group(1)
        elif m := _SERVER.match(part):
            server = int(m.group(1))
        else:
            problems.append(f"unknown docs-test directive `{part}` "
                            "(known: skip (REASON), session NAME, server PORT)")
    return Marker(None, session, server), problems


def parse(page: Path, text: str) -> Page:
    """Blocks and problems of one page's markdown ``text``."""
    out = Page()
    lines = text.splitlines()
    pending: tuple[int, Marker] | None = None
    i = 0
    while i < len(lines):
        line = lines[i]
        if m := _MARKER.match(line):
            if pending is not None:
                out.problems.append(f"{page.name}:{pending[0]}: marker above no code block")
            marker, problems = parse_marker(m.group(1))
            out.problems += [f"{page.name}:{i + 1}: {p}" for p in problems]
            pending = (i + 1, marker)
            i += 1
            continue
        fence = _FENCE.match(line)
        if not fence:
            if line.strip() and pending is not None:
                out.problems.append(f"{page.name}:{pending[0]}: marker above no code block")
                pending = None
            i += 1
            continue
        indent, mark, lang = len(fence.group(1)), fence.group(2), fence.group(3).lower()
        closing = re.compile(rf"^ {{0,{indent + 3}}}{mark[0]}{{{len(mark)},}}\s*$")
        end = i + 1
        while end < len(lines) and not closing.match(lines[end]):
            end += 1
        body = "\n".join(ln[indent:] if ln[:indent].isspace() else ln.lstrip()
                         for ln in lines[i + 1:end]) + "\n"
        marker = pending[1] if pending else Marker()
        if not lang:
            out.problems.append(f"{page.name}:{i + 1}: a fence with no language (``` sh or "
                                "python to run it, ``` text for output, diagrams, synopses)")
        elif pending is not None and lang not in RUN:
            out.problems.append(f"{page.name}:{pending[0]}: marker above a `{lang}` block, "
                                "which is never run")
        out.blocks.append(Block(page, i + 1, lang, body, marker.skip, marker.session,
                                marker.server))
        pending = None
        i = end + 1
    if pending is not None:
        out.problems.append(f"{page.name}:{pending[0]}: marker above no code block")
    return out


@dataclass(frozen=True)
class Unit:
    """What runs in one fresh folder and home: a lone block, or a session's blocks."""

    name: str
    blocks: tuple[Block, ...]


def units(blocks: list[Block]) -> list[Unit]:
    """The runnable blocks of one page, grouped: sessions by name, every other block alone."""
    out: list[Unit] = []
    sessions: dict[str, list[Block]] = {}
    for block in blocks:
        if not block.runs:
            continue
        if block.session is None:
            out.append(Unit(f"{block.page.name}:{block.line}", (block,)))
        else:
            if block.session not in sessions:
                sessions[block.session] = []
                out.append(Unit(f"{block.page.name}[{block.session}]", ()))
            sessions[block.session].append(block)
    return [Unit(u.name, tuple(sessions[u.name.split("[")[1][:-1]])) if not u.blocks else u
            for u in out]


def console_commands(code: str) -> str:
    """A ``console`` block's commands: the lines after ``$ ``, output lines dropped."""
    return "\n".join(ln[2:] for ln in code.splitlines() if ln.startswith("$ ")) + "\n"
