"""Embedder spec strings and optional extras (the MiniLM specs are tested with the model)."""

from __future__ import annotations

import sys

import pytest

import memorywire.embed as embed
from memorywire.embed import HashingEmbedder, SentenceTransformerEmbedder, embedder_from_spec
from memorywire.errors import CapabilityMissing, InvalidRequest


def test_hashing_specs() -> None:
    default = embedder_from_spec("hashing")
    assert isinstance(default, HashingEmbedder)
    assert default.dim == 64
    sized = embedder_from_spec(" hashing:128 ")
    assert sized.dim == 128
    assert sized.name == "hashing-bow-128"


@pytest.mark.parametrize(
    "spec",
    [
        "",
        "bert",
        "hashing:abc",
        "hashing:4",
        "minilm:extra",
        "openai:http://127.0.0.1:1/v1",
        "openai:#model",
        "openai:http://127.0.0.1:1/v1#",
        "openai:ftp://x#m",
    ],
)
def test_bad_specs_are_invalid_requests(spec: str) -> None:
    with pytest.raises(InvalidRequest):
        embedder_from_spec(spec)


def test_sentence_transformers_missing_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    with pytest.raises(CapabilityMissing, match=r"memorywire\[sentence-transformers\]"):
        SentenceTransformerEmbedder()
    with pytest.raises(CapabilityMissing):
        embedder_from_spec("sentence-transformers")


def test_public_names() -> None:
    for name in embed.__all__:
        assert hasattr(embed, name), name


def test_importing_the_package_stays_light() -> None:
    import subprocess

    code = (
        "import sys, memorywire.embed; "
        "print(','.join(m for m in ('onnxruntime', 'tokenizers', 'httpx', 'onnx', "
        "'sentence_transformers') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert out == ""
