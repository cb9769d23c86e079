"""The fidelity matrix: migrate a sample in every lifecycle state between every pair of stores.

    python benchmarks/fidelity_matrix.py         # table; rewrites the matrix in docs/portability.md
    python benchmarks/fidelity_matrix.py --json

Every cell comes from a real run: the sample (live, updated, forgotten, merged-away,
archived, recalled records of two agents) is written to the source through the public
operations, migrated with ``memorywire.portability.migrate`` (every loss allowed, so the
plan is recorded rather than refused), and verified by reading every record back. A store
that cannot start is reported, not dropped.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio

from memorywire.core.clock import FakeClock
from memorywire.embed.hashing import HashingEmbedder
from memorywire.portability import migrate
from memorywire.store.portable import ALL_FIELDS
from memorywire.wire.models import (
    ExpireAction,
    ExpirePolicy,
    ExpireRequest,
    ForgetRequest,
    MemoryType,
    MergeRequest,
    RecallRequest,
    RememberRequest,
)

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "portability.md"
START, END = "<!-- fidelity-matrix:start -->", "<!-- fidelity-matrix:end -->"
KINDS = ("memory", "sqlite", "postgres", "mem0")


async def populate(store: Any, clock: FakeClock) -> None:
    for i in range(12):
        clock.advance(1000)
        await store.remember(RememberRequest(
            agent_id="a1", id=f"m{i}", type=MemoryType.SEMANTIC, user_id="u1",
            content=f"fact number {i} about topic {i % 3}", metadata={"i": i},
            confidence=0.5 + i / 100, source="sample"))
    clock.advance(1000)
    await store.remember(RememberRequest(agent_id="a2", id="e1", type=MemoryType.EPISODIC,
                                         content="met Bob at the station",
                                         metadata={"links": ["m1"]}))
    await store.forget(ForgetRequest(agent_id="a1", ids=["m3"]))
    await store.merge(MergeRequest(agent_id="a1", canonical="m4", duplicates=["m5"]))
    await store.expire(ExpireRequest(agent_id="a1", policy=ExpirePolicy(confidence_below=0.52),
                                     action=ExpireAction.ARCHIVE))
    await store.expire(ExpireRequest(agent_id="a1", policy=ExpirePolicy(confidence_below=0.54),
                                     action=ExpireAction.DEMOTE))
    await store.recall(RecallRequest(agent_id="a1", query="fact number 7"))


def factories(tmp: Path, pg: Any) -> dict[str, Callable[[FakeClock], Any]]:
    from memorywire.store.memory import InMemoryStore
    from memorywire.store.sqlite import SqliteStore
    counter = iter(range(10_000))
    out: dict[str, Callable[[FakeClock], Any]] = {
        "memory": lambda c: InMemoryStore(embedder=HashingEmbedder(), clock=c),
        "sqlite": lambda c: SqliteStore(tmp / f"s{next(counter)}.db",
                                        embedder=HashingEmbedder(), clock=c),
    }
    if pg is not None:
        from memorywire.store.postgres import PostgresStore
        out["postgres"] = lambda c: PostgresStore(pg.create_database("fid"),
                                                  embedder=HashingEmbedder(), clock=c)
    try:
        from memorywire.testing.mem0 import mem0_factory
        out["mem0"] = lambda c: mem0_factory(embedder=HashingEmbedder(), clock=c)
    except Exception:  # mem0 not installed: reported as unavailable
        pass
    return out


async def cell(make: dict[str, Callable[[FakeClock], Any]], a: str, b: str,
               tmp: Path) -> dict[str, Any]:
    clock = FakeClock()
    source, target = make[a](clock), make[b](clock)
    try:
        await populate(source, clock)
        result = await migrate(source, target, source_url=f"{a}://", target_url=f"{b}://",
                               checkpoint=tmp / f"{a}-{b}.json", allow_loss=set(ALL_FIELDS))
    finally:
        await source.aclose()
        await target.aclose()
    return {"source": a, "target": b, "records": result.plan.rows,
            "lost": {f.field: f.records for f in result.plan.fields if f.fate == "lost"},
            "transformed": {f.field: f.records for f in result.plan.fields
                            if f.fate == "transformed"},
            "vectors": result.vectors, "verified": result.verified,
            "mismatches": result.mismatches}


def table(cells: list[dict[str, Any]], missing: list[str]) -> str:
    lines = ["| source → target | records | kept | lost (records) | vectors | verified |",
             "|---|---|---|---|---|---|"]
    for c in cells:
        lost = ", ".join(f"`{k}` ({v})" for k, v in c["lost"].items()) or "—"
        kept = "every field" if not c["lost"] else "every other field"
        ok = f"{c['verified']}/{c['records']}" + (" ✗" if c["mismatches"] else " ✓")
        lines.append(f"| {c['source']} → {c['target']} | {c['records']} | {kept} | {lost} "
                     f"| {c['vectors']} | {ok} |")
    if missing:
        lines.append("")
        lines.append(f"Not run here (could not start): {', '.join(missing)}.")
    return "\n".join(lines)


async def main_async(tmp: Path, pg: Any) -> tuple[list[dict[str, Any]], list[str]]:
    make = factories(tmp, pg)
    missing = [k for k in KINDS if k not in make]
    cells = [await cell(make, a, b, tmp) for a in KINDS for b in KINDS if a in make and b in make]
    return cells, missing


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="memorywire-fidelity-"))
    tmp.chmod(0o755)
    pg = None
    try:
        try:
            from memorywire.testing.postgres import start_pgserver
            pg = start_pgserver(tmp / "data")
        except Exception as exc:  # reported below as a store that could not start
            print(f"postgres unavailable: {exc}")
        cells, missing = anyio.run(main_async, tmp, pg)
    finally:
        if pg is not None:
            pg.close()
        shutil.rmtree(tmp, ignore_errors=True)
    if args.json:
        print(json.dumps({"cells": cells, "missing": missing}, indent=2))
        return
    text = table(cells, missing)
    print(text)
    doc = DOC.read_text(encoding="utf-8")
    block = f"{START}\n{text}\n{END}"
    DOC.write_text(re.sub(re.escape(START) + ".*?" + re.escape(END), lambda _: block, doc,
                          flags=re.DOTALL), encoding="utf-8")


if __name__ == "__main__":
    main()
