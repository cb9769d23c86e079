"""Conformance outcomes as a JSON file, so backends tested out of process join the matrix.

Some backends (Letta, Cognee) only run in their own virtualenv next to servers a script
starts; ``benchmarks/conformance_matrix.py`` cannot run them itself. Their pytest run writes
a report instead (the plugin does, when ``MEMORYWIRE_CONFORMANCE_REPORT`` names a path) and
the matrix merges every ``conformance-*.json`` it finds. The report has the matrix's own
shape (``backends``, ``scenarios``, ``cells``) plus where it came from (``generated_at``,
``commit``, ``command``), so a merge is a concatenation and provenance can be printed.
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

__all__ = [
    "ENV_COMMAND",
    "ENV_REPORT",
    "RESULTS",
    "Cell",
    "build_report",
    "git_commit",
    "load_report",
    "write_report",
]

ENV_REPORT = "MEMORYWIRE_CONFORMANCE_REPORT"
#: How to reproduce the run (e.g. ``make test-letta``); defaults to the pytest command line.
ENV_COMMAND = "MEMORYWIRE_CONFORMANCE_COMMAND"
RESULTS = ("PASS", "SKIP", "FAIL")


@dataclass(frozen=True)
class Cell:
    backend: str
    scenario: str
    result: str  # PASS | SKIP | FAIL
    reason: str = ""

    def as_dict(self) -> dict[str, str]:
        return {"backend": self.backend, "scenario": self.scenario, "result": self.result,
                "reason": self.reason}


def git_commit(cwd: Path | None = None) -> str:
    """The checked-out commit (``+dirty`` when the tree has changes), or ``unknown``."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=cwd,
                              capture_output=True, text=True, check=True, timeout=10)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               cwd=cwd, capture_output=True, text=True, check=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return head.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


def build_report(cells: list[Cell], *, command: str, commit: str,
                 generated_at: datetime | None = None) -> dict[str, Any]:
    """The report document; backends and scenarios keep the order they were first seen in."""
    backends = list(dict.fromkeys(c.backend for c in cells))
    scenarios = list(dict.fromkeys(c.scenario for c in cells))
    when = (generated_at or datetime.now(UTC)).isoformat(timespec="seconds")
    return {"backends": backends, "scenarios": scenarios,
            "cells": [c.as_dict() for c in cells],
            "generated_at": when, "commit": commit, "command": command}


def write_report(path: Path, report: dict[str, Any]) -> None:
    """Write atomically: a reader never sees half a report."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    tmp.replace(path)


def load_report(path: Path) -> dict[str, Any]:
    """Read and check a report; a malformed one raises ``ValueError`` naming the file."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path}: unreadable conformance report ({exc})") from exc
    if not isinstance(data, dict) or not isinstance(data.get("cells"), list):
        raise ValueError(f"{path}: not a conformance report (no 'cells' list)")
    for cell in data["cells"]:
        if (not isinstance(cell, dict)
                or not all(isinstance(cell.get(k), str) for k in ("backend", "scenario"))
                or cell.get("result") not in RESULTS):
            raise ValueError(f"{path}: malformed cell {cell!r}")
        cell.setdefault("reason", "")
    data.setdefault("backends", list(dict.fromkeys(c["backend"] for c in data["cells"])))
    return data
