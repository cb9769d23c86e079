"""The memorywire conformance suite against a real, in-process Cognee."""

from __future__ import annotations

import pytest

from memorywire.testing.harness import StoreFactory

pytest_plugins = ["memorywire.testing.plugin"]


@pytest.fixture
def memorywire_store_factory(cognee_factory: StoreFactory) -> StoreFactory:
    return cognee_factory
