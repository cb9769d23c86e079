"""Expire-policy evaluation: which memories a policy selects at a given instant.

Keys are ANDed. "Older than N days" and "no recall in N days" are strict: a memory exactly N
days old is not yet older than N days. A memory never recalled counts its creation as its
last activity, so a fresh memory is not expired for lack of recalls it had no time to get.
"""

from __future__ import annotations

from dataclasses import dataclass

from memorywire.core.clock import DAY_MS
from memorywire.wire.models import ExpirePolicy, MemoryType

__all__ = ["ExpiryFacts", "needs_recall_tracking", "policy_matches"]


@dataclass(frozen=True)
class ExpiryFacts:
    type: MemoryType
    created_at: int
    confidence: float | None = None
    last_recalled_at: int | None = None


def needs_recall_tracking(policy: ExpirePolicy) -> bool:
    return policy.no_recall_in_days is not None


def policy_matches(policy: ExpirePolicy, facts: ExpiryFacts, now_ms: int) -> bool:
    if policy.type is not None and facts.type is not policy.type:
        return False
    if policy.older_than_days is not None and (
        now_ms - facts.created_at <= policy.older_than_days * DAY_MS
    ):
        return False
    if policy.confidence_below is not None:
        conf = 1.0 if facts.confidence is None else facts.confidence
        if conf >= policy.confidence_below:
            return False
    if policy.no_recall_in_days is not None:
        last = max(facts.created_at, facts.last_recalled_at or 0)
        if now_ms - last <= policy.no_recall_in_days * DAY_MS:
            return False
    return True
