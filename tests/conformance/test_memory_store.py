"""The conformance suite over the in-process reference store."""

from __future__ import annotations

from typing import Any

import pytest

from memorywire.store.memory import InMemoryStore
from memorywire.testing.harness import StoreFactory

pytest_plugins = ["memorywire.testing.plugin"]


class InspectableMemoryStore(InMemoryStore):
    async def raw_contains(self, needle: str) -> bool:
        return needle in repr(self._rows)


@pytest.fixture
def memorywire_store_factory() -> StoreFactory:
    def make(**kw: Any) -> InMemoryStore:
        return InspectableMemoryStore(**kw)

    return make
