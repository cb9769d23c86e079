"""An embedder wrapper that counts what a store asks of the model.

Two benchmarks report how often a store reaches the model when vectors are given (the
entity gate's masked question; none at all in the reference-latency children). Nothing here
imports memorywire, so the reference child can use it under another release's sources.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["CountingEmbedder"]


class CountingEmbedder:
    """``inner`` (any embedder), counting its ``embed`` calls and the texts they carried."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.calls = 0
        self.texts = 0

    @property
    def name(self) -> str:
        return str(self.inner.name)

    @property
    def dim(self) -> int:
        return int(self.inner.dim)

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        self.calls += 1
        self.texts += len(texts)
        out: npt.NDArray[np.float32] = self.inner.embed(texts)
        return out
