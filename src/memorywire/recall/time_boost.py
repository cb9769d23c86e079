"""Time-aware ranking: a question that names a time ranks memories of that time higher.

The windows come from :func:`memorywire.core.time_expressions.resolve`, seen from the time
of asking (:func:`reference_time`). A memory's time is when the event happened as far as
the store knows: its ``event_time`` (episodic typed field) when set, else its ``valid_from``
(which defaults to when it was stored).

The boost is soft, by rank fusion: the store's order is one list, the memories inside a
window (in the store's order) a second list of weight :data:`TIME_WEIGHT`, fused with RRF
(k = 60). A relevant memory outside the window can still win, which matters because the
expressions are approximate ("two months ago" for seven weeks) and a conversation may
mention an event days after it. When no memory, or every memory, falls inside, the order is
unchanged, so a question whose window misses the store costs nothing in quality.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from memorywire.core.fusion import boosted
from memorywire.core.time_expressions import TimeWindow, resolve
from memorywire.core.timeline import HitT, HitView, hit_validity
from memorywire.recall.rule import RecallContext
from memorywire.wire.models import RecallRequest

__all__ = ["RULE", "TIME_POOL", "TIME_WEIGHT", "TimeBoost", "event_time", "reference_time",
           "time_ranked", "windows_of"]

#: RRF weight of the in-window list against the store's own order (weight 1); fitted on
#: LongMemEval S dev120 (docs/benchmarks.md, round 6).
TIME_WEIGHT = 0.5
#: How many hits a store is asked for when the question names a time, so a memory of that
#: time ranked just below ``k`` can move up.
TIME_POOL = 50


def reference_time(req: RecallRequest, now: int) -> int:
    """The instant "yesterday" is counted from: ``asked_at``, else ``as_of``, else now."""
    if req.asked_at is not None:
        return req.asked_at
    return req.as_of if req.as_of is not None else now


def event_time(hit: HitView) -> int:
    typed = (hit.model_extra or {}).get("event_time")
    if isinstance(typed, int) and not isinstance(typed, bool):
        return typed
    return hit_validity(hit).valid_from


def time_ranked(hits: Sequence[HitT], windows: Sequence[TimeWindow],
                weight: float = TIME_WEIGHT) -> list[HitT]:
    """``hits`` (best first) re-ranked with the in-window ones boosted; scores untouched."""
    if not windows or weight <= 0:
        return list(hits)
    inside = [any(w.contains(event_time(h)) for w in windows) for h in hits]
    return boosted(hits, inside, weight)


def windows_of(context: RecallContext) -> tuple[TimeWindow, ...]:
    """The times the recall's question names, seen from :func:`reference_time` (once per
    recall)."""
    return context.derived("time_boost.windows", lambda: resolve(
        context.req.query, reference_time(context.req, context.now)))


@dataclass(frozen=True)
class TimeBoost:
    """The rule: memories of a time the question names first. No setting of its own (the
    weight is :data:`TIME_WEIGHT` on every store); a question naming a time asks for
    :data:`TIME_POOL` hits from the first search on."""

    name: str = "time_boost"
    settings: tuple[str, ...] = ()

    def pool(self, context: RecallContext, found: Sequence[HitView] | None, asked: int) -> int:
        return TIME_POOL if found is None and windows_of(context) else 0

    def apply(self, hits: Sequence[HitT], context: RecallContext) -> list[HitT]:
        return time_ranked(hits, windows_of(context))


RULE = TimeBoost()
