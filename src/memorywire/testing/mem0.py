"""A ``Mem0Store`` whose raw storage can be searched, for the hard-delete scenarios.

Shared by the pytest conformance module and ``benchmarks/conformance_matrix.py`` so both
audit the same places: every Qdrant point (any state) and every mem0 history row.
Importing this module imports the adapter (which silences mem0's telemetry first), never
mem0 itself.
"""

from __future__ import annotations

from typing import Any

from memorywire.store.mem0 import Mem0Store

__all__ = ["InspectableMem0Store", "mem0_factory"]


class InspectableMem0Store(Mem0Store):
    async def raw_contains(self, needle: str) -> bool:
        memory = self.memory
        client = memory.vector_store.client
        points, _ = client.scroll(memory.vector_store.collection_name, limit=100_000,
                                  with_payload=True)
        if any(needle in repr(p.payload) for p in points):
            return True
        dump = "\n".join(memory.db.connection.iterdump())
        return needle in dump


def mem0_factory(**kw: Any) -> Mem0Store:
    """A fresh in-memory mem0 store (local ``:memory:`` Qdrant, no LLM)."""
    return InspectableMem0Store(**kw)
