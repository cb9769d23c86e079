"""The mem0 store's rows as a :class:`~memorywire.store.rowstore.RowBackend`."""

from __future__ import annotations

import builtins
from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar

from memorywire.core.records import Row
from memorywire.store.mem0.mapping import Mem0Row

__all__ = ["Mem0Backend"]

_T = TypeVar("_T")


class _Mem0Calls(Protocol):
    """What the backend needs of :class:`~memorywire.store.mem0.store.Mem0Store` (named
    structurally so the two modules do not import each other)."""

    async def _call(self, fn: Callable[[], _T]) -> _T: ...

    def _rows(self, agent_id: str | None, user_id: str | None,
              extra: dict[str, Any] | None = None) -> builtins.list[Mem0Row]: ...

    def _add(self, row: Row) -> None: ...

    def _replace(self, old: Mem0Row, new: Mem0Row, text_changed: bool) -> Mem0Row: ...

    def _hard_delete(self, row: Mem0Row) -> None: ...


class Mem0Backend:
    """:class:`Mem0Store`'s rows as a :class:`RowBackend`; each call is one worker-thread
    hop under the store's lock."""

    def __init__(self, store: _Mem0Calls) -> None:
        self._s = store

    async def scan(self, agent_id: str) -> dict[str, Mem0Row]:
        return {r.id: r for r in await self._s._call(lambda: self._s._rows(agent_id, None))}

    async def fetch(self, agent_id: str, ids: Sequence[str]) -> dict[str, Mem0Row]:
        # A list is a match-any in mem0/Qdrant; a bare "*" would match every row.
        wanted = builtins.list(dict.fromkeys(ids))
        rows = await self._s._call(lambda: self._s._rows(agent_id, None, {"mw_id": wanted}))
        keep = set(wanted)
        return {r.id: r for r in rows if r.id in keep}

    async def scan_all(self) -> builtins.list[Mem0Row]:
        return await self._s._call(lambda: self._s._rows(None, None))

    async def insert(self, rows: Sequence[Row]) -> None:
        def run() -> None:
            for row in rows:
                self._s._add(row)

        await self._s._call(run)

    async def replace(
        self, changes: Sequence[tuple[Mem0Row, Mem0Row, bool]]
    ) -> builtins.list[Mem0Row]:
        return await self._s._call(lambda: [self._s._replace(*c) for c in changes])

    async def erase(self, rows: Sequence[Mem0Row]) -> None:
        def run() -> None:
            for row in rows:
                self._s._hard_delete(row)

        await self._s._call(run)
