"""``SqliteVecStore``: the first implementation's name and constructor for the SQLite store.

Code written for memorywire 0.5 builds its store as ``SqliteVecStore(path, embedder=fn)``
(``fn``: a function ``text -> list[float]``, with ``embedding_dim``) or
``SqliteVecStore.from_url("sqlite-vec://./mem.db")``; both give this project's
:class:`~memorywire.store.sqlite.SqliteStore`. ``close()`` is a coroutine here (0.5's was
plain; its ``Memory.close`` awaited either). A file 0.5 wrote is refused with the command
that converts it (``memorywire upgrade PATH``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from memorywire.embed.base import Embedder
from memorywire.embed.function import FunctionEmbedder
from memorywire.store.sqlite import SqliteStore
from memorywire.store.sqlite.url import sqlite_path

__all__ = ["DEFAULT_EMBEDDING_DIM", "SqliteVecStore"]

#: 0.5's default: all-MiniLM-L6-v2's 384 dimensions.
DEFAULT_EMBEDDING_DIM = 384


class SqliteVecStore(SqliteStore):
    def __init__(self, db_path: str | Path = ":memory:", *,
                 embedding_dim: int = DEFAULT_EMBEDDING_DIM,
                 embedder: Embedder | Callable[[str], Sequence[float]] | None = None,
                 **kw: Any) -> None:
        if embedder is not None and not isinstance(embedder, Embedder):
            embedder = FunctionEmbedder(embedder, embedding_dim)
        super().__init__(db_path, embedder=embedder, **kw)

    @classmethod
    def from_url(cls, url: str, **kw: Any) -> SqliteVecStore:
        return cls(sqlite_path(url), **kw)

    async def close(self) -> None:
        await self.aclose()
