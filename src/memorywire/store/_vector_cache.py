"""A per-scope in-process matrix of live vectors, so exact k-NN is one matrix product.

SQLite holds the vectors durably; this cache only mirrors one agent's live rows. It carries
the scope's version number from the database; a reader compares it with the stored one
inside its transaction and reloads on any difference, so writes by other connections or
processes are always seen. Appends by the owning connection extend it in place.

The cache of all scopes is bounded by bytes (least recently used scope first out): a
million memories across a thousand agents is 1.5 GB of float32 vectors, more than a store
sharing a machine with an agent should pin by default. A scope that was evicted is rebuilt
from SQLite in one bulk read (a few milliseconds per thousand rows).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from memorywire.store._coarse_index import CoarseIndex
from memorywire.wire.models import MemoryType

__all__ = ["NO_EXPIRY", "SCOPE_CACHE_FROM", "TYPE_CODES", "CachedRow", "ScopeCache", "ScopeIndex"]

#: ``expires_at`` of a memory that never expires, as an int64 sentinel.
NO_EXPIRY = np.iinfo(np.int64).max
TYPE_CODES: dict[MemoryType, int] = {t: i for i, t in enumerate(MemoryType)}
_CODE_OF_VALUE: dict[str, int] = {t.value: i for t, i in TYPE_CODES.items()}
#: From this many rows on, a scope index keeps its recall masks (:meth:`ScopeIndex.scope`);
#: below it a mask costs less than keeping it.
SCOPE_CACHE_FROM = 4096
#: At most this many (user, types) masks per scope index, oldest first out.
_SCOPES_KEPT = 8
_NEVER = int(np.iinfo(np.int64).min)
#: Rough per-row cost of the Python-side columns (id, user, position map).
_ROW_OVERHEAD = 200


@dataclass(frozen=True)
class CachedRow:
    rid: int
    id: str
    user_id: str | None
    type: MemoryType
    created_at: int
    expires_at: int | None
    demoted: bool
    vector: npt.NDArray[np.float32]


class ScopeIndex:
    def __init__(self, dim: int, version: int, capacity: int = 64) -> None:
        self.dim = dim
        self.version = version
        self.n = 0
        cap = max(capacity, 16)
        self._matrix = np.zeros((cap, dim), dtype=np.float32)
        self._rids = np.zeros(cap, dtype=np.int64)
        self._types = np.zeros(cap, dtype=np.int8)
        self._created = np.zeros(cap, dtype=np.int64)
        self._expires = np.zeros(cap, dtype=np.int64)
        self._demoted = np.zeros(cap, dtype=bool)
        self._users = np.empty(cap, dtype=object)
        #: Rows without a user (the conflict scope of a write without one reads it).
        self._userless = np.zeros(cap, dtype=bool)
        self.ids: list[str] = []
        self.pos: dict[int, int] = {}
        #: Whether ``rids`` ascend (a scope loaded in rowid order and appended to by later
        #: writes does): then :meth:`positions_of` is a binary search, not a dict walk.
        self.rids_ascending = True
        #: The conflict search's coarse clusters of this matrix, built on first use by a
        #: large scope and grown by :meth:`extend` (:mod:`memorywire.store._coarse_index`).
        self.coarse: CoarseIndex | None = None
        #: Recall scope masks by (user, types), see :meth:`scope`.
        self._scopes: dict[tuple[str | None, frozenset[MemoryType] | None], _Scope] = {}

    @classmethod
    def from_rows(cls, dim: int, version: int, rows: Sequence[Sequence[Any]],
                  blobs: bytes) -> ScopeIndex:
        """Build from ``(rid, id, user_id, type, created_at, expires_at, demoted)`` rows and
        their vectors concatenated in the same order, column-wise (no per-row objects).

        Metadata is not cached: only a recall with a metadata filter needs it, and leaving it
        out lets the scope load read a covering index instead of every scattered row.
        """
        n = len(rows)
        index = cls(dim, version, capacity=n + 64)
        if n == 0:
            return index
        rids, ids, users, types, created, expires, demoted = zip(*rows, strict=True)
        index._matrix[:n] = np.frombuffer(blobs, dtype=np.float32).reshape(n, dim)
        index._rids[:n] = rids
        index._types[:n] = [_CODE_OF_VALUE[t] for t in types]
        index._created[:n] = created
        index._expires[:n] = [NO_EXPIRY if e is None else e for e in expires]
        index._demoted[:n] = demoted
        index._users[:n] = users
        index._userless[:n] = [u is None for u in users]
        index.ids = list(ids)
        index.pos = dict(zip(rids, range(n), strict=True))
        index.rids_ascending = bool(np.all(index._rids[1:n] > index._rids[: n - 1]))
        index.n = n
        return index

    @property
    def nbytes(self) -> int:
        """What the cache's byte budget counts: the matrix, the per-row columns and the kept
        recall masks with their positions (up to ``_SCOPES_KEPT`` of them, ~9 bytes a row
        each)."""
        kept = sum(int(s.mask.nbytes) + int(s.positions.nbytes) for s in self._scopes.values())
        return int(self._matrix.nbytes) + self._rids.shape[0] * (_ROW_OVERHEAD + 40) + kept

    def _grow(self, need: int) -> None:
        cap = self._rids.shape[0]
        if need <= cap:
            return
        new = max(need, cap * 2)

        def grown(a: npt.NDArray[Any]) -> npt.NDArray[Any]:
            out = np.zeros((new, *a.shape[1:]), dtype=a.dtype)
            out[: self.n] = a[: self.n]
            return out

        self._matrix = grown(self._matrix)
        self._rids = grown(self._rids)
        self._types = grown(self._types)
        self._created = grown(self._created)
        self._expires = grown(self._expires)
        self._demoted = grown(self._demoted)
        self._userless = grown(self._userless)
        users = np.empty(new, dtype=object)
        users[: self.n] = self._users[: self.n]
        self._users = users

    def extend(self, rows: Sequence[CachedRow]) -> None:
        first = self.n
        self._grow(self.n + len(rows))
        last = int(self._rids[first - 1]) if first else None
        for row in rows:
            i = self.n
            if last is not None and row.rid <= last:
                self.rids_ascending = False
            last = row.rid
            self._matrix[i] = row.vector
            self._rids[i] = row.rid
            self._types[i] = TYPE_CODES[row.type]
            self._created[i] = row.created_at
            self._expires[i] = NO_EXPIRY if row.expires_at is None else row.expires_at
            self._demoted[i] = row.demoted
            self._users[i] = row.user_id
            self._userless[i] = row.user_id is None
            self.ids.append(row.id)
            self.pos[row.rid] = i
            self.n += 1
        if self.coarse is not None:
            self.coarse.add(self._matrix[first:self.n])

    def positions_of(self, rids: Collection[int]) -> npt.NDArray[np.intp]:
        """The positions of those of ``rids`` this scope holds (the others, other agents'
        rows, are left out), in no particular order. A common word's rows in a 100k-row
        scope number tens of thousands, and a dict lookup each cost more per recall than the
        full-text query that found them."""
        if not self.rids_ascending:
            return np.asarray([p for p in map(self.pos.get, rids) if p is not None],
                              dtype=np.intp)
        if not self.n or not rids:
            return np.empty(0, dtype=np.intp)
        want = np.fromiter(rids, dtype=np.int64, count=len(rids))
        held = self._rids[: self.n]
        at = np.searchsorted(held, want)
        at[at >= self.n] = 0
        found: npt.NDArray[np.intp] = at[held[at] == want].astype(np.intp)
        return found

    @property
    def matrix(self) -> npt.NDArray[np.float32]:
        return self._matrix[: self.n]

    @property
    def rids(self) -> npt.NDArray[np.int64]:
        return self._rids[: self.n]

    @property
    def demoted(self) -> npt.NDArray[np.bool_]:
        return self._demoted[: self.n]

    def of_scope(self, positions: npt.NDArray[np.int64], now_ms: int, user_id: str | None,
                 mtype: MemoryType) -> npt.NDArray[np.int64]:
        """The ``positions`` holding live rows of exactly this user (``None``: rows without
        one) and type: the conflict detector's scope, checked only where it looks."""
        keep = (self._expires[positions] > now_ms) & (self._types[positions] == TYPE_CODES[mtype])
        keep &= self._userless[positions] if user_id is None else \
            self._users[positions] == user_id
        out: npt.NDArray[np.int64] = positions[keep]
        return out

    def eligible(
        self,
        now_ms: int,
        *,
        user_id: str | None,
        types: Sequence[MemoryType] | None,
        fresher_than_ms: int | None,
    ) -> npt.NDArray[np.bool_]:
        """Rows a recall may see, before the metadata filter (which needs parsed JSON)."""
        mask: npt.NDArray[np.bool_] = self._expires[: self.n] > now_ms
        if user_id is not None:
            mask &= self._users[: self.n] == user_id
        if types is not None:
            mask &= np.isin(self._types[: self.n], [TYPE_CODES[t] for t in types])
        if fresher_than_ms is not None:
            mask &= self._created[: self.n] >= fresher_than_ms
        return mask


    def scope(self, now_ms: int, *, user_id: str | None, types: Sequence[MemoryType] | None,
              ) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.intp]]:
        """:meth:`eligible` without a freshness bound, and its true positions, both
        read-only.

        A 100k-row scope's mask (and its positions; a user's rows compare an object column)
        cost a recall a pass over every row, though it changes only when a row is appended
        or ``now_ms`` crosses an ``expires_at``: every other change to the rows (a forget,
        a supersession, an edit, a demotion, any write of another connection) makes a new
        index. So from ``SCOPE_CACHE_FROM`` rows on the mask is kept with the row count
        and the clock interval over which it holds: from the latest ``expires_at`` at or
        before ``now_ms`` (a row that expired then stays expired) to the earliest after it
        (a row still live stays live until then)."""
        n = self.n
        if n < SCOPE_CACHE_FROM:
            mask = self.eligible(now_ms, user_id=user_id, types=types, fresher_than_ms=None)
            return mask, np.flatnonzero(mask)
        key = (user_id, None if types is None else frozenset(types))
        kept = self._scopes.get(key)
        if kept is not None and kept.n == n and kept.since <= now_ms < kept.until:
            return kept.mask, kept.positions
        mask = self.eligible(now_ms, user_id=user_id, types=types, fresher_than_ms=None)
        expires = self._expires[:n]
        live = expires > now_ms
        since = int(expires[~live].max()) if not live.all() else _NEVER
        until = int(expires[live].min()) if live.any() else NO_EXPIRY
        positions = np.flatnonzero(mask)
        mask.flags.writeable = False
        positions.flags.writeable = False
        if len(self._scopes) >= _SCOPES_KEPT and key not in self._scopes:
            self._scopes.pop(next(iter(self._scopes)))
        self._scopes[key] = _Scope(n, since, until, mask, positions)
        return mask, positions


