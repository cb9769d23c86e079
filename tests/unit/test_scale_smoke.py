"""The scale benchmark's core at small n: its store top-k must equal numpy brute force."""

from __future__ import annotations

import importlib.util
import sys
from dataclasses import replace
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from memorywire.embed.hashing import HashingEmbedder
from memorywire.errors import InvalidRequest
from memorywire.store.sqlite import SqliteStore
from memorywire.wire.models import RecallRequest, RememberRequest

pytestmark = pytest.mark.anyio
SCALE = Path(__file__).resolve().parents[2] / "benchmarks" / "scale.py"


def _scale() -> ModuleType:
    spec = importlib.util.spec_from_file_location("memorywire_bench_scale", SCALE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(("n", "agents"), [(2_000, 1), (3_000, 30)])
async def test_scale_core_is_exact(tmp_path: Path, n: int, agents: int) -> None:
    scale = _scale()
    result = await scale.run_scale(HashingEmbedder(), n=n, agents=agents, base=300, queries=20,
                                   batch=700, db_path=tmp_path / "scale.db", end_to_end=3)
    assert result["exact_match_rate"] == 1.0
    assert result["n"] == n and result["file_mb"] > 0
    assert result["db_recall_p50_ms"] > 0 and result["ingest_per_s"] > 0
    assert "perturb" in result["notes"] or "noise" in result["notes"]
    # the compute floor the store's recalls are judged against, and both ratios to it
    assert result["numpy_floor_p50_ms"] > 0
    assert result["vector_over_floor"] == round(
        result["db_recall_p50_ms"] / result["numpy_floor_p50_ms"], 2)
    assert result["hybrid_over_floor"] == round(
        result["db_recall_hybrid_p50_ms"] / result["numpy_floor_p50_ms"], 2)


async def test_precomputed_vectors_are_stored_and_checked(tmp_path: Path) -> None:
    embedder = HashingEmbedder()
    store = SqliteStore(tmp_path / "v.db", embedder=embedder,
                        recall=replace(SqliteStore.DEFAULT_RECALL, relevance_floor=-1.0,
                                       lexical_floor=-1.0))
    try:
        rng = np.random.default_rng(3)
        vecs = rng.standard_normal((3, embedder.dim)).astype(np.float32)
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        reqs = [RememberRequest(agent_id="a", type="semantic", content=f"row {i}", id=f"r{i}")
                for i in range(3)]
        await store.remember_many(reqs, vectors=vecs)
        for i in range(3):
            resp = await store.recall_by_vector(
                RecallRequest(agent_id="a", query="what about this", k=1), vecs[i])
            assert [h.id for h in resp.results] == [f"r{i}"]
            assert resp.results[0].score > 0
        with pytest.raises(InvalidRequest):
            await store.remember_many(reqs[:2], vectors=vecs)
        with pytest.raises(InvalidRequest):
            await store.remember_many(reqs, vectors=vecs[:, :-1])
        bad = vecs.copy()
        bad[0, 0] = np.nan
        with pytest.raises(InvalidRequest):
            await store.remember_many(reqs, vectors=bad)
        with pytest.raises(InvalidRequest):
            await store.recall_by_vector(RecallRequest(agent_id="a", query="x"), vecs[0, :5])
    finally:
        await store.aclose()
