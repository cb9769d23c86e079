"""Prometheus metrics kept in-process and rendered in the text exposition format.

On by default, so each update is a dict lookup and an add under one lock; no client library
is needed for a handful of counters and histograms. Gauges that cost a query (the approval
queue depth) are read only when ``/metrics`` is scraped.
"""

from __future__ import annotations

import bisect
import math
import threading
from collections.abc import Awaitable, Callable, Iterable

__all__ = ["LATENCY_BUCKETS", "Metrics"]

#: Seconds; dense between 1 ms and 250 ms, where memorywire operations live.
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
#: Texts per model call.
BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64)

Labels = tuple[tuple[str, str], ...]
GaugeReader = Callable[[], Awaitable[dict[Labels, float]]]


class _Histogram:
    __slots__ = ("buckets", "count", "counts", "total")

    def __init__(self, buckets: tuple[float, ...]) -> None:
        self.buckets = buckets
        self.counts = [0] * len(buckets)
        self.count = 0
        self.total = 0.0

    def observe(self, value: float) -> None:
        i = bisect.bisect_left(self.buckets, value)
        if i < len(self.counts):
            self.counts[i] += 1
        self.count += 1
        self.total += value


class Metrics:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counters: dict[str, dict[Labels, float]] = {}
        self._histograms: dict[str, dict[Labels, _Histogram]] = {}
        self._bounds: dict[str, tuple[float, ...]] = {}
        self._help: dict[str, tuple[str, str]] = {}
        self._gauges: dict[str, GaugeReader] = {}
        #: Labels on every series; ``worker`` when several processes serve (each scrape is
        #: answered by one of them, so their series must not look like one counter).
        self.const_labels: Labels = ()
        self.counter("memorywire_operations_total", "Operations answered, by outcome code.")
        self.counter("memorywire_store_errors_total", "Store failures, by store and code.")
        self.histogram("memorywire_operation_duration_seconds",
                       "Time from dispatch to answer.", LATENCY_BUCKETS)
        self.histogram("memorywire_embed_batch_texts", "Texts per embedding model call.",
                       BATCH_BUCKETS)
        self.histogram("memorywire_embed_batch_requests",
                       "Requests served per embedding model call.", BATCH_BUCKETS)

    def counter(self, name: str, help_text: str) -> None:
        self._help[name] = ("counter", help_text)
        self._counters[name] = {}

    def histogram(self, name: str, help_text: str, buckets: tuple[float, ...]) -> None:
        self._help[name] = ("histogram", help_text)
        self._histograms[name] = {}
        self._bounds[name] = buckets

    def gauge(self, name: str, help_text: str, read: GaugeReader) -> None:
        """``read`` runs at scrape time only."""
        self._help[name] = ("gauge", help_text)
        self._gauges[name] = read

    def inc(self, name: str, labels: Labels = (), by: float = 1.0) -> None:
        with self._lock:
            series = self._counters[name]
            series[labels] = series.get(labels, 0.0) + by

    def observe(self, name: str, value: float, labels: Labels = ()) -> None:
        with self._lock:
            series = self._histograms[name]
            h = series.get(labels)
            if h is None:
                h = series[labels] = _Histogram(self._bounds[name])
            h.observe(value)

    def observe_operation(self, op: str, outcome: str, seconds: float) -> None:
        self.inc("memorywire_operations_total", (("operation", op), ("outcome", outcome)))
        self.observe("memorywire_operation_duration_seconds", seconds, (("operation", op),))

    def observe_batch(self, requests: int, texts: int) -> None:
        self.observe("memorywire_embed_batch_texts", texts)
        self.observe("memorywire_embed_batch_requests", requests)

    def value(self, name: str, labels: Labels = ()) -> float:
        """A counter's value or a histogram's count; for tests and the benchmark."""
        with self._lock:
            if name in self._counters:
                return self._counters[name].get(labels, 0.0)
            h = self._histograms[name].get(labels)
            return float(h.count) if h else 0.0

    async def render(self) -> str:
        gauges = {name: await read() for name, read in self._gauges.items()}
        lines: list[str] = []
        const = self.const_labels

        def own(series: Iterable[tuple[Labels, float]]) -> list[tuple[Labels, float]]:
            return [(const + labels, v) for labels, v in series]

        with self._lock:
            for name, (kind, help_text) in sorted(self._help.items()):
                lines += [f"# HELP {name} {help_text}", f"# TYPE {name} {kind}"]
                if kind == "counter":
                    lines += _samples(name, own(self._counters[name].items()))
                elif kind == "gauge":
                    lines += _samples(name, own(gauges[name].items()))
                else:
                    for labels, h in sorted(self._histograms[name].items()):
                        lines += _histogram_lines(name, const + labels, h)
        return "\n".join(lines) + "\n"


def _samples(name: str, series: Iterable[tuple[Labels, float]]) -> list[str]:
    return [f"{name}{_fmt_labels(labels)} {_num(v)}" for labels, v in sorted(series)]


def _histogram_lines(name: str, labels: Labels, h: _Histogram) -> list[str]:
    out = []
    running = 0
    for bound, n in zip(h.buckets, h.counts, strict=True):
        running += n
        out.append(f"{name}_bucket{_fmt_labels((*labels, ('le', _num(bound))))} {running}")
    out.append(f"{name}_bucket{_fmt_labels((*labels, ('le', '+Inf')))} {h.count}")
    out.append(f"{name}_sum{_fmt_labels(labels)} {_num(h.total)}")
    out.append(f"{name}_count{_fmt_labels(labels)} {h.count}")
    return out


def _fmt_labels(labels: Labels) -> str:
    if not labels:
        return ""
    body = ",".join(f'{k}="{_escape(v)}"' for k, v in labels)
    return "{" + body + "}"


def _escape(v: str) -> str:
    return v.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _num(v: float) -> str:
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    return repr(float(v)) if not float(v).is_integer() else str(int(v))
