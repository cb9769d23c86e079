"""A plain function ``text -> list[float]`` as an :class:`~memorywire.embed.base.Embedder`.

The first implementation took such a function as ``embedder=`` (``SqliteVecStore(path,
embedder=fn)``, its examples' fake sha256 embedder among them), so code written for it passes
one. Its rows are L2-normalised here (the protocol's promise; a zero vector stays zero), and
its name carries the function's qualified name and the dimension, so a store refuses a file
built by a different function.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from memorywire.embed.base import Vectors
from memorywire.errors import InvalidRequest

__all__ = ["FunctionEmbedder"]


class FunctionEmbedder:
    def __init__(self, fn: Callable[[str], Sequence[float]], dim: int) -> None:
        if dim < 1:
            raise InvalidRequest(f"embedding_dim must be at least 1, got {dim}")
        self._fn = fn
        self._dim = dim
        where = getattr(fn, "__module__", None) or "?"
        self._name = f"function:{where}.{getattr(fn, '__qualname__', type(fn).__name__)}"

    @property
    def name(self) -> str:
        return f"{self._name}/{self._dim}"

    @property
    def dim(self) -> int:
        return self._dim

    def embed(self, texts: Sequence[str]) -> Vectors:
        out = np.zeros((len(texts), self._dim), dtype=np.float32)
        for i, text in enumerate(texts):
            row = np.asarray(self._fn(text), dtype=np.float32)
            if row.shape != (self._dim,):
                got = row.shape[0] if row.ndim else 0
                raise InvalidRequest(f"embedder {self._name} returned {got} values; the store "
                                     f"expects {self._dim} (embedding_dim)")
            norm = float(np.linalg.norm(row))
            out[i] = row / norm if norm > 0 else row
        return out
