"""Fewer garbage-collector passes while a large batch of writes runs.

A batch remember allocates a few dozen container objects per write (requests, parses,
candidate lists, verdicts) and frees nearly all of them by reference counting as soon as the
write is answered: there are almost no cycles to find. CPython's collector still walks its
young generation every 700 net allocations, and its older ones as those passes add up; in a
process holding a large scope (the parse caches, the scope's rows) those passes were about a
sixth of a one-scope ingest's CPU (docs/benchmarks.md, gc35). :func:`fewer_collections`
raises the young generation's threshold while a batch of at least :data:`BATCH_WRITES`
writes runs and puts the caller's thresholds back when the last such batch ends. Nothing is
skipped: the collector still runs, less often, and a cycle made during the batch is freed at
its next pass.

The thresholds are process-wide, so other threads see the raised one during the batch;
nested and concurrent batches share one count, and the thresholds found by the first are
restored by the last (a threshold the application changes meanwhile is overwritten then).
"""

from __future__ import annotations

import functools
import gc
import threading
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Concatenate, ParamSpec, TypeVar

__all__ = ["BATCH_WRITES", "YOUNG_THRESHOLD", "batch_collections", "fewer_collections"]

#: Writes in one call from which the collector runs less often (a single remember, or a
#: conversation's few turns, keep the interpreter's own thresholds).
BATCH_WRITES = 256
#: Net allocations between two young-generation passes during a batch (CPython's default is
#: 700).
YOUNG_THRESHOLD = 50_000

_lock = threading.Lock()
_state: dict[str, Any] = {"depth": 0, "saved": None}


@contextmanager
def fewer_collections(active: bool = True) -> Iterator[None]:
    """The young generation's threshold raised to :data:`YOUNG_THRESHOLD` inside the block
    when ``active`` (see the module doc)."""
    if not active:
        yield
        return
    with _lock:
        if _state["depth"] == 0:
            saved = gc.get_threshold()
            _state["saved"] = saved
            if saved[0] and saved[0] < YOUNG_THRESHOLD:  # 0: the application disabled it
                gc.set_threshold(YOUNG_THRESHOLD, *saved[1:])
        _state["depth"] += 1
    try:
        yield
    finally:
        with _lock:
            _state["depth"] -= 1
            if _state["depth"] == 0:
                gc.set_threshold(*_state["saved"])
                _state["saved"] = None


P = ParamSpec("P")
T = TypeVar("T")
S = TypeVar("S")


def batch_collections(
    fn: Callable[Concatenate[S, Sequence[Any], P], Awaitable[T]],
) -> Callable[Concatenate[S, Sequence[Any], P], Awaitable[T]]:
    """``fn(store, reqs, ...)`` under :func:`fewer_collections` when ``reqs`` holds at least
    :data:`BATCH_WRITES` writes."""

    @functools.wraps(fn)
    async def wrapper(store: S, reqs: Sequence[Any], /, *args: P.args,
                      **kwargs: P.kwargs) -> T:
        with fewer_collections(len(reqs) >= BATCH_WRITES):
            return await fn(store, reqs, *args, **kwargs)

    return wrapper
