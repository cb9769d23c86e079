"""sentence-transformers as an embedder, for models the ONNX builder does not cover.

It pulls in torch (hundreds of MB), so it lives behind the ``sentence-transformers`` extra
and is imported only when constructed.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from memorywire.embed.base import Vectors
from memorywire.errors import CapabilityMissing, InvalidRequest

__all__ = ["SentenceTransformerEmbedder"]

EXTRA_HINT = "pip install 'memorywire[sentence-transformers]'"


class SentenceTransformerEmbedder:
    def __init__(
        self, model: str | None = None, *, device: str = "cpu", batch_size: int = 32
    ) -> None:
        """``model`` is a hub name or a local folder; ``None`` means the packaged MiniLM."""
        try:
            st = importlib.import_module("sentence_transformers")
        except ImportError as exc:
            raise CapabilityMissing(
                f"SentenceTransformerEmbedder needs sentence-transformers; run `{EXTRA_HINT}`"
            ) from exc
        if model is None:
            from memorywire.embed.model_cache import minilm_model_dir

            model_ref = str(minilm_model_dir())
            label = "all-MiniLM-L6-v2"
        else:
            model_ref = model
            label = model.rstrip("/").rsplit("/", 1)[-1]
        self._model: Any = st.SentenceTransformer(model_ref, device=device)
        dim = self._model.get_sentence_embedding_dimension()
        if not isinstance(dim, int):
            raise CapabilityMissing(f"cannot tell the embedding dimension of {model_ref!r}")
        self._dim = dim
        self._name = f"{label}/sentence-transformers"
        self._batch_size = batch_size
        # torch modules are not documented as safe to call from several threads at once.
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return self._name

    @property
    def dim(self) -> int:
        return self._dim

    def embed(self, texts: Sequence[str]) -> Vectors:
        if isinstance(texts, str):
            raise InvalidRequest("embed() takes a sequence of texts, not a single string")
        if not texts:
            return np.zeros((0, self._dim), dtype=np.float32)
        with self._lock:
            vectors = self._model.encode(
                list(texts),
                batch_size=self._batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        return np.asarray(vectors, dtype=np.float32)
