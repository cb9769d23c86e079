"""Static proof that the built-in stores satisfy :class:`MemoryStore`.

Nothing here runs; ``mypy`` (which checks ``src/``) fails if a store's signatures drift from
the protocol.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memorywire.store.base import MemoryStore
    from memorywire.store.memory import InMemoryStore
    from memorywire.store.sqlite import SqliteStore

    def _built_ins_are_memory_stores(memory: InMemoryStore, sqlite: SqliteStore) -> None:
        _a: MemoryStore = memory
        _b: MemoryStore = sqlite
