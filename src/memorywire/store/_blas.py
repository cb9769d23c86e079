"""Matrix products on the calling thread only: OpenBLAS's thread pool held to one thread
while a write's conflict search multiplies.

A batch's conflict search (:mod:`memorywire.store._coarse_index`) is a few hundred products
of a few dozen queries by a few hundred rows. OpenBLAS hands each of them to its thread pool,
and on a machine whose cores are busy (the server's own threads, the model's, other
processes) every hand-off waits for a pool thread to be scheduled: the same products took
about ten times as long as on one thread (docs/benchmarks.md, ingest35). Numpy has no
setting for it, so this module finds OpenBLAS's own ``set_num_threads`` among the symbols
numpy's core extension links (numpy's wheels bundle it under a prefixed name) and lowers the
count around the search, restoring it after. Where no OpenBLAS is found (another BLAS, a
numpy built without one) :func:`one_thread` changes nothing; the products are the same
either way, only their speed differs.

The setting is process-wide, so a product on another thread during the search runs on one
thread too; nested and concurrent users share one count and the first to enter restores it
only when the last leaves.
"""

from __future__ import annotations

import ctypes
import importlib
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

__all__ = ["one_thread"]

_PREFIXES = ("scipy_openblas", "openblas")
_SUFFIXES = ("64_", "")


def _functions() -> tuple[Callable[[], int], Callable[[int], None]] | None:
    """OpenBLAS's ``get_num_threads`` and ``set_num_threads``, if numpy links it."""
    for name in ("numpy._core._multiarray_umath", "numpy.core._multiarray_umath"):  # 2.x, 1.x
        try:
            path = importlib.import_module(name).__file__
        except ImportError:
            continue
        if path is not None:
            break
    else:
        return None
    try:
        lib = ctypes.CDLL(path)
    except OSError:
        return None
    for prefix in _PREFIXES:
        for suffix in _SUFFIXES:
            get = getattr(lib, f"{prefix}_get_num_threads{suffix}", None)
            put = getattr(lib, f"{prefix}_set_num_threads{suffix}", None)
            if get is not None and put is not None:
                get.restype = ctypes.c_int
                get.argtypes = []
                put.restype = None
                put.argtypes = [ctypes.c_int]
                return get, put
    return None


_lock = threading.Lock()
_state: dict[str, int] = {"depth": 0, "saved": 0}
_found: list[tuple[Callable[[], int], Callable[[int], None]] | None] = []


def _blas() -> tuple[Callable[[], int], Callable[[int], None]] | None:
    if not _found:
        _found.append(_functions())
    return _found[0]


@contextmanager
def one_thread() -> Iterator[None]:
    """OpenBLAS limited to the calling thread inside the block (see the module doc)."""
    with _lock:
        fns = _blas()
        if fns is not None:
            if _state["depth"] == 0:
                _state["saved"] = fns[0]()
                if _state["saved"] != 1:
                    fns[1](1)
            _state["depth"] += 1
    try:
        yield
    finally:
        if fns is not None:
            with _lock:
                _state["depth"] -= 1
                if _state["depth"] == 0 and _state["saved"] != 1:
                    fns[1](_state["saved"])