@dataclass(frozen=True)
class _Scope:
    """One recall scope's mask and positions over the first ``n`` rows, valid for a clock
    in ``[since, until)``."""

    n: int
    since: int
    until: int
    mask: npt.NDArray[np.bool_]
    positions: npt.NDArray[np.intp]


class ScopeCache:
    """Scopes by agent id, least recently used evicted once ``max_bytes`` is exceeded.

    The scope just used is never evicted, so one agent larger than the budget still works
    (it simply stays the only one cached). Not thread-safe: the store's lock guards it.
    """

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._scopes: OrderedDict[str, ScopeIndex] = OrderedDict()
        self.loads = 0
        self.evictions = 0

    def get(self, agent_id: str) -> ScopeIndex | None:
        index = self._scopes.get(agent_id)
        if index is not None:
            self._scopes.move_to_end(agent_id)
        return index

    def peek(self, agent_id: str) -> ScopeIndex | None:
        """The cached scope of ``agent_id``, if any, without marking it used."""
        return self._scopes.get(agent_id)

    def put(self, agent_id: str, index: ScopeIndex) -> None:
        self._scopes[agent_id] = index
        self._scopes.move_to_end(agent_id)
        total = sum(s.nbytes for s in self._scopes.values())
        while total > self.max_bytes and len(self._scopes) > 1:
            _, old = self._scopes.popitem(last=False)
            total -= old.nbytes
            self.evictions += 1

    def pop(self, agent_id: str) -> None:
        self._scopes.pop(agent_id, None)

    def clear(self) -> None:
        self._scopes.clear()

    @property
    def nbytes(self) -> int:
        return sum(s.nbytes for s in self._scopes.values())

    def __len__(self) -> int:
        return len(self._scopes)
