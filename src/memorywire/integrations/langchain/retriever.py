"""A LangChain retriever over memorywire recall.

Each hit becomes a ``Document`` whose metadata carries the memory's id, type, score and
provenance, so a chain can show where a fact came from or drop untrusted sources.
``score_threshold`` is applied here, after the store's own relevance floor.
"""

from __future__ import annotations

import json
from typing import Any

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict

from memorywire.client import SyncMemory
from memorywire.wire.models import RecallHit

__all__ = ["MemorywireRetriever"]


def _document(hit: RecallHit) -> Document:
    content = hit.content if isinstance(hit.content, str) else json.dumps(hit.content)
    meta: dict[str, Any] = dict(hit.metadata or {})
    meta.update(
        id=hit.id, type=hit.type.value, score=hit.score, source=hit.source,
        created_at=hit.created_at, user_id=hit.user_id,
    )
    return Document(page_content=content, metadata=meta, id=hit.id)


class MemorywireRetriever(BaseRetriever):
    """Recall for one agent (and user) as LangChain documents, best first."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    client: SyncMemory[Any]
    agent_id: str
    user_id: str | None = None
    k: int = 4
    types: list[str] | None = None
    filter: dict[str, Any] | None = None
    score_threshold: float | None = None

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        doc: dict[str, Any] = {"agent_id": self.agent_id, "query": query, "k": self.k}
        for name in ("user_id", "types", "filter"):
            value = getattr(self, name)
            if value is not None:
                doc[name] = value
        hits = self.client.recall(doc).results
        if self.score_threshold is not None:
            hits = [h for h in hits if h.score >= self.score_threshold]
        return [_document(h) for h in hits]
