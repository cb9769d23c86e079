"""Importing a dataset Cognee itself wrote (``cognee.add``, as a Cognee application does),
from the in-process Cognee ``make test-cognee`` sets up."""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import Any

import anyio.to_thread
import pytest

from memorywire.embed.hashing import HashingEmbedder
from memorywire.errors import InvalidRequest
from memorywire.portability.foreign import import_foreign, open_foreign
from memorywire.portability.moves import rows_of
from memorywire.store.sqlite import SqliteStore
from memorywire.testing.harness import StoreFactory

pytestmark = pytest.mark.anyio
TEXTS = ["Alice is allergic to peanuts.", "Booked a window seat to Lisbon."]


async def _native_add(factory: StoreFactory, dataset: str) -> tuple[Any, str]:
    """Cognee's own ``add`` on the process's Cognee (the store only configures it)."""
    store = factory()
    eng = store._engine  # type: ignore[attr-defined]
    cognee = eng.mods["cognee"]

    async def add() -> None:
        await cognee.add(TEXTS[0], dataset_name=dataset)
        await cognee.add(TEXTS[1], dataset_name=dataset)

    await anyio.to_thread.run_sync(lambda: eng.submit(add()).result())
    return store, f"cognee://{os.environ['MEMORYWIRE_COGNEE_ROOT']}?dataset={dataset}"


async def test_dataset_items_become_records(cognee_factory: StoreFactory,
                                            tmp_path: Path) -> None:
    dataset = f"native_{uuid.uuid4().hex[:8]}"
    store, url = await _native_add(cognee_factory, dataset)
    target = SqliteStore(tmp_path / "t.db", embedder=HashingEmbedder())
    try:
        plan, counts = await import_foreign(target, open_foreign("cognee", url, "travel-bot"))
        rows = [r async for r in rows_of(target)]
        _, again = await import_foreign(target, open_foreign("cognee", url, "travel-bot"))
    finally:
        await target.aclose()
        await store.aclose()
    assert counts.inserted == 2 and (again.inserted, again.skipped) == (0, 2)
    assert sorted(r.stored for r in rows) == sorted(TEXTS)
    for row in rows:
        uuid.UUID(row.id)  # Cognee's data id
        assert row.agent_id == "travel-bot" and row.created_at > 0
        assert row.metadata["cognee"]["dataset"] == dataset
        assert row.metadata["cognee"]["content_hash"]
        assert row.metadata["cognee"]["mime_type"].startswith("text/")
    notes = {n.field: (n.fate, n.records) for n in plan.notes}
    assert notes["cognee_fields"] == ("transformed", 2)
    assert notes["unreadable"] == ("absent", 0) and plan.lost == []


async def test_the_source_must_name_an_existing_dataset(cognee_factory: StoreFactory) -> None:
    store = cognee_factory()
    root = os.environ["MEMORYWIRE_COGNEE_ROOT"]
    try:
        with pytest.raises(InvalidRequest, match="needs cognee:///DATA_DIR"):
            open_foreign("cognee", f"cognee://{root}")
        with pytest.raises(InvalidRequest, match="has no dataset"):
            await open_foreign("cognee", f"cognee://{root}?dataset=nothing_here").read()
    finally:
        await store.aclose()
