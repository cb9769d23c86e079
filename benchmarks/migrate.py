"""Migration throughput: SQLite → PostgreSQL through ``memorywire.portability.migrate``.

    python benchmarks/migrate.py --n 100000 --json        # vectors reused (same embedder)
    python benchmarks/migrate.py --n 20000 --reembed      # target embeds with --target-embedder
    python benchmarks/migrate.py --n 1000000 --source /tmp/src-1m.db --json  # a source built before

An empty PostgreSQL target takes the bulk path (binary ``COPY`` per page, the HNSW index
built once at the end): ``load_s``, ``index_s`` and ``verify_s`` are reported apart, and
``records_per_s`` is the number of records over load and index build together.

The source database is built in a child process (rows with random unit vectors handed to
``import_rows``, so building costs no model time), so the peak RSS reported is the
migration's own: the process that scans, plans, copies, checkpoints and verifies. PostgreSQL
is a pgserver in a temporary folder (or ``--dsn``). Writes ``benchmarks/results/migrate-*.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import numpy as np

from memorywire.core.records import Row
from memorywire.embed.spec import embedder_from_spec
from memorywire.portability import migrate
from memorywire.store.portable import OnConflict
from memorywire.store.postgres import PostgresStore
from memorywire.store.sqlite import SqliteStore
from memorywire.testing.postgres import start_pgserver
from memorywire.wire.models import MemoryType

RESULTS = Path(__file__).resolve().parent / "results"
SOURCE_EMBEDDER = "hashing:384"


async def build(path: str, n: int, agents: int, seed: int) -> None:
    """Rows go in through the portability door (``import_rows`` with their vectors): the
    same rows ``remember`` would store, without its per-write conflict scan, whose cost
    grows with the agent's size and made building a 100k source take longer than moving it.
    """
    store = SqliteStore(path, embedder=embedder_from_spec(SOURCE_EMBEDDER))
    rng = np.random.default_rng(seed)
    start_ms = 1_700_000_000_000
    try:
        for start in range(0, n, 2000):
            count = min(2000, n - start)
            rows = [Row(id=f"m{i:08d}", agent_id=f"agent-{i % agents}", user_id=f"u{i % 7}",
                        type=MemoryType.SEMANTIC,
                        stored=f"memory {i}: the user mentioned topic {i % 997}",
                        metadata={"n": i}, confidence=1.0, source=None,
                        created_at=start_ms + i)
                    for i in range(start, start + count)]
            vecs = rng.standard_normal((count, 384)).astype(np.float32)
            vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
            await store.import_rows(rows, OnConflict.FAIL, vectors=list(vecs))
    finally:
        await store.aclose()


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


async def run(src_path: str, dsn: str, n: int, target_embedder: str, reembed: bool,
              checkpoint: Path) -> dict[str, Any]:
    source = SqliteStore(src_path, embedder=embedder_from_spec(SOURCE_EMBEDDER))
    target = PostgresStore(dsn, embedder=embedder_from_spec(target_embedder))
    rss_before = _rss_mb()
    t0 = time.perf_counter()
    try:
        result = await migrate(source, target, source_url="sqlite:///bench.db",
                               target_url="postgresql://bench", checkpoint=checkpoint,
                               reembed=reembed)
    finally:
        await source.aclose()
        await target.aclose()
    total = time.perf_counter() - t0
    copy_s = result.seconds["copy"]
    index_s = result.seconds.get("index", 0.0)
    out: dict[str, Any] = {
        "n": n, "load": result.load, "vectors": result.vectors,
        "target_embedder": target_embedder, "plan_s": round(result.seconds["plan"], 2),
        "load_s": round(copy_s, 2), "load_records_per_s": round(n / copy_s, 1),
        "index_s": round(index_s, 2), "index": result.index,
        "verify_s": round(result.seconds["verify"], 2), "total_s": round(total, 2),
        "records_per_s": round(n / (copy_s + index_s), 1), "verified": result.verified,
        "mismatches": len(result.mismatches), "rss_before_mb": round(rss_before, 1),
        "peak_rss_mb": round(_rss_mb(), 1),
    }
    if result.vectors != "reused":
        out["embeddings_per_s"] = out["load_records_per_s"]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--agents", type=int, default=10)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--reembed", action="store_true",
                    help="embed on the target with --target-embedder instead of copying vectors")
    ap.add_argument("--target-embedder", default=None,
                    help=f"default: {SOURCE_EMBEDDER} (vectors reused); minilm with --reembed")
    ap.add_argument("--dsn", help="an empty PostgreSQL database instead of a pgserver")
    ap.add_argument("--source", metavar="PATH",
                    help="a source built before with --build-only (same --n/--agents/--seed); "
                         "its building time is not measured")
    ap.add_argument("--build-only", metavar="PATH", help=argparse.SUPPRESS)
    ap.add_argument("--no-save", action="store_true")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if args.build_only:
        anyio.run(build, args.build_only, args.n, args.agents, args.seed)
        return
    target_embedder = args.target_embedder or ("minilm" if args.reembed else SOURCE_EMBEDDER)
    tmp = Path(tempfile.mkdtemp(prefix="memorywire-migrate-"))
    tmp.chmod(0o755)
    handle = None
    try:
        src = args.source or str(tmp / "source.db")
        t0 = time.perf_counter()
        if not args.source:
            subprocess.run([sys.executable, __file__, "--build-only", src, "--n", str(args.n),
                            "--agents", str(args.agents), "--seed", str(args.seed)],
                           check=True)
        build_s: float | None = None if args.source else time.perf_counter() - t0
        if args.dsn:
            dsn = args.dsn
        else:
            handle = start_pgserver(tmp / "data")
            dsn = handle.create_database("migrate")
        res = anyio.run(run, src, dsn, args.n, target_embedder, args.reembed,
                        tmp / "checkpoint.json")
        res["build_source_s"] = None if build_s is None else round(build_s, 1)
        res["cpus"] = os.cpu_count()
        res["load_avg"] = [round(x, 2) for x in os.getloadavg()]
    finally:
        if handle is not None:
            handle.close()
        shutil.rmtree(tmp, ignore_errors=True)
    if not args.no_save:
        RESULTS.mkdir(exist_ok=True)
        name = f"migrate-{args.n}{'-reembed' if args.reembed else ''}.json"
        (RESULTS / name).write_text(json.dumps(res, indent=2) + "\n", encoding="utf-8")
    if args.json:
        print(json.dumps(res, indent=2))
    else:
        for key, value in res.items():
            print(f"{key:<18}{value}")


if __name__ == "__main__":
    main()
