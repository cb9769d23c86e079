"""A real Letta server, started by ``make test-letta`` (backends/letta/test.sh)."""

from __future__ import annotations

import os
import uuid
from typing import Any

import pytest

from memorywire.store.letta import LettaStore
from memorywire.testing.harness import StoreFactory


def _env(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        pytest.fail(f"{name} is not set: run these tests with `make test-letta`", pytrace=False)
    return value


@pytest.fixture
def letta_factory() -> StoreFactory:
    """Each store gets its own archive prefix, so every store starts empty."""
    url = _env("MEMORYWIRE_LETTA_URL")
    embed = _env("MEMORYWIRE_LETTA_EMBED_URL")

    def make(**kw: Any) -> LettaStore:
        return LettaStore(url, embedding_endpoint=embed,
                          archive_prefix=f"t{uuid.uuid4().hex[:12]}", **kw)

    return make
