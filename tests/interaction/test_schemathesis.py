"""Schemathesis against the REST app's own ``/openapi.json``, in process.

Generated requests (valid and invalid) for every documented operation: no answer may be a
5xx, every status must be documented, and every answer must match the schema documented for
its status. The five wire
operations get at least 200 valid cases each; the rest fewer. The store is a governed
in-memory store with the hashing embedder, served without authentication (local admin).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    response_schema_conformance,
    status_code_conformance,
)

from memorywire.embed.hashing import HashingEmbedder
from memorywire.governance import GovernedStore
from memorywire.server.approvals import GovernanceApprovals
from memorywire.server.dispatch import Dispatcher
from memorywire.server.http import create_app
from memorywire.store.memory import InMemoryStore

pytestmark = pytest.mark.slow



@schemathesis.serializer("application/x-ndjson")
def _ndjson(ctx: Any, value: Any) -> bytes:
    """A generated ``export/line`` document sent as a one-line dump (``POST /v0/admin/import``,
    which must refuse it with a documented error, never a 5xx)."""
    return value if isinstance(value, bytes) else json.dumps(value).encode() + b"\n"


FIVE = {f"/v0/{op}" for op in ("remember", "recall", "forget", "merge", "expire")}
CHECKS = [not_a_server_error, status_code_conformance, response_schema_conformance]


@pytest.fixture
def api(tmp_path: Path) -> Iterator[schemathesis.BaseSchema]:
    governed = GovernedStore(InMemoryStore(HashingEmbedder()), tmp_path / "gov.db")
    app = create_app(
        Dispatcher(governed, approvals=GovernanceApprovals(governed)), tokens=None
    )
    yield schemathesis.openapi.from_asgi("/openapi.json", app)
    anyio.run(governed.aclose)


def _operations(api: schemathesis.BaseSchema) -> list[schemathesis.APIOperation]:
    return [result.ok() for result in api.get_all_operations()]


def _fuzz(op: schemathesis.APIOperation, positive: int, negative: int) -> int:
    calls = 0

    def run(strategy: st.SearchStrategy[schemathesis.Case], n: int) -> None:
        @given(case=strategy)
        @settings(
            max_examples=n,
            deadline=None,
            database=None,
            derandomize=True,
            suppress_health_check=list(HealthCheck),
        )
        def check(case: schemathesis.Case) -> None:
            nonlocal calls
            calls += 1
            case.call_and_validate(checks=CHECKS)

        check()

    run(op.as_strategy(GenerationMode.POSITIVE), positive)
    if negative:
        run(op.as_strategy(GenerationMode.NEGATIVE), negative)
    return calls


def test_every_operation_answers_within_its_documented_schema(
    api: schemathesis.BaseSchema,
) -> None:
    ops = _operations(api)
    assert {op.path for op in ops} >= FIVE
    counts: dict[str, int] = {}
    for op in ops:
        five = op.path in FIVE
        counts[op.label] = _fuzz(op, 200 if five else 25, 50 if five else 15)
    for path in FIVE:
        assert counts[f"POST {path}"] >= 200, counts
