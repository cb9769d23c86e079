"""The ``Embedder`` protocol: text in, L2-normalised float32 vectors out."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

__all__ = ["Embedder", "Vectors"]

Vectors = npt.NDArray[np.float32]


@runtime_checkable
class Embedder(Protocol):
    """Stores record ``name`` and ``dim`` and refuse a different embedder later.

    ``name`` must change whenever vectors would change (model, revision, quantisation), because
    mixing vectors of two models in one index silently ruins retrieval.
    """

    @property
    def name(self) -> str: ...

    @property
    def dim(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Shape ``(len(texts), dim)``, each row of unit length; blocking and thread-safe."""
        ...
