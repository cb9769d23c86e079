"""The memorywire conformance suite against a real Letta server."""

from __future__ import annotations

import pytest

from memorywire.testing.harness import StoreFactory

pytest_plugins = ["memorywire.testing.plugin"]


@pytest.fixture
def memorywire_store_factory(letta_factory: StoreFactory) -> StoreFactory:
    return letta_factory
