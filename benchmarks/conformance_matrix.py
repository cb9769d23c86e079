"""Run the conformance suite over every available backend and print the matrix.

    python benchmarks/conformance_matrix.py           # table, and rewrites docs/conformance.md
    python benchmarks/conformance_matrix.py --json    # {"backends", "scenarios", "cells"}

Live backends (run here, in process): memory, sqlite (temporary files), postgres (pgserver,
or the server named by MEMORYWIRE_TEST_PG_DSN) and mem0 (when installed; in-memory Qdrant, no
LLM). A backend that cannot start is reported, not silently dropped.

Backends that need their own virtualenv and servers (Letta, Cognee) are run by their
``make test-<name>``, whose pytest run writes ``benchmarks/results/conformance-<name>.json``
(see ``memorywire.testing.report``); every such report found is merged as further columns,
and docs/conformance.md says which commit and command produced it. In ``--json`` each
backend is ``{"name", "source"}``: ``source`` is ``"live"`` or the report's path, and a
report's backend also carries its ``generated_at``, ``commit`` and ``command``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from memorywire.testing.harness import Outcome, StoreFactory, run_scenario
from memorywire.testing.report import load_report
from memorywire.testing.scenarios import SCENARIOS

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "conformance.md"
RESULTS = ROOT / "benchmarks" / "results"
REPORT_GLOB = "conformance-*.json"


@contextmanager
def _memory() -> Iterator[StoreFactory]:
    from memorywire.store.memory import InMemoryStore

    class Inspectable(InMemoryStore):
        async def raw_contains(self, needle: str) -> bool:
            return needle in repr(self._rows)

    yield lambda **kw: Inspectable(**kw)


@contextmanager
def _sqlite() -> Iterator[StoreFactory]:
    from memorywire.store.sqlite import SqliteStore

    class Inspectable(SqliteStore):
        def __init__(self, path: Path, **kw: Any) -> None:
            super().__init__(path, **kw)
            self._file = path

        async def raw_contains(self, needle: str) -> bool:
            blob = needle.encode("utf-8")
            return any(
                blob in Path(str(self._file) + s).read_bytes()
                for s in ("", "-wal", "-shm", "-journal")
                if Path(str(self._file) + s).exists()
            )

    tmp = Path(tempfile.mkdtemp(prefix="mw-matrix-sqlite-"))
    try:
        yield lambda **kw: Inspectable(tmp / f"{uuid.uuid4().hex}.db", **kw)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@contextmanager
def _postgres() -> Iterator[StoreFactory]:
    from memorywire.store.postgres import PostgresStore
    from memorywire.testing.postgres import ENV_DSN, PgHandle, start_pgserver

    external = os.environ.get(ENV_DSN)
    tmp: Path | None = None
    if external:
        handle = PgHandle(external)
    else:
        tmp = Path(tempfile.mkdtemp(prefix="memorywire-pg-"))
        tmp.chmod(0o755)
        handle = start_pgserver(tmp / "data")
    try:
        yield lambda **kw: PostgresStore(handle.create_database(), **kw)
    finally:
        handle.close()
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


@contextmanager
def _mem0() -> Iterator[StoreFactory]:
    import importlib.util

    # find_spec, not import: importing mem0 before the adapter does would start telemetry.
    if importlib.util.find_spec("mem0") is None:
        raise RuntimeError("mem0 is not installed: pip install 'memorywire[mem0]'")
    from memorywire.testing.mem0 import mem0_factory

    yield mem0_factory


BACKENDS: dict[str, Callable[[], Any]] = {
    "memory": _memory,
    "sqlite": _sqlite,
    "postgres": _postgres,
    "mem0": _mem0,
}


def run_matrix(backends: list[str]) -> dict[str, Any]:
    cells: list[dict[str, str]] = []
    ran: list[dict[str, str]] = []
    for name in backends:
        with ExitStack() as stack:
            try:
                factory = stack.enter_context(BACKENDS[name]())
            except Exception as exc:  # report why a backend is missing, then go on
                print(f"{name}: not available ({type(exc).__name__}: {exc})", file=sys.stderr)
                continue
            ran.append({"name": name, "source": "live"})
            for sc in SCENARIOS:
                out: Outcome = run_scenario(factory, sc)
                cells.append({"backend": name, "scenario": sc.name, "result": out.result,
                              "reason": out.reason})
    return {"backends": ran, "scenarios": [s.name for s in SCENARIOS], "cells": cells}


def merge_reports(matrix: dict[str, Any], paths: list[Path],
                  root: Path = ROOT) -> dict[str, Any]:
    """Add each report's backends as columns; a name already in the matrix is not replaced.

    A scenario the report lacks (the report predates it) becomes ``NOT RUN``; a scenario
    the suite no longer has is dropped. An unreadable report is reported and skipped.
    """
    names = {b["name"] for b in matrix["backends"]}
    backends = list(matrix["backends"])
    cells = list(matrix["cells"])
    for path in paths:
        try:
            report = load_report(path)
        except ValueError as exc:
            print(f"skipping {exc}", file=sys.stderr)
            continue
        try:
            source = str(path.resolve().relative_to(root.resolve()))
        except ValueError:
            source = str(path)
        by = {(c["backend"], c["scenario"]): c for c in report["cells"]}
        for name in report["backends"]:
            if name in names:
                print(f"{path}: backend {name!r} is already in the matrix; ignored",
                      file=sys.stderr)
                continue
            names.add(name)
            backends.append({"name": name, "source": source,
                             **{k: str(report.get(k, "unknown"))
                                for k in ("generated_at", "commit", "command")}})
            for sc in matrix["scenarios"]:
                cell = by.get((name, sc))
                cells.append(dict(cell) if cell is not None else {
                    "backend": name, "scenario": sc, "result": "NOT RUN",
                    "reason": f"not in {source} (rerun {report.get('command', 'its tests')})"})
    return {**matrix, "backends": backends, "cells": cells}


def find_reports(results: Path = RESULTS) -> list[Path]:
    return sorted(results.glob(REPORT_GLOB))


def _names(matrix: dict[str, Any]) -> list[str]:
    return [b["name"] for b in matrix["backends"]]


def _provenance(matrix: dict[str, Any]) -> list[str]:
    lines = []
    for b in matrix["backends"]:
        if b["source"] == "live":
            lines.append(f"- `{b['name']}`: run live by this script.")
        else:
            lines.append(f"- `{b['name']}`: merged from `{b['source']}`, written by "
                         f"`{b['command']}` at commit `{b['commit']}` on {b['generated_at']}.")
    return lines


def render_markdown(matrix: dict[str, Any]) -> str:
    backends = _names(matrix)
    by = {(c["backend"], c["scenario"]): c for c in matrix["cells"]}
    docs = {s.name: s.doc.splitlines()[0] if s.doc else "" for s in SCENARIOS}
    lines = [
        "# Conformance matrix",
        "",
        "Generated by `python benchmarks/conformance_matrix.py` (do not edit by hand). Each",
        "cell runs one scenario of `memorywire.testing` against a fresh, empty store with the",
        "default embedding model and a fake clock. SKIP happens only when the store does not",
        "declare a capability the scenario needs (e.g. `erase`, which the hard-delete audit",
        "checks through the store's `raw_contains()` hook); the reason below the table names it.",
        "Backends that need their own servers run in their own virtualenv and are merged",
        "from the report their `make test-<name>` writes (see *Backends* below).",
        "",
        "| scenario | " + " | ".join(backends) + " |",
        "|---|" + "---|" * len(backends),
    ]
    notes: list[str] = []
    for sc in matrix["scenarios"]:
        row = []
        for b in backends:
            cell = by[(b, sc)]
            row.append(cell["result"])
            if cell["result"] != "PASS":
                notes.append(f"- `{b}` / `{sc}`: {cell['result']} — {cell['reason']}")
        lines.append(f"| `{sc}` | " + " | ".join(row) + " |")
    lines += ["", "## Backends", "", *_provenance(matrix)]
    lines += ["", "## Not passing", ""] + (notes or ["Every scenario passes on every backend."])
    lines += ["", "## Scenarios", ""]
    lines += [f"- `{name}`: {doc}" if doc else f"- `{name}`" for name, doc in docs.items()]
    return "\n".join(lines) + "\n"


def render_table(matrix: dict[str, Any]) -> str:
    backends = _names(matrix)
    by = {(c["backend"], c["scenario"]): c["result"] for c in matrix["cells"]}
    width = max(len(s) for s in matrix["scenarios"])
    out = ["scenario".ljust(width) + "  " + "  ".join(b.ljust(8) for b in backends)]
    for sc in matrix["scenarios"]:
        out.append(sc.ljust(width) + "  " + "  ".join(by[(b, sc)].ljust(8) for b in backends))
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true", help="print the matrix as JSON")
    ap.add_argument("--backend", action="append", choices=sorted(BACKENDS),
                    help="limit to these backends (repeatable)")
    ap.add_argument("--no-doc", action="store_true", help="do not rewrite docs/conformance.md")
    ap.add_argument("--no-reports", action="store_true",
                    help=f"do not merge benchmarks/results/{REPORT_GLOB}")
    args = ap.parse_args(argv)
    matrix = run_matrix(args.backend or list(BACKENDS))
    if not args.no_reports:
        matrix = merge_reports(matrix, find_reports())
    if args.json:
        print(json.dumps(matrix, indent=2))
    else:
        print(render_table(matrix))
    if not args.no_doc:
        DOC.parent.mkdir(parents=True, exist_ok=True)
        head = render_markdown(matrix)
        keep = ""
        if DOC.exists():
            text = DOC.read_text(encoding="utf-8")
            marker = "\n## PostgreSQL search path\n"
            if marker in text:
                keep = text[text.index(marker):]
        DOC.write_text(head + keep, encoding="utf-8")
    failed = any(c["result"] in ("FAIL", "NOT RUN") for c in matrix["cells"])
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
