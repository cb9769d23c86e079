"""``benchmarks/scale_pg.py``'s contract on a real pgserver PostgreSQL, at a toy size: the
keys others read (``n``, ``agents``, ``hnsw_build_s``, each leg's ``p50_ms`` and
``recall_at_10``), ``--index none`` measuring the exact path the store takes, and a parallel
COPY that loads every row once."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import psycopg
import pytest

from memorywire.testing import postgres as _pg

pytestmark = [pytest.mark.postgres, pytest.mark.anyio]
pg_server = _pg.pg_server
pg_dsn = _pg.pg_dsn

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "scale_pg.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("memorywire_bench_scale_pg", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


SCALE = _load()


async def test_index_none_measures_the_stores_exact_path_and_builds_nothing(
        pg_dsn: str) -> None:
    res = await SCALE.run(pg_dsn, 900, 30, 8, 1, index="none", copy_conns=2)
    assert (res["n"], res["agents"], res["index"]) == (900, 30, "none")
    assert res["hnsw_build_s"] is None and res["hnsw_mb"] == 0
    assert res["store_path"] == "exact" and "exact_scope_limit" in res["index_note"]
    assert "hnsw" not in res  # a forced HNSW leg would scan the table: not a user's path
    assert res["exact"]["recall_at_10"] == 1.0 and res["exact"]["p50_ms"] > 0
    with psycopg.connect(pg_dsn) as conn:
        rows = conn.execute(
            "SELECT count(*), count(DISTINCT id) FROM memorywire_memories").fetchone()
        ann = conn.execute("SELECT count(*) FROM pg_indexes WHERE indexdef LIKE '%hnsw%'"
                           ).fetchone()
    assert rows == (900, 900) and ann == (0,)  # two COPY slices, each row once


async def test_the_hnsw_run_reports_its_build_and_both_legs(pg_dsn: str) -> None:
    res = await SCALE.run(pg_dsn, 600, 6, 6, 2, hnsw_m=8, ef_construction=32)
    assert res["index"] == "hnsw" and res["hnsw_build_s"] >= 0
    assert (res["hnsw_m"], res["ef_construction"]) == (8, 32)
    for leg in ("exact", "hnsw"):
        assert {"p50_ms", "recall_at_10"} <= set(res[leg])
    assert res["exact"]["recall_at_10"] == 1.0
    # the width the store asked of the graph (pgshare35), per agent: min <= median <= max
    ef = res["hnsw"]["ef_search"]
    assert 0 < ef["min"] <= ef["median"] <= ef["max"] <= 1000
