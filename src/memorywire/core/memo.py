"""A memo for pure functions of text on the recall path, emptied all at once when full.

A recall splits the same question and the same hit texts several times, and the next recall
of the scope meets the same hits again, so the splitting, naming and key building are worth
remembering. ``functools.lru_cache`` would do, but it keeps an order per entry and takes a
lock on every hit; these memos sit on a path measured in microseconds, so a hit here is one
``dict.get`` and a miss past the bound drops everything (the next recalls refill what they
use). Values must be immutable, or copied by the caller before it hands them out.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class ClearingMemo(Generic[K, V]):
    """At most ``max_items`` entries; ``get`` is the dict's own, ``put`` clears when full."""

    __slots__ = ("_items", "_max", "get")

    def __init__(self, max_items: int) -> None:
        if max_items < 1:
            raise ValueError("max_items must be at least 1")
        self._items: dict[K, V] = {}
        self._max = max_items
        self.get = self._items.get

    def put(self, key: K, value: V) -> V:
        """Remember ``value`` under ``key`` (emptying the memo first when it is full)."""
        if len(self._items) >= self._max:
            self._items.clear()
        self._items[key] = value
        return value

    def __len__(self) -> int:
        return len(self._items)
