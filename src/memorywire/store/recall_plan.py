"""A recall around any store's own search: what is true now (or at ``as_of``), re-ranked.

:class:`RecallPlan` is one recall's steps as plain calls (the searches it needs, then the
order of the last one's hits), so a store can run it whole in its own worker thread
(SQLite) or through :func:`recall_in_time` around its async search (every other backend).
The rules it applies live in ``core`` (time, validity, the boosts); this module only decides
which searches a recall needs and in which order the rules run, once for every backend.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection, Sequence
from typing import cast

from memorywire.core.boosts import NO_BOOSTS, Boosts
from memorywire.core.restatement import restated_last
from memorywire.core.session_evidence import SESSION_POOL, session_ranked, sessions_in
from memorywire.core.subject_boost import SUBJECT_POOL, names_in, needs_pool, subject_ranked
from memorywire.core.subject_lexical import subject_lexical_ranked
from memorywire.core.substance_prior import substance_ranked
from memorywire.core.time_boost import TIME_POOL, reference_time, time_ranked
from memorywire.core.time_expressions import resolve
from memorywire.core.timeline import HitT, HitView, annotate, is_visible, rank_current_first
from memorywire.core.turn_focus import turn_focused
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

    The store is first asked for ``k`` (at least ``TIME_POOL`` when the question names a
    time). It is asked again, once, for the deepest pool a boost needs (``SUBJECT_POOL``
    when the question writes a name and the answer's memories carry subjects,
    ``SESSION_POOL`` when at least two of its hits carry sessions), and for more when the
    answer lost hits to the validity filter; so a scope with none of these costs what it
    did before. The substance prior, turn focus and the restatement rule ask for no pool of
    their own: they re-rank what the other steps fetched.
    """

    def __init__(self, req: RecallRequest, now: int, boosts: Boosts = NO_BOOSTS) -> None:
        self.req = req
        self._now = now
        self._session_weight = boosts.session
        self._subject_weight = boosts.subject
        self._substance_weight = boosts.substance
        self._turn_weight = boosts.turn
        self._duplicate_share = boosts.duplicate
        self._subject_lexical_weight = boosts.subject_lexical
        self._windows = resolve(req.query, reference_time(req, now))
        # The names both subject rules look for (and so the pool they share).
        self._names = names_in(req.query, max(boosts.subject, boosts.subject_lexical))
        k = min(1000, max(req.k, TIME_POOL)) if self._windows else req.k
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
            pool = SUBJECT_POOL if needs_pool(self._names, shown, k) else k
            if (self._session_weight > 0 and len(shown) >= k
                    and sessions_in(list(shown))):
                pool = max(pool, SESSION_POOL)
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
        hits = time_ranked(self._visible(results), self._windows)
        hits = subject_ranked(hits, self._names, self._subject_weight)
        hits = session_ranked(hits, self._session_weight)
        hits = substance_ranked(hits, self._substance_weight)
        hits = turn_focused(hits, req.query, self._turn_weight)
        hits = subject_lexical_ranked(hits, req.query, self._names,
                                      self._subject_lexical_weight)
        hits = restated_last(hits, self._duplicate_share)
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
        ``as_of``), re-ranked by the boosts, without the ``hidden`` ids, cut to ``k``, each
        hit with its validity as wire fields (``annotate``).

        ``hidden`` are rows a store's floors cut but listed in their places (SQLite): the
        boosts rank by place, so they re-rank the list a floors-off search returns, and the
        floors then only take rows out, never reorder the rest. The boosts read a hit's
        validity from its metadata or, annotated, from its fields alike, so annotating after
        ranking (only the hits returned) gives the order annotating first gave."""
        return [annotate(h) for h in self.order(results, hidden)]


async def recall_in_time(req: RecallRequest, search: Search, now: int, *,
                         boosts: Boosts = NO_BOOSTS) -> RecallResponse:
    """``search`` (the store's own recall) showing only what is true now or at ``as_of``,
    with memories of a time the question names ranked higher (``core.time_boost``), then
    memories whose subject the question names (``core.subject_boost``, ``subject_weight``),
    then memories whose session holds other good hits (``core.session_evidence``,
    ``session_weight``), then memories long enough to state something
    (``core.substance_prior``, ``substance_weight``), then, within each session, the turns
    whose own words match the question (``core.turn_focus``, ``turn_weight``), then the
    named subject's memories that a stemmed BM25 ranks first (``core.subject_lexical``,
    ``subject_lexical_weight``), and last a turn restating a higher hit of its session
    behind the next distinct hit (``core.restatement``, ``duplicate_share``). ``boosts``
    are the store's settings (``core.boosts``); a store that passes none gets no boost. The
    searches are those of :class:`RecallPlan` (a store may run the plan itself, see its
    docstring).
    """
    plan = RecallPlan(req, now, boosts)
    nxt: RecallRequest | None = plan.request()
    while nxt is not None:
        resp = await search(nxt)
        nxt = plan.deeper(resp.results)
    return resp.model_copy(update={"results": plan.finish(resp.results)})
