"""Micro-batching on the event loop: texts of concurrent requests embedded in one model call.

The embedding service (:mod:`memorywire.server.embed_service`) answers many API servers at
once, each asking for one or a few sentences. A model call has a fixed cost (tokenizer,
session dispatch, small matrix products) that a batch shares, so requests that arrive while
the model is busy, or within ``max_wait_s`` of one another under load, go into the next
call together. One task runs the model at a time (``lanes`` at most, each a worker thread);
a request waits on a future, so a thousand waiting requests cost no threads.

A single caller pays no wait: the window opens only when the previous call served more than
one request. When a batched call fails, each request's texts are retried alone, so one bad
request fails only itself.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

import anyio.to_thread
import numpy as np

from memorywire.embed.base import Vectors

__all__ = ["AsyncBatcher", "BatchStats"]


@dataclass
class BatchStats:
    """What the batcher did since it started (the service's ``/v1/stats``)."""

    requests: int = 0
    texts: int = 0
    batches: int = 0
    #: The most requests one model call served.
    max_requests_per_batch: int = 0
    #: Seconds of model calls (wall time, summed over lanes).
    model_s: float = 0.0
    started: float = field(default_factory=time.monotonic)

    def to_json(self) -> dict[str, float | int]:
        return {"requests": self.requests, "texts": self.texts, "batches": self.batches,
                "max_requests_per_batch": self.max_requests_per_batch,
                "model_s": round(self.model_s, 3),
                "uptime_s": round(time.monotonic() - self.started, 3)}


@dataclass
class _Job:
    texts: list[str]
    future: asyncio.Future[Vectors]


class AsyncBatcher:
    def __init__(self, embed: Callable[[list[str]], Vectors], *, max_batch: int = 64,
                 max_wait_s: float = 0.002, lanes: int = 1) -> None:
        """``embed`` runs one model call on a list of texts (in a worker thread; it must be
        thread-safe when ``lanes`` > 1); ``max_batch`` texts at most per call, unless one
        request alone brings more."""
        if max_batch < 1 or lanes < 1 or max_wait_s < 0:
            raise ValueError("max_batch and lanes must be >= 1, max_wait_s >= 0")
        self._embed = embed
        self._max_batch = max_batch
        self._max_wait = max_wait_s
        self._lanes = lanes
        self._queue: deque[_Job] = deque()
        self._busy = 0
        self._last_requests = 0
        self._wake: asyncio.Event | None = None
        self.stats = BatchStats()

    async def embed(self, texts: list[str]) -> Vectors:
        """The vectors of ``texts``, computed in a call shared with concurrent requests."""
        future: asyncio.Future[Vectors] = asyncio.get_running_loop().create_future()
        self._queue.append(_Job(texts, future))
        self.stats.requests += 1
        self.stats.texts += len(texts)
        if self._wake is not None:
            self._wake.set()
        if self._busy < self._lanes:
            self._busy += 1
            asyncio.get_running_loop().create_task(self._lead())
        return await future

    async def _lead(self) -> None:
        """Run model calls while work is queued; one such task per busy lane."""
        try:
            while self._queue:
                await self._gather_window()
                batch = self._take()
                if batch:
                    await self._run(batch)
        finally:
            self._busy -= 1

    async def _gather_window(self) -> None:
        """Under concurrency, wait up to ``max_wait_s`` for the batch to fill."""
        if self._max_wait <= 0 or self._last_requests <= 1:
            return
        deadline = time.monotonic() + self._max_wait
        while sum(len(j.texts) for j in self._queue) < self._max_batch:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            self._wake = asyncio.Event()
            try:
                await asyncio.wait_for(self._wake.wait(), left)
            except TimeoutError:
                return
            finally:
                self._wake = None

    def _take(self) -> list[_Job]:
        if not self._queue:
            return []
        batch = [self._queue.popleft()]
        size = len(batch[0].texts)
        while self._queue and size + len(self._queue[0].texts) <= self._max_batch:
            job = self._queue.popleft()
            size += len(job.texts)
            batch.append(job)
        self._last_requests = len(batch)
        return batch

    async def _run(self, batch: list[_Job]) -> None:
        texts = [t for j in batch for t in j.texts]
        started = time.perf_counter()
        try:
            vectors = await anyio.to_thread.run_sync(self._embed, texts)
        except Exception as exc:
            if len(batch) == 1:
                _settle(batch[0], error=exc)
            else:
                for job in batch:  # alone, so one bad request fails only itself
                    await self._run([job])
            return
        finally:
            self.stats.model_s += time.perf_counter() - started
        self.stats.batches += 1
        self.stats.max_requests_per_batch = max(self.stats.max_requests_per_batch, len(batch))
        start = 0
        for job in batch:
            _settle(job, np.ascontiguousarray(vectors[start:start + len(job.texts)]))
            start += len(job.texts)


def _settle(job: _Job, vectors: Vectors | None = None, *,
            error: BaseException | None = None) -> None:
    if job.future.done():  # the request went away (client disconnect, timeout)
        return
    if error is not None or vectors is None:
        job.future.set_exception(error or RuntimeError("no vectors"))
    else:
        job.future.set_result(vectors)
