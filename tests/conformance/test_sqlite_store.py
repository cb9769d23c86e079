"""The conformance suite over SqliteStore (a fresh database file per scenario)."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from memorywire.store.sqlite import SqliteStore
from memorywire.testing.harness import StoreFactory

pytest_plugins = ["memorywire.testing.plugin"]


class InspectableSqliteStore(SqliteStore):
    """Hard-delete audit: scan the database file and its WAL/SHM side files byte for byte."""

    def __init__(self, path: Path, **kw: Any) -> None:
        super().__init__(path, **kw)
        self._path = path

    async def raw_contains(self, needle: str) -> bool:
        blob = needle.encode("utf-8")
        for suffix in ("", "-wal", "-shm", "-journal"):
            f = Path(str(self._path) + suffix)
            if f.exists() and blob in f.read_bytes():
                return True
        return False


@pytest.fixture
def memorywire_store_factory(tmp_path: Path) -> StoreFactory:
    def make(**kw: Any) -> SqliteStore:
        return InspectableSqliteStore(tmp_path / f"{uuid.uuid4().hex}.db", **kw)

    return make
