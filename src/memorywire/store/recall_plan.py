"""The recall plan's old address, kept while ``memorywire.router`` still imports it from here.

The plan lives in :mod:`memorywire.recall.plan` with the ranking rules it runs. The router is
outside this change's files; once its import names ``memorywire.recall.plan``, this module
goes.
"""

from __future__ import annotations

from memorywire.recall.plan import RecallPlan, Search, recall_in_time

__all__ = ["RecallPlan", "Search", "recall_in_time"]
