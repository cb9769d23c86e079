"""Micro-batching of concurrent embed calls, with the real MiniLM model."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import numpy as np
import pytest

from memorywire.embed import MiniLMEmbedder, default_embedder
from memorywire.embed import spec as spec_module
from memorywire.embed.base import Vectors
from memorywire.embed.batching import MicroBatcher
from memorywire.embed.spec import BATCH_WAIT_ENV
from memorywire.errors import InvalidRequest

SENTENCES = [
    "the cat sat on the mat",
    "Paris is the capital of France",
    "remember to water the plants on Tuesday",
    "user prefers dark mode in every editor",
    "a much longer sentence about the quarterly planning meeting and its many outcomes",
    "ok",
    "naïve café — Unicode survives batching",
    "the deploy failed because the disk was full",
]


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> MiniLMEmbedder:
    return MiniLMEmbedder(cache_dir=tmp_path_factory.mktemp("mw-cache"), cache_entries=0)


def _in_threads(fn: object, args: list[object]) -> list[object]:
    """Run ``fn(arg)`` for every arg at once; each slot holds the result or the exception."""
    results: list[object] = [None] * len(args)
    barrier = threading.Barrier(len(args))

    def worker(i: int) -> None:
        barrier.wait()
        try:
            results[i] = fn(args[i])  # type: ignore[operator]
        except Exception as exc:
            results[i] = exc

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(len(args))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return results


def test_concurrent_callers_share_model_calls_and_get_their_own_vectors(
    model: MiniLMEmbedder,
) -> None:
    single = np.stack([model.embed([s])[0] for s in SENTENCES])
    calls_before = model.batcher.stats.calls
    seen: list[int] = []
    model.batcher.on_batch = lambda callers, texts: seen.append(callers)
    got = _in_threads(lambda s: model.embed([s]), [s for s in SENTENCES for _ in range(3)])
    for i, vectors in enumerate(got):
        assert isinstance(vectors, np.ndarray), vectors
        cosine = float(vectors[0] @ single[i // 3])
        assert cosine >= 0.9999, (SENTENCES[i // 3], cosine)
    assert max(seen) > 1, "no model call served more than one caller"
    assert model.batcher.stats.calls - calls_before < len(got)


def test_one_failing_request_does_not_fail_the_others(model: MiniLMEmbedder) -> None:
    first = threading.Event()

    def run(texts: list[str]) -> Vectors:
        if not first.is_set():  # hold the model so the other callers queue into one batch
            first.set()
            time.sleep(0.3)
        if any("POISON" in t for t in texts):
            raise ValueError("cannot embed POISON")
        return model.embed(texts)

    batcher = MicroBatcher(run, max_wait_s=0.002, max_batch=32)
    callers: list[list[str]] = [[s] for s in SENTENCES] + [["POISON pill"]]
    results = _in_threads(batcher.embed, callers)
    assert isinstance(results[-1], ValueError)
    for sentence, vectors in zip(SENTENCES, results[:-1], strict=True):
        assert isinstance(vectors, np.ndarray), (sentence, vectors)
        assert float(vectors[0] @ model.embed([sentence])[0]) >= 0.9999
    assert batcher.stats.callers == len(callers) - 1  # the poisoned caller has no vectors


def test_a_lone_caller_never_waits_for_company() -> None:
    waits: list[int] = []

    def run(texts: list[str]) -> Vectors:
        waits.append(len(texts))
        return np.ones((len(texts), 4), dtype=np.float32) / 2

    batcher = MicroBatcher(run, max_wait_s=10.0, max_batch=8)
    started = time.monotonic()
    for _ in range(5):
        assert batcher.embed(["a", "b"]).shape == (2, 4)
    # 10 s of waiting per call would have been visible; the lone caller went straight through.
    assert time.monotonic() - started < 5
    assert waits == [2] * 5


def test_a_batch_never_exceeds_max_batch_texts() -> None:
    sizes: list[int] = []
    gate = threading.Event()

    def run(texts: list[str]) -> Vectors:
        sizes.append(len(texts))
        if not gate.is_set():
            gate.set()
            time.sleep(0.2)
        return np.ones((len(texts), 2), dtype=np.float32)

    batcher = MicroBatcher(run, max_wait_s=0.002, max_batch=4)
    results = _in_threads(batcher.embed, [["x", "y", "z"] for _ in range(6)])
    assert all(isinstance(r, np.ndarray) and r.shape == (3, 2) for r in results)
    assert max(sizes) <= 4
    assert sum(sizes) == 18


def test_batch_wait_is_validated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(InvalidRequest, match="batch_wait_ms"):
        MiniLMEmbedder(cache_dir=tmp_path, batch_wait_ms=-1)
    monkeypatch.setattr(spec_module, "_shared", {})
    monkeypatch.setenv(BATCH_WAIT_ENV, "soon")
    with pytest.raises(InvalidRequest, match=BATCH_WAIT_ENV):
        default_embedder()


def test_batch_wait_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(spec_module, "_shared", {})
    monkeypatch.setenv(BATCH_WAIT_ENV, "0")
    assert default_embedder().batcher.max_wait_s == 0
