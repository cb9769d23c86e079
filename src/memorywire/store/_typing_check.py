"""Static proof that the built-in stores satisfy :class:`MemoryStore`.

Nothing here runs; ``mypy`` (which checks ``src/``) fails if a store's signatures drift from
the protocol.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memorywire.store.base import MemoryStore
    from memorywire.store.cognee import CogneeStore
    from memorywire.store.letta import LettaStore
    from memorywire.store.mem0 import Mem0Store
    from memorywire.store.memory import InMemoryStore
    from memorywire.store.postgres import PostgresStore
    from memorywire.store.sqlite import SqliteStore

    def _built_ins_are_memory_stores(
        memory: InMemoryStore, sqlite: SqliteStore, postgres: PostgresStore, mem0: Mem0Store,
        letta: LettaStore, cognee: CogneeStore,
    ) -> None:
        _a: MemoryStore = memory
        _b: MemoryStore = sqlite
        _c: MemoryStore = postgres
        _d: MemoryStore = mem0
        _e: MemoryStore = letta
        _f: MemoryStore = cognee
