"""Choose an embedder from a configuration string.

Specs::

    minilm                      the default: all-MiniLM-L6-v2, ONNX fp32 (process-wide instance)
    minilm-int8                 the same model quantised to int8 (opt-in; different vectors)
    hashing[:DIM]               bag-of-words hashing, for tests only (DIM defaults to 64)
    sentence-transformers[:M]   sentence-transformers model M (hub name or folder)
    openai:BASE_URL#MODEL       an OpenAI-compatible ``/embeddings`` server; the API key, if
                                any, comes from ``MEMORYWIRE_EMBEDDING_API_KEY``
"""

from __future__ import annotations

import os
import threading
from typing import TypeVar

from memorywire.embed.base import Embedder
from memorywire.embed.hashing import HashingEmbedder
from memorywire.embed.minilm import MiniLMEmbedder
from memorywire.embed.model_cache import Precision
from memorywire.errors import InvalidRequest

__all__ = [
    "API_KEY_ENV",
    "BATCH_WAIT_ENV",
    "LANES_ENV",
    "THREADS_ENV",
    "default_embedder",
    "embedder_from_spec",
]

API_KEY_ENV = "MEMORYWIRE_EMBEDDING_API_KEY"
THREADS_ENV = "MEMORYWIRE_EMBED_THREADS"
#: Model calls that may run at once (each with THREADS_ENV intra-op threads).
LANES_ENV = "MEMORYWIRE_EMBED_LANES"
#: Longest a model call waits for concurrent requests to join it (milliseconds, default 2).
BATCH_WAIT_ENV = "MEMORYWIRE_EMBED_BATCH_WAIT_MS"

N = TypeVar("N", int, float)

_shared: dict[Precision, MiniLMEmbedder] = {}
_shared_lock = threading.Lock()


def default_embedder() -> MiniLMEmbedder:
    """The process-wide fp32 MiniLM; loading it once saves ~90 MB per extra copy.

    Its intra-op thread count comes from ``MEMORYWIRE_EMBED_THREADS`` (default 1; 2 is the
    single-user laptop profile: lower latency per call, but it takes a second core), and the
    micro-batching wait from ``MEMORYWIRE_EMBED_BATCH_WAIT_MS`` (default 2, 0 turns it off).
    """
    return _shared_minilm("fp32")


def _shared_minilm(precision: Precision) -> MiniLMEmbedder:
    with _shared_lock:
        embedder = _shared.get(precision)
        if embedder is None:
            embedder = MiniLMEmbedder(
                precision=precision,
                threads=_number_from_env(THREADS_ENV, "1", int),
                batch_wait_ms=_number_from_env(BATCH_WAIT_ENV, "2", float),
                lanes=_number_from_env(LANES_ENV, "1", int),
            )
            _shared[precision] = embedder
        return embedder


def _number_from_env(name: str, default: str, kind: type[N]) -> N:
    raw = os.environ.get(name, default)
    try:
        return kind(raw)
    except ValueError:
        raise InvalidRequest(f"{name} must be a number, not {raw!r}") from None


def embedder_from_spec(spec: str) -> Embedder:
    kind, sep, arg = spec.strip().partition(":")
    kind = kind.lower()
    if kind in ("minilm", "minilm-fp32") and not sep:
        return default_embedder()
    if kind == "minilm-int8" and not sep:
        return _shared_minilm("int8")
    if kind == "hashing":
        if not sep:
            return HashingEmbedder()
        try:
            dim = int(arg)
        except ValueError:
            raise InvalidRequest(f"hashing dimension must be an integer, not {arg!r}") from None
        if dim < 8:
            raise InvalidRequest("hashing dimension must be at least 8")
        return HashingEmbedder(dim)
    if kind in ("sentence-transformers", "st"):
        from memorywire.embed.sbert import SentenceTransformerEmbedder

        return SentenceTransformerEmbedder(arg or None)
    if kind == "openai":
        base_url, hash_sign, model = arg.rpartition("#")
        if not hash_sign or not base_url or not model:
            raise InvalidRequest(f"expected openai:BASE_URL#MODEL, got {spec!r}")
        from memorywire.embed.openai_compat import OpenAICompatibleEmbedder

        return OpenAICompatibleEmbedder(base_url, model, api_key=os.environ.get(API_KEY_ENV))
    raise InvalidRequest(
        f"unknown embedder spec {spec!r}; expected minilm, minilm-int8, hashing[:DIM], "
        "sentence-transformers[:MODEL] or openai:BASE_URL#MODEL"
    )
