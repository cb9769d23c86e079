"""Micro-batching: texts from concurrent callers embedded in one model call.

A server embeds one query per request, each in its own worker thread. One model call per
request pays the per-call overhead (tokenizer, session dispatch, small matrix products) every
time; one call for eight queries costs far less than eight calls. The batcher has no thread of
its own: the first caller to find the model idle becomes the leader, gathers what is queued,
runs the model and hands each caller its rows; callers that arrive while the model runs queue
up for the next call.

The leader waits for more work (at most ``max_wait_s``) only when the previous call served
more than one caller, so a single user pays no wait at all. When a batched call fails, each
caller's texts are retried alone, so one bad request fails only itself.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

import numpy as np

from memorywire.embed.base import Vectors

__all__ = ["BatchObserver", "MicroBatcher", "SpanHook"]

#: Called after each model call with (callers served, texts embedded); cheap, never raises.
BatchObserver = Callable[[int, int], None]
#: Opens a span around one caller's wait and model call, given its number of texts.
SpanHook = Callable[[int], AbstractContextManager[Any]]


@dataclass
class _Job:
    texts: list[str]
    vectors: Vectors | None = None
    error: BaseException | None = None
    taken: bool = False  # by a leader, for the model call now running
    done: bool = False


@dataclass
class _Stats:
    calls: int = 0
    texts: int = 0
    callers: int = 0


class MicroBatcher:
    def __init__(
        self,
        run: Callable[[list[str]], Vectors],
        *,
        max_wait_s: float = 0.002,
        max_batch: int = 32,
        lanes: int = 1,
    ) -> None:
        """``run`` embeds a list of texts in one model call; it must be thread-safe.

        ``lanes`` model calls may run at once (each on its own thread, with its own intra-op
        threads), so a machine with spare cores is not held to one.
        """
        if max_wait_s < 0 or max_batch < 1 or lanes < 1:
            raise ValueError("max_wait_s must be >= 0, max_batch and lanes >= 1")
        self._run = run
        self._max_wait = max_wait_s
        self._max_batch = max_batch
        self._cond = threading.Condition()
        self._queue: deque[_Job] = deque()
        self._lanes = lanes
        self._busy = 0
        self._last_callers = 0
        self.stats = _Stats()
        #: Set by the server (one slot each: the model is shared by the process, the last
        #: server built reports it). ``None`` costs one attribute check.
        self.span_hook: SpanHook | None = None
        self.on_batch: BatchObserver | None = None

    @property
    def max_wait_s(self) -> float:
        return self._max_wait

    @property
    def max_batch(self) -> int:
        return self._max_batch

    def embed(self, texts: list[str]) -> Vectors:
        hook = self.span_hook
        if hook is None:
            return self._embed(texts)
        with hook(len(texts)):
            return self._embed(texts)

    def _embed(self, texts: list[str]) -> Vectors:
        job = _Job(texts)
        with self._cond:
            self._queue.append(job)
            self._cond.notify_all()
            while not job.done:
                if job.taken or self._busy >= self._lanes:
                    self._cond.wait()
                    continue
                self._busy += 1
                batch = self._gather()
                if not batch:  # another lane took everything while this one waited
                    self._busy -= 1
                    continue
                self._cond.release()
                try:
                    self._execute(batch)
                finally:
                    self._cond.acquire()
                    for j in batch:
                        if not j.done:  # only after a BaseException escaped the model call
                            j.error, j.done = RuntimeError("embedding interrupted"), True
                    self._busy -= 1
                    self._cond.notify_all()
        if job.error is not None:
            raise job.error
        assert job.vectors is not None
        return job.vectors

    def _gather(self) -> list[_Job]:
        """Take queued jobs (lock held), waiting briefly for more while under concurrency."""
        if self._max_wait > 0 and self._last_callers > 1:
            deadline = time.monotonic() + self._max_wait
            while self._queued_texts() < self._max_batch:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._cond.wait(left)
        if not self._queue:
            return []
        batch = [self._queue.popleft()]
        size = len(batch[0].texts)
        while self._queue and size + len(self._queue[0].texts) <= self._max_batch:
            job = self._queue.popleft()
            size += len(job.texts)
            batch.append(job)
        for job in batch:
            job.taken = True
        self._last_callers = len(batch)
        return batch

    def _queued_texts(self) -> int:
        return sum(len(j.texts) for j in self._queue)

    def _execute(self, batch: list[_Job]) -> None:
        texts = [t for j in batch for t in j.texts]
        try:
            vectors = self._run(texts)
        except Exception as exc:
            if len(batch) == 1:
                batch[0].error, batch[0].done = exc, True
            else:
                self._one_by_one(batch)
            return
        start = 0
        for j in batch:
            j.vectors = np.ascontiguousarray(vectors[start : start + len(j.texts)])
            start += len(j.texts)
            j.done = True
        self._record(len(batch), len(texts))

    def _one_by_one(self, batch: list[_Job]) -> None:
        for j in batch:
            try:
                j.vectors = self._run(j.texts)
            except Exception as exc:
                j.error = exc
            else:
                self._record(1, len(j.texts))
            j.done = True

    def _record(self, callers: int, texts: int) -> None:
        s = self.stats
        s.calls += 1
        s.callers += callers
        s.texts += texts
        if self.on_batch is not None:
            self.on_batch(callers, texts)
