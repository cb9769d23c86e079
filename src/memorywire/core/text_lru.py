"""A least-recently-used cache of a pure function of text, bounded by entries and by the
characters of text it holds.

A write's conflict and duplicate checks read each candidate's parse and digests from such a
cache, and a write's candidates are spread over its whole scope: for a write to cost the
same in a scope of 100 or 100,000 memories the cache must hold a scope's texts (issue 35,
flat35). ``functools.lru_cache`` bounds entries only, and what an entry costs grows with its
text (a parse of a 2,000-character reply holds ~20 kB, one of a one-line fact ~1.3 kB), so an
entry bound large enough for a scope of short facts would let a scope of long replies take
gigabytes. Bounding the characters too keeps the memory near what the bound says whatever
the texts are; a scope of long texts then holds fewer of them.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, NamedTuple, TypeVar

__all__ = ["CacheInfo", "TextLru"]

V = TypeVar("V")


class CacheInfo(NamedTuple):
    hits: int
    misses: int
    items: int
    chars: int


class TextLru(Generic[V]):
    """``fn(text)``, remembered for at most ``max_items`` texts of at most ``max_chars``
    characters in all, least recently used first out.

    Shared by threads (a store's worker thread and the event loop's) without a lock: core
    imports no threading, and every step that must be whole is one call into the C-level
    ``OrderedDict`` (a lookup, ``setdefault``, ``popitem``), which the interpreter lock keeps
    whole. An entry evicted by another thread between a lookup and its reuse is computed
    again. Only the character count is updated in two steps, so concurrent inserts can skew
    it; it is recounted exactly every ``max_items // 8`` inserts (at least 1,024). The entry
    bound holds at rest; between an insert and its eviction it is passed by at most one
    entry per inserting thread."""

    def __init__(self, fn: Callable[[str], V], max_items: int, max_chars: int) -> None:
        if max_items < 1 or max_chars < 1:
            raise ValueError("max_items and max_chars must be at least 1")
        self._fn = fn
        self._items: OrderedDict[str, V] = OrderedDict()
        self._max_items = max_items
        self._max_chars = max_chars
        self._chars = 0
        self._hits = 0
        self._misses = 0
        self._inserts = 0
        self._recount_every = max(1024, max_items // 8)
        self.__doc__ = fn.__doc__

    def __call__(self, text: str) -> V:
        items = self._items
        try:
            value = items[text]
            items.move_to_end(text)
        except KeyError:
            pass
        else:
            self._hits += 1
            return value
        value = self._fn(text)
        self._misses += 1
        if items.setdefault(text, value) is value:  # not inserted meanwhile by another thread
            self._chars += len(text)
            self._inserts += 1
            if self._inserts >= self._recount_every:
                self._inserts = 0
                self._chars = sum(map(len, list(items)))
            self._trim()
        return value

    def _trim(self) -> None:
        items = self._items
        while len(items) > self._max_items or (
                self._chars > self._max_chars and len(items) > 1):
            try:
                old, _ = items.popitem(last=False)
            except KeyError:  # emptied by another thread
                return
            self._chars -= len(old)

    def cache_info(self) -> CacheInfo:
        return CacheInfo(self._hits, self._misses, len(self._items), self._chars)

    def cache_clear(self) -> None:
        self._items.clear()
        self._chars = self._hits = self._misses = self._inserts = 0
