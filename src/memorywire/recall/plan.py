"""A recall around any store's own search: what is true now (or at ``as_of``), re-ranked.

:class:`RecallPlan` is one recall's steps as plain calls (the searches it needs, then the
order of the last one's hits), so a store can run it whole in its own worker thread
(SQLite) or through :func:`recall_in_time` around its async search (every other backend).
It decides which searches a recall needs and applies validity (what is true now or at
``as_of``); the ranking rules it runs are the list of ``recall.rules``, in that order, each
through the :class:`~memorywire.recall.rule.RankingRule` interface: the plan names none of
them, so a rule is added or changed without touching it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection, Sequence
from typing import cast

from memorywire.core.relevance import ordered
from memorywire.core.timeline import HitT, HitView, annotate, is_visible, rank_current_first
from memorywire.recall.rule import RecallContext
from memorywire.recall.rules import RULES, UNRANKED
from memorywire.recall.settings import RecallSettings
from memorywire.wire.models import RecallHit, RecallRequest, RecallResponse

__all__ = ["RecallPlan", "Search", "recall_in_time"]

#: A store's own recall (no time, no validity), as :func:`recall_in_time` calls it.
Search = Callable[[RecallRequest], Awaitable[RecallResponse]]


class RecallPlan:
    """One recall's steps around a store's search, as plain (blocking-safe) calls: ask
    :meth:`request`, hand its hits to :meth:`deeper` until that returns ``None``, then
    :meth:`finish` the last hits. :func:`recall_in_time` drives it through the store's async
    search; a store may instead run it whole inside its own worker-thread call (SQLite),
    one transaction for every search, and record recall statistics for only the hits
    :meth:`finish` returns.

    The store is first asked for ``k``, or for more when a rule needs a deeper first
    search (a question naming a time). It is asked again, once, for the deepest pool a rule
    needs after seeing that answer (:meth:`~memorywire.recall.rule.RankingRule.pool`), and
    for more when the answer lost hits to the validity filter; so a scope where no rule
    needs more costs one search.
    """

    def __init__(self, req: RecallRequest, now: int,
                 settings: RecallSettings = UNRANKED) -> None:
        self.req = req
        self._now = now
        self._context = RecallContext(req, now, settings)
        first = max(rule.pool(self._context, None, req.k) for rule in RULES)
        k = min(1000, max(req.k, first)) if first > 0 else req.k
        self._plain = req.model_copy(update={"as_of": None, "known_at": None,
                                             "include_superseded": False,
                                             "asked_at": None, "k": k})
        self._pooled = False
        self._widened = False
        #: The last results judged visible and those kept: :meth:`deeper` judges the same
        #: list :meth:`finish` then answers from (a pool is 100 hits: judged once, not twice).
        self._judged: tuple[Sequence[HitView], Sequence[HitView]] | None = None

    def request(self) -> RecallRequest:
        """The search to run now (the store's own recall: no time, no validity)."""
        return self._plain

    def deeper(self, results: Sequence[HitView],
               hidden: Collection[str] = frozenset()) -> RecallRequest | None:
        """The next, deeper search after one that returned ``results``; ``None`` when these
        are the hits to :meth:`finish`. ``hidden`` (as :meth:`finish` takes them) are listed
        but not answers: the pools and the widening judge the other rows. The whole list is
        judged visible here, once: :meth:`finish` then reuses that judgement of the same
        list."""
        shown = [h for h in results if h.id not in hidden] if hidden else results
        k = self._plain.k
        if not self._pooled:
            self._pooled = True
            pool = max(rule.pool(self._context, shown, k) for rule in RULES)
            if pool > k:
                self._plain = self._plain.model_copy(update={"k": pool})
                return self._plain
        if self._widened or k >= 1000 or len(shown) < k:
            return None  # already widened for lost hits, at the cap, or the scope is short
        visible = self._visible(results)
        if len(visible) - sum(h.id in hidden for h in visible) == len(shown):
            return None
        self._widened = True
        self._plain = self._plain.model_copy(update={"k": min(1000, k * 4 + 10)})
        return self._plain

    def _visible(self, results: Sequence[HitT]) -> list[HitT]:
        """``results`` visible now (or at ``as_of``), in order."""
        if self._judged is None or self._judged[0] is not results:
            self._judged = (results, [h for h in results
                                      if is_visible(h, self.req, self._now)])
        return cast("list[HitT]", self._judged[1])

    def order(self, results: Sequence[HitT],
              hidden: Collection[str] = frozenset()) -> list[HitT]:
        """:meth:`finish`'s answer before each hit is annotated: the same hits (or views of
        them) in the same order. A store that ranked views of its rows builds and annotates
        full hits for these alone."""
        req, now = self.req, self._now
        hits = self._visible(results)
        for rule in RULES:
            hits = rule.apply(hits, self._context)
        point = req.as_of if req.as_of is not None else req.known_at
        if req.include_superseded or point is not None:
            hits = rank_current_first(hits, point if point is not None else now,
                                      as_of=point is not None, known_at=req.known_at)
        if hidden:
            hits = [h for h in hits if h.id not in hidden]
        return hits[:req.k]

    def finish(self, results: Sequence[RecallHit],
               hidden: Collection[str] = frozenset()) -> list[RecallHit]:
        """The recall's answer from the last search's ``results``: visible now (or at
        ``as_of``), re-ranked by the rules, without the ``hidden`` ids, cut to ``k``, each
        hit with its validity as wire fields (``annotate``).

        ``hidden`` are rows a store's floors cut but listed in their places (SQLite): the
        rules rank by place, so they re-rank the list a floors-off search returns, and the
        floors then only take rows out, never reorder the rest. The rules read a hit's
        validity from its metadata or, annotated, from its fields alike, so annotating after
        ranking (only the hits returned) gives the order annotating first gave."""
        return [annotate(h) for h in self.order(results, hidden)]


async def recall_in_time(req: RecallRequest, search: Search, now: int, *,
                         settings: RecallSettings = UNRANKED) -> RecallResponse:
    """``search`` (the store's own recall) showing only what is true now or at ``as_of``,
    re-ranked by the rules of ``recall.rules`` in their order with the store's ``settings``
    (a store that passes none gets every rule's setting at 0: only the time boost, which
    has none, runs). The searches are those of :class:`RecallPlan` (a store may run the
    plan itself, see its docstring).
    """
    plan = RecallPlan(req, now, settings)
    nxt: RecallRequest | None = plan.request()
    while nxt is not None:
        resp = await search(nxt)
        nxt = plan.deeper(resp.results)
    hits = plan.finish(resp.results)
    capped = ordered([h.relevance for h in hits])
    hits = [h if c == h.relevance else h.model_copy(update={"relevance": c})
            for h, c in zip(hits, capped, strict=True)]
    if req.min_relevance is not None:  # a threshold keeps the prefix that still reaches it
        hits = [h for h in hits if h.relevance is None or h.relevance >= req.min_relevance]
    return resp.model_copy(update={"results": hits})
