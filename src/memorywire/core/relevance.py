"""A recall hit's ``relevance``: a number in 0..1 a person can put a threshold on.

The fusion ``score`` is a rank statistic (RRF: 1/60 for a top hit, whatever it says), so it
cannot tell "close" from "nothing better was stored". ``relevance`` is calibrated on the
embedding's cosine instead, with full-text agreement as a small credit:

    relevance = 1 / (1 + exp(-RELEVANCE_SLOPE * (cosine + LEXICAL_CREDIT * lexical
                                                 - RELEVANCE_MIDPOINT)))

* ``RELEVANCE_MIDPOINT`` (0.36) is the default cosine floor for the default MiniLM model,
  fitted on the off-topic questions of ``benchmarks/corpus/calibration.jsonl`` (see
  ``recall.settings.DEFAULT_RELEVANCE_FLOOR``): relevance 0.5 is the point above which a hit is
  taken as "about the question" by default.
* ``RELEVANCE_SLOPE`` (13.7 = ln 9 / 0.16) spreads the cosines seen on that set: cosine 0.20
  (an off-topic question's typical best hit) maps to 0.1, cosine 0.52 (a paraphrase of a
  stored fact) to 0.9.
* ``LEXICAL_CREDIT`` (0.04) is SqliteStore's calibrated gap between its cosine floor and its
  lexical floor (0.36 - 0.32): a row the full-text index also matched needs that much less
  cosine for the same relevance, so ``min_relevance=0.5`` keeps exactly the rows the default
  floors keep.

Another embedder has other cosines: the constants are the default model's.

Order. The re-ranking rules after the search (time, subject, session, ...) move hits by
evidence the cosine does not see, so a hit's own relevance can exceed that of a hit ranked
above it. A recall reports :func:`ordered` relevances: a hit's relevance is at most that of
every hit above it, so the answer reads best first by relevance too, and a threshold on
``relevance`` keeps a prefix of the answer (the order the store chose), never a scattered
subset. Lowering a value can only make the hits at or above a threshold more precise.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = [
    "DEFAULT_MIN_RELEVANCE",
    "LEXICAL_CREDIT",
    "RELEVANCE_MIDPOINT",
    "RELEVANCE_SLOPE",
    "ordered",
    "relevance",
]

RELEVANCE_MIDPOINT = 0.36
RELEVANCE_SLOPE = math.log(9.0) / 0.16
LEXICAL_CREDIT = 0.04
#: The relevance the default floors correspond to.
DEFAULT_MIN_RELEVANCE = 0.5


def relevance(cosine: float, *, lexical: bool) -> float:
    """The calibrated relevance of a hit with this cosine (and full-text match or not)."""
    x = RELEVANCE_SLOPE * (cosine + (LEXICAL_CREDIT if lexical else 0.0) - RELEVANCE_MIDPOINT)
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


def ordered(values: Sequence[float | None]) -> list[float | None]:
    """``values`` (a ranked answer's relevances, best first) capped by every value above:
    the running minimum, so the list is non-increasing. ``None`` (a store that reports no
    relevance) stays ``None`` and caps nothing."""
    out: list[float | None] = []
    cap = math.inf
    for v in values:
        if v is not None:
            cap = min(cap, v)
            v = cap
        out.append(v)
    return out
