"""Which full-text query units carry information about a recall's scope, and how much the
full-text list they build should weigh in the fusion (issue 31).

Every store's full-text leg ranks by query units (SQLite: a quoted word or six-letter prefix;
PostgreSQL: a stemmed lexeme; the in-memory store: a word). A unit held by most of the rows a
recall may return (its *scope*: agent, user, types, filters) tells them apart no better than
chance: the user's name in a per-user scope, "user" in mem0-style memories ("The user works as
..."). Ranked by it, the full-text list orders every memory by the name alone (short ones
first), and rank-only RRF lets that list outvote the vector list. Each store counts a unit's
document frequency *in the scope* its own way (a table-wide idf calls one user's name rare
among many users); the rule that reads the counts is here, once, so the three stores mean
the same thing by the lexical leg.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TypeVar

__all__ = [
    "COMMON_SHARE",
    "INFORMATIVE_SHARE",
    "SHARE_MIN_SCOPE",
    "is_common",
    "unit_weight",
    "weigh_units",
]

#: A query unit matching more than this share of the recall's scope is left out of the
#: full-text list (and of the list gate's agreement words, where a store has them).
COMMON_SHARE = 0.5
#: Scopes smaller than this keep every unit: a share of three rows says nothing.
SHARE_MIN_SCOPE = 5
#: A unit matching at most this share of the scope is fully informative; above it the
#: full-text list's RRF weight falls with the unit's scope idf (:func:`unit_weight`).
INFORMATIVE_SHARE = 0.1

_U = TypeVar("_U")


def is_common(df: int, scope_rows: int) -> bool:
    """Whether a unit held by ``df`` of ``scope_rows`` rows is too common to rank by."""
    return df > COMMON_SHARE * scope_rows


def unit_weight(df: int, scope_rows: int) -> float:
    """A unit's scope idf relative to a rare unit's, ``min(1, log(n/df) / log(1/share))``:
    1.0 for a unit in at most ``INFORMATIVE_SHARE`` of the scope, falling to
    ``log(2)/log(10)`` (about 0.3) at ``COMMON_SHARE``. ``df`` must be at least 1."""
    return min(1.0, math.log(scope_rows / df) / math.log(1.0 / INFORMATIVE_SHARE))


def weigh_units(units: Sequence[_U], scope_df: Callable[[_U], int],
                scope_rows: int) -> tuple[list[_U], float]:
    """The ``units`` worth ranking by, in their order, and the RRF weight of their list.

    ``scope_df`` gives a unit's document frequency in the scope of ``scope_rows`` rows; it is
    asked once per unit, in order, and not at all when the scope is under
    ``SHARE_MIN_SCOPE`` (every unit is then kept at weight 1.0). A unit matching no row of
    the scope is dropped (it ranks nothing), and so is a common one (:func:`is_common`). The
    weight is the best kept unit's :func:`unit_weight`: a list built only on words much of the
    scope holds counts for little against the vector list, one rare word makes it count fully.
    With no unit kept the weight is 0.0 (there is no list to weigh).
    """
    if scope_rows < SHARE_MIN_SCOPE:
        return list(units), 1.0
    kept: list[_U] = []
    weight = 0.0
    for unit in units:
        df = scope_df(unit)
        if df <= 0 or is_common(df, scope_rows):
            continue
        kept.append(unit)
        weight = max(weight, unit_weight(df, scope_rows))
    return kept, weight
