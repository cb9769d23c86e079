"""The conformance suite over Mem0Store: real mem0 (no LLM), local in-memory Qdrant."""

from __future__ import annotations

import importlib.util

import pytest

from memorywire.testing.harness import StoreFactory
from memorywire.testing.mem0 import mem0_factory

# find_spec, not importorskip: importing mem0 before the adapter does would start telemetry.
if importlib.util.find_spec("mem0") is None:
    pytest.skip("the mem0 store needs: pip install 'memorywire[mem0]'", allow_module_level=True)

pytest_plugins = ["memorywire.testing.plugin"]


@pytest.fixture
def memorywire_store_factory() -> StoreFactory:
    return mem0_factory
