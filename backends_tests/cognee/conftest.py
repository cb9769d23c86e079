"""An in-process Cognee and the MiniLM endpoint, set up by ``make test-cognee``."""

from __future__ import annotations

import os
import uuid
from typing import Any

import pytest

from memorywire.store.cognee import CogneeStore
from memorywire.testing.harness import StoreFactory

# Cognee's own code (and its migrations through alembic/SQLAlchemy) raises deprecation
# warnings we cannot fix; they are ignored by origin, memorywire's own stay errors.
_THIRD_PARTY = [
    "ignore::DeprecationWarning:cognee(\\..*)?",
    "ignore::DeprecationWarning:alembic(\\..*)?",
    "ignore:The from_engine\\(\\) method on Inspector is deprecated:DeprecationWarning",
]


def pytest_configure(config: pytest.Config) -> None:
    for line in _THIRD_PARTY:
        config.addinivalue_line("filterwarnings", line)


def _env(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        pytest.fail(f"{name} is not set: run these tests with `make test-cognee`", pytrace=False)
    return value


@pytest.fixture
def cognee_factory() -> StoreFactory:
    """Each store gets its own dataset prefix, so every store starts empty."""
    root = _env("MEMORYWIRE_COGNEE_ROOT")
    embed = _env("MEMORYWIRE_COGNEE_EMBED_URL")

    def make(**kw: Any) -> CogneeStore:
        return CogneeStore(root, embedding_endpoint=embed,
                           dataset_prefix=f"t{uuid.uuid4().hex[:12]}", **kw)

    return make
