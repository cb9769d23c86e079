"""A LlamaIndex retriever over memorywire recall: each hit a node with its score, type and
provenance in metadata, so a query engine can cite or drop untrusted sources."""

from __future__ import annotations

import json
from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from memorywire.client import SyncMemory

__all__ = ["MemorywireRetriever"]


class MemorywireRetriever(BaseRetriever):
    """Recall for one agent (and user); ``types``, ``filter`` and ``k`` as on the wire."""

    def __init__(
        self,
        client: SyncMemory[Any],
        *,
        agent_id: str,
        user_id: str | None = None,
        k: int = 5,
        types: list[str] | None = None,
        filter: dict[str, Any] | None = None,
        score_threshold: float | None = None,
    ) -> None:
        super().__init__()
        self._client = client
        self._doc: dict[str, Any] = {"agent_id": agent_id, "k": k}
        for name, value in (("user_id", user_id), ("types", types), ("filter", filter)):
            if value is not None:
                self._doc[name] = value
        self._threshold = score_threshold

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        hits = self._client.recall({**self._doc, "query": query_bundle.query_str}).results
        out: list[NodeWithScore] = []
        for h in hits:
            if self._threshold is not None and h.score < self._threshold:
                continue
            text = h.content if isinstance(h.content, str) else json.dumps(h.content)
            meta = {**(h.metadata or {}), "type": h.type.value, "source": h.source,
                    "created_at": h.created_at}
            out.append(NodeWithScore(node=TextNode(id_=h.id, text=text, metadata=meta),
                                     score=h.score))
        return out
