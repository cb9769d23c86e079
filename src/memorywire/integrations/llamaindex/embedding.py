"""memorywire's embedder (MiniLM by default) as a LlamaIndex embedding, so an index built
in LlamaIndex and the memories in memorywire share one vector space and one offline model."""

from __future__ import annotations

import asyncio
from typing import Any

from llama_index.core.base.embeddings.base import BaseEmbedding
from pydantic import PrivateAttr

from memorywire.embed.base import Embedder

__all__ = ["MemorywireEmbedding"]


class MemorywireEmbedding(BaseEmbedding):
    """Wraps any :class:`memorywire.embed.base.Embedder`."""

    _embedder: Embedder = PrivateAttr()

    def __init__(self, embedder: Embedder, **kw: Any) -> None:
        super().__init__(model_name=embedder.name, **kw)
        self._embedder = embedder

    def _vectors(self, texts: list[str]) -> list[list[float]]:
        return [list(map(float, v)) for v in self._embedder.embed(texts)]

    def _get_query_embedding(self, query: str) -> list[float]:
        return self._vectors([query])[0]

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._vectors([text])[0]

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return self._vectors(texts)

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return await asyncio.to_thread(self._get_query_embedding, query)
