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
"""

from __future__ import annotations

import math

__all__ = [
    "DEFAULT_MIN_RELEVANCE",
    "LEXICAL_CREDIT",
    "RELEVANCE_MIDPOINT",
    "RELEVANCE_SLOPE",
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
