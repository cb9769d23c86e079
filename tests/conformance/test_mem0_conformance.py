"""The conformance suite over Mem0Store: real mem0 (no LLM), local in-memory Qdrant."""

from __future__ import annotations

import importlib.util
from typing import Any

import pytest

from memorywire.store.mem0 import Mem0Store
from memorywire.testing.harness import StoreFactory

# find_spec, not importorskip: importing mem0 before the adapter does would start telemetry.
if importlib.util.find_spec("mem0") is None:
    pytest.skip("the mem0 store needs: pip install 'memorywire[mem0]'", allow_module_level=True)

pytest_plugins = ["memorywire.testing.plugin"]


class InspectableMem0Store(Mem0Store):
    """Hard-delete audit: every Qdrant point (any state) and every mem0 history row."""

    async def raw_contains(self, needle: str) -> bool:
        memory = self.memory
        client = memory.vector_store.client
        points, _ = client.scroll(memory.vector_store.collection_name, limit=100_000,
                                  with_payload=True)
        if any(needle in repr(p.payload) for p in points):
            return True
        dump = "\n".join(memory.db.connection.iterdump())
        return needle in dump


@pytest.fixture
def memorywire_store_factory() -> StoreFactory:
    def make(**kw: Any) -> Mem0Store:
        return InspectableMem0Store(**kw)

    return make
