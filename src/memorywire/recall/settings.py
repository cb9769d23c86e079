"""Every recall setting a store takes, as one value checked once.

A store's recall has two halves: its own search (floors, the list gate, the full-text list's
weight, SQLite's pseudo-relevance feedback, the entity gate) and the ranking rules the recall
plan runs over the search's hits (``memorywire.recall.rules``). Every store that runs the plan
takes the same settings with the same meaning, so they live here as one frozen
:class:`RecallSettings`: a store holds one, its URL keys are this value's fields
(``store.url_settings``), and a new rule's weight is one more field here rather than a keyword,
a default import and a docstring paragraph in every store.

Three settings have no default that holds for every store, because a store's search decides
them: ``lexical_floor`` (a full-text matcher needs its own calibration before it may admit a
row the cosine floor refuses; SQLite's has one), ``tail_gap`` (SQLite judges a recall's whole
list; the others judge each row unless told) and ``feedback_weight`` (only SQLite has the
feedback round). They are required here, so code cannot build settings that silently take
another store's; each store publishes its defaults as ``DEFAULT_RECALL`` and a caller changes
what it means with ``dataclasses.replace(SqliteStore.DEFAULT_RECALL, turn_weight=0)``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection
from dataclasses import dataclass, field, fields
from typing import Any

from memorywire.core.fusion import checked_weight
from memorywire.errors import InvalidRequest

__all__ = [
    "DEFAULT_LEXICAL_FLOOR",
    "DEFAULT_RELEVANCE_FLOOR",
    "DUPLICATE_SHARE",
    "PORTABLE_RECALL",
    "RECOMMENDED_TAIL_GAP",
    "SESSION_WEIGHT",
    "SUBJECT_LEXICAL_WEIGHT",
    "SUBJECT_WEIGHT",
    "SUBSTANCE_WEIGHT",
    "TURN_WEIGHT",
    "RecallSettings",
    "checked_share",
]

#: Cosine floor for the default MiniLM model: just above the best cosine that the off-topic
#: calibration questions of ``benchmarks/microbench.py`` reach against its corpus, plus a
#: margin (the calibration and the stricter floor considered: docs/benchmarks.md). Another
#: embedder needs its own floor.
DEFAULT_RELEVANCE_FLOOR = 0.36
#: A row only the full-text list found must still be this close. Equal to the floor by
#: default: a store's full-text matcher needs its own calibration before it may admit rows
#: the floor refuses (SqliteStore has one: ``sqlite.search.SQLITE_LEXICAL_FLOOR``).
DEFAULT_LEXICAL_FLOOR = 0.36
#: ``tail_gap`` (SqliteStore's default; opt-in on PostgresStore and InMemoryStore): the
#: floors judge a recall's whole list (``core.scoring.hybrid_rank``'s ``tail_gap``); when a
#: row clears them, the others need only come within this much of them. Rows admitted only
#: as the tail are returned but not marked recalled, so ``no_recall_in_days`` expires what it
#: did before. The smallest gap on the plateau LongMemEval S dev120 measured
#: (docs/benchmarks.md).
RECOMMENDED_TAIL_GAP = 0.3

# The ranking rules' defaults (each rule's module says what its setting does; the fits behind
# these values are in docs/benchmarks.md).
#: ``recall.session_evidence``: RRF weight of the session list against the store's order.
SESSION_WEIGHT = 0.5
#: ``recall.subject_boost``: RRF weight of the named subject's memories; above ~0.15 a
#: two-person conversation's named speaker's turns all come first, also when the question
#: misattributes (LoCoMo's adversarial questions). 0.12 was chosen on LoCoMo's dev half
#: (conversations 0-4) with the subject's BM25 list off: cat. 1-4 R@5 as at 0.15, adversarial
#: above stemmed BM25 (docs/benchmarks.md, "rank31b").
SUBJECT_WEIGHT = 0.12
#: ``recall.substance_prior``: RRF weight of the substantive hits; from about 0.2 on, every
#: long turn outranks every short one.
SUBSTANCE_WEIGHT = 0.07
#: ``recall.turn_focus``: RRF weight of the own-text order within a session.
TURN_WEIGHT = 2.0
#: ``recall.restatement``: the share of word 5-grams that makes a restatement; off (0) by
#: default, because its one measured gain is not evidence that it generalises.
DUPLICATE_SHARE = 0.0
#: ``recall.subject_lexical``: RRF weight of the named subject's BM25 list when turned on
#: (the weight it was fitted at). Off by default (``subject_lexical_weight=0``): it won
#: LoCoMo's cat. 1-4 by 1.5 points of R@5 and cost its adversarial category 31 (every
#: question ranked the named person's turns first, also when it misattributes), a rule that
#: wins one benchmark and loses another.
SUBJECT_LEXICAL_WEIGHT = 0.3


def checked_share(share: float, name: str = "duplicate_share") -> float:
    """``share`` when it is a finite number in [0, 1] (0 turns the rule off), else
    ``invalid_request`` naming the setting: a share above 1 could never be reached, so the
    rule would be silently off."""
    value = checked_weight(share, name)
    if value > 1.0:
        raise InvalidRequest(f"{name} must be at most 1 (a share of word 5-grams), "
                             f"got {share!r}")
    return value


def _number(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InvalidRequest(f"{name} must be a finite number, got {value!r}")
    return float(value)


def _gap(value: Any, name: str) -> float | None:
    if value is None:
        return None
    if _number(value, name) < 0:
        raise InvalidRequest(f"{name} must be a finite number >= 0 or None, got {value!r}")
    return float(value)


def _positive(value: Any, name: str) -> float:
    if _number(value, name) <= 0:
        raise InvalidRequest(f"{name} must be > 0, got {value!r}")
    return float(value)


def _flag(value: Any, name: str) -> bool:
    if not isinstance(value, bool):
        raise InvalidRequest(f"{name} must be true or false, got {value!r}")
    return value


def _checked_by(check: Callable[[Any, str], Any]) -> dict[str, Any]:
    """A field's metadata: the check :meth:`RecallSettings.__post_init__` runs on it."""
    return {"check": check}


