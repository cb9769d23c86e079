"""Portability pairs with Cognee: SQLite -> Cognee by ``migrate``, Cognee -> Cognee and
Cognee -> SQLite through dumps (see backends_tests/pairs.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from pairs import check_dump_round_trips, check_migrate_from_sqlite

from memorywire.testing.harness import StoreFactory

pytestmark = pytest.mark.anyio


async def test_sqlite_to_cognee_migrates_and_verifies(cognee_factory: StoreFactory,
                                               tmp_path: Path) -> None:
    await check_migrate_from_sqlite(cognee_factory, tmp_path)


async def test_cognee_dumps_round_trip_into_cognee_and_sqlite(cognee_factory: StoreFactory,
                                                       tmp_path: Path) -> None:
    await check_dump_round_trips(cognee_factory, tmp_path)
