"""The weights of a store's re-ranking rules, checked once.

Six rules re-rank a recall's hits after the search (``core.subject_boost``,
``core.session_evidence``, ``core.substance_prior``, ``core.turn_focus``,
``core.subject_lexical``, and ``core.restatement`` with a share rather than a weight). Every
store that runs them takes the same settings with the same meaning, so they are validated
and carried as one value: a store holds a :class:`Boosts` and hands it to the recall plan,
rather than repeating the checks and keyword arguments.
"""

from __future__ import annotations

from dataclasses import dataclass

from memorywire.core.fusion import checked_weight
from memorywire.core.restatement import DUPLICATE_SHARE, checked_share

__all__ = ["NO_BOOSTS", "Boosts"]


@dataclass(frozen=True)
class Boosts:
    """RRF weights of the rank-fusion rules and the restatement share (0 turns one off).
    Build it with :meth:`checked` from user settings: a setting that cannot work is refused
    when the store is made."""

    session: float = 0.0
    subject: float = 0.0
    substance: float = 0.0
    turn: float = 0.0
    #: ``duplicate_share`` (``core.restatement``): a share of word 5-grams, not a weight.
    duplicate: float = 0.0
    subject_lexical: float = 0.0

    @classmethod
    def checked(cls, *, session_weight: float, subject_weight: float,
                substance_weight: float, turn_weight: float,
                duplicate_share: float = DUPLICATE_SHARE,
                subject_lexical_weight: float = 0.0) -> Boosts:
        """The weights, each a finite number >= 0, and the share, a finite number in
        [0, 1], else ``invalid_request`` naming the setting (``session_weight``,
        ``subject_weight``, ..., ``duplicate_share``)."""
        return cls(session=checked_weight(session_weight, "session_weight"),
                   subject=checked_weight(subject_weight, "subject_weight"),
                   substance=checked_weight(substance_weight, "substance_weight"),
                   turn=checked_weight(turn_weight, "turn_weight"),
                   duplicate=checked_share(duplicate_share, "duplicate_share"),
                   subject_lexical=checked_weight(subject_lexical_weight,
                                                  "subject_lexical_weight"))


#: No re-ranking: what a store that passes no weights gets (mem0, Letta, Cognee, the router).
NO_BOOSTS = Boosts()
