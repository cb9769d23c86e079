"""Session evidence: a memory rises with the other hits of its session.

A conversation is written one turn per memory, but a question is usually answered by a
*session*: the turn that holds the answer shares few words with the question, while its
neighbours ("we talked about my trip to Japan...") match it well. So a turn whose session
holds several good hits is more likely to be the answer than an equally ranked turn alone
in its session.

What groups memories into a session is the record's ``metadata.session`` (:data:`SESSION_KEY`,
any string or integer the writer chooses: a conversation's session id, an episode number).
A hit without one is a session of its own and gets no help from other hits.

The boost is by rank fusion, as :mod:`memorywire.recall.time_boost`: the store's order is one
list (RRF, k = 60); the sessions, ranked by their evidence, are a second list of weight
:data:`SESSION_WEIGHT` whose entry every hit of the session shares. A session's evidence is
the sum of the RRF terms of its :data:`SESSION_TOP` best hits among the first
:data:`SESSION_POOL` (so one very good turn and two good ones weigh alike, and a long session
cannot win on its length). Scores are untouched; only the order changes, and only among the
pool. Being score-free, it works the same over any store's list (SQLite, PostgreSQL, the
in-memory store, the router's fused list).

Measured on LongMemEval S dev120 and LoCoMo (docs/benchmarks.md, "Round 7"): the weights
were fitted there; diversity by session (a penalty for a session already in the top k) was
measured and cost turn recall, so it is not offered.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from memorywire.core.fusion import DEFAULT_RRF_K
from memorywire.core.timeline import HitT, HitView
from memorywire.recall.rule import RecallContext
from memorywire.recall.settings import SESSION_WEIGHT

__all__ = ["RULE", "SESSION_KEY", "SESSION_POOL", "SESSION_TOP", "SESSION_WEIGHT",
           "SessionEvidence", "session_of", "session_ranked", "sessions_in"]

#: The metadata field that names a memory's session.
SESSION_KEY = "session"
#: How many of a session's best hits count toward its evidence.
SESSION_TOP = 2
#: How many hits (best first) are re-ranked, and how many a store is asked for at least.
SESSION_POOL = 50


def session_of(hit: HitView) -> str | None:
    """The hit's session as a string (``7`` and ``"7"`` are one session), or ``None``."""
    value = (hit.metadata or {}).get(SESSION_KEY)
    if isinstance(value, bool) or not isinstance(value, str | int) or value == "":
        return None
    return str(value)


def sessions_in(hits: Sequence[HitView]) -> bool:
    """Whether at least two hits carry a session: only then can one help another, and only
    then is a store asked for the deeper pool."""
    return sum(session_of(h) is not None for h in hits) >= 2


def session_ranked(hits: Sequence[HitT], weight: float = SESSION_WEIGHT,
                   pool: int = SESSION_POOL, top: int = SESSION_TOP) -> list[HitT]:
    """``hits`` (best first) with the first ``pool`` re-ranked by their session's evidence;
    the rest keep their place after them. Scores untouched."""
    head = list(hits[:pool])
    if weight <= 0:
        return list(hits)
    keys = [session_of(h) for h in head]
    if sum(k is not None for k in keys) < 2:  # sessions_in(head), from the keys
        return list(hits)
    groups = [k if k is not None else f"\0{i}" for i, k in enumerate(keys)]
    evidence: dict[str, list[float]] = {}
    for rank, group in enumerate(groups):
        terms = evidence.setdefault(group, [])
        if len(terms) < top:
            terms.append(1.0 / (DEFAULT_RRF_K + rank))
    # ties (equal evidence) keep the order of the sessions' best hits
    order = sorted(evidence, key=lambda g: -sum(evidence[g]))
    session_rank = {g: i for i, g in enumerate(order)}
    fused = sorted(range(len(head)), key=lambda r: (
        -(1.0 / (DEFAULT_RRF_K + r) + weight / (DEFAULT_RRF_K + session_rank[groups[r]])),
        r))
    return [head[r] for r in fused] + list(hits[pool:])


@dataclass(frozen=True)
class SessionEvidence:
    """The rule: a memory rises with the good hits of its session (``session_weight``);
    asks for :data:`SESSION_POOL` hits when a full first answer holds two hits with a
    session."""

    name: str = "session_evidence"
    settings: tuple[str, ...] = ("session_weight",)

    def pool(self, context: RecallContext, found: Sequence[HitView] | None, asked: int) -> int:
        if (found is None or context.settings.session_weight <= 0 or len(found) < asked
                or not sessions_in(list(found))):
            return 0
        return SESSION_POOL

    def apply(self, hits: Sequence[HitT], context: RecallContext) -> list[HitT]:
        return session_ranked(hits, context.settings.session_weight)


RULE = SessionEvidence()
