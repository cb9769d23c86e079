"""Recall ranking: the settings a store's recall takes and the rules that re-rank its hits.

* :mod:`~memorywire.recall.settings`: :class:`RecallSettings`, every recall setting as one
  value, checked once; a store's URL keys are its fields.
* :mod:`~memorywire.recall.rule`: what a ranking rule is (:class:`RankingRule`) and what it
  sees of a recall (:class:`RecallContext`).
* one module per rule (``time_boost``, ``subject_boost``, ``session_evidence``,
  ``substance_prior``, ``turn_focus``, ``subject_lexical``, ``restatement``), and
  :mod:`~memorywire.recall.rules`, the one ordered list of them;
* :mod:`~memorywire.recall.plan`: a recall around any store's search, running that list.

Imports flow one way: settings <- rule <- the rule modules <- rules <- plan; the package sits
above ``core`` and below ``store``.
"""

from __future__ import annotations

from memorywire.recall.settings import RecallSettings

__all__ = ["RecallSettings"]
