"""The ranking rules, in the order the recall plan applies them: the one list of them.

Each rule re-ranks the order the rules before it left, so the order is part of the ranking:
the time a question names first, then the named person's memories, then the sessions that
hold several good hits, then the hits long enough to state something, then which turn of a
session comes first, then the named person's memories by a stemmed BM25 on that pool, and
last a restatement behind the next distinct hit. A new rule is one module with a
:class:`~memorywire.recall.rule.RankingRule`, one line here (where it belongs in that order)
and, when it has a weight, one field of :class:`~memorywire.recall.settings.RecallSettings`.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from memorywire.recall.restatement import RULE as RESTATEMENT
from memorywire.recall.rule import RankingRule
from memorywire.recall.session_evidence import RULE as SESSION_EVIDENCE
from memorywire.recall.settings import PORTABLE_RECALL, RecallSettings
from memorywire.recall.subject_boost import RULE as SUBJECT_BOOST
from memorywire.recall.subject_lexical import RULE as SUBJECT_LEXICAL
from memorywire.recall.substance_prior import RULE as SUBSTANCE_PRIOR
from memorywire.recall.time_boost import RULE as TIME_BOOST
from memorywire.recall.turn_focus import RULE as TURN_FOCUS

__all__ = ["RULES", "UNRANKED"]

RULES: tuple[RankingRule, ...] = (
    TIME_BOOST,
    SUBJECT_BOOST,
    SESSION_EVIDENCE,
    SUBSTANCE_PRIOR,
    TURN_FOCUS,
    SUBJECT_LEXICAL,
    RESTATEMENT,
)

#: Every rule's settings at 0 (off): what a store that runs no ranking rule of its own gets
#: (mem0, Letta, Cognee, the router). Rules without a setting (the time boost) still run.
_OFF: dict[str, Any] = {name: 0.0 for rule in RULES for name in rule.settings}
UNRANKED: RecallSettings = replace(PORTABLE_RECALL, **_OFF)