_NUMBER = _checked_by(_number)
_WEIGHT = _checked_by(checked_weight)


@dataclass(frozen=True, kw_only=True)
class RecallSettings:
    """How a store ranks and gates a recall: its search's settings and every ranking rule's.

    Checked once, when built (and again by ``dataclasses.replace``): a setting that cannot
    work is ``invalid_request`` naming it, never ignored at recall time. A weight of 0 turns
    its rule off. Settings a store's search does not have (PostgreSQL has no feedback round)
    are refused by that store unless left at their neutral value.
    """

    #: Cosine a hit must reach (-1: off; a caller's ``min_relevance`` replaces both floors).
    relevance_floor: float = field(default=DEFAULT_RELEVANCE_FLOOR, metadata=_NUMBER)
    #: Cosine a hit the full-text list also found must reach (the store's calibration).
    lexical_floor: float = field(metadata=_NUMBER)
    #: With a gap the floors judge the whole list (``core.scoring.hybrid_rank``); ``None`` is
    #: the per-row floor.
    tail_gap: float | None = field(metadata=_checked_by(_gap))
    #: RRF weight of the full-text list against the vector list (1.0: plain RRF).
    lexical_weight: float = field(default=1.0, metadata=_checked_by(_positive))
    #: RRF weight of SQLite's pseudo-relevance feedback round (``store.sqlite.feedback``).
    feedback_weight: float = field(metadata=_WEIGHT)
    #: A question naming someone known comes back empty when nothing answers it beyond the
    #: name (``core.entity_gate``).
    entity_gate: bool = field(default=True, metadata=_checked_by(_flag))
    #: ``recall.session_evidence``: a memory rises with the good hits of its session.
    session_weight: float = field(default=SESSION_WEIGHT, metadata=_WEIGHT)
    #: ``recall.subject_boost``: the memories of the person the question names rise.
    subject_weight: float = field(default=SUBJECT_WEIGHT, metadata=_WEIGHT)
    #: ``recall.substance_prior``: a hit long enough to state something rises.
    substance_weight: float = field(default=SUBSTANCE_WEIGHT, metadata=_WEIGHT)
    #: ``recall.turn_focus``: within a context-led session, the turn whose own words match.
    turn_weight: float = field(default=TURN_WEIGHT, metadata=_WEIGHT)
    #: ``recall.restatement``: a hit restating a higher hit of its session yields its place.
    duplicate_share: float = field(default=DUPLICATE_SHARE, metadata=_checked_by(checked_share))
    #: ``recall.subject_lexical``: the named person's memories ranked by a stemmed BM25.
    subject_lexical_weight: float = field(default=0.0, metadata=_WEIGHT)

    def __post_init__(self) -> None:
        for f in fields(self):
            object.__setattr__(self, f.name, f.metadata["check"](getattr(self, f.name), f.name))

    def refuse_unless_neutral(self, names: Collection[str], store: str) -> RecallSettings:
        """These settings, when each of ``names`` (settings ``store``'s search does not have)
        holds its neutral value (that of :data:`PORTABLE_RECALL`: the setting does nothing);
        else ``invalid_request`` naming the setting and the store."""
        for name in sorted(names):
            value, neutral = getattr(self, name), getattr(PORTABLE_RECALL, name)
            if value != neutral:
                raise InvalidRequest(f"{name}={value!r}: {store} has no such setting (only "
                                     f"{neutral!r}, which does nothing, is accepted)")
        return self


#: The defaults of a store whose search has no calibrated full-text floor, no list gate and
#: no feedback round (PostgreSQL, in-memory); every ranking rule at its default.
PORTABLE_RECALL = RecallSettings(lexical_floor=DEFAULT_LEXICAL_FLOOR, tail_gap=None,
                                 feedback_weight=0.0)
