"""Portability pairs with Letta: SQLite -> Letta by ``migrate``, Letta -> Letta and Letta -> SQLite
through dumps (see backends_tests/pairs.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from pairs import check_dump_round_trips, check_migrate_from_sqlite

from memorywire.testing.harness import StoreFactory

pytestmark = pytest.mark.anyio


async def test_sqlite_to_letta_migrates_and_verifies(letta_factory: StoreFactory,
                                                    tmp_path: Path) -> None:
    await check_migrate_from_sqlite(letta_factory, tmp_path)


async def test_letta_dumps_round_trip_into_letta_and_sqlite(letta_factory: StoreFactory,
                                                         tmp_path: Path) -> None:
    await check_dump_round_trips(letta_factory, tmp_path)
