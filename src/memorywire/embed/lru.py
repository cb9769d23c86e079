"""A bounded, thread-safe LRU of text -> vector.

Agents re-embed the same queries and snippets constantly (recall after remember, router fan-out),
so a small cache saves most model runs. Keys are a 128-bit BLAKE2b digest of the text, which
keeps memory per entry fixed whatever the text length.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict

import numpy as np
import numpy.typing as npt

__all__ = ["VectorCache", "text_key"]

Row = npt.NDArray[np.float32]


def text_key(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


class VectorCache:
    def __init__(self, max_entries: int) -> None:
        if max_entries < 0:
            raise ValueError("max_entries must be >= 0")
        self._max = max_entries
        self._data: OrderedDict[bytes, Row] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        with self._lock:
            return len(self._data)

    def get(self, key: bytes) -> Row | None:
        with self._lock:
            row = self._data.get(key)
            if row is None:
                self.misses += 1
                return None
            self._data.move_to_end(key)
            self.hits += 1
            return row

    def put(self, key: bytes, row: Row) -> None:
        if self._max == 0:
            return
        # Stored rows are shared between callers, so make them immutable.
        frozen = row.copy()
        frozen.flags.writeable = False
        with self._lock:
            self._data[key] = frozen
            self._data.move_to_end(key)
            while len(self._data) > self._max:
                self._data.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._data.clear()
            self.hits = 0
            self.misses = 0
