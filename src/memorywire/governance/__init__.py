"""Governance: approval gates, declarative policies and a verifiable audit trail.

:class:`GovernedStore` wraps any ``MemoryStore`` (a backend or a router) with its own database
holding the approval queue and the hash-chained :class:`AuditLog`: a SQLite file by default, or a
``postgresql://`` URL so several server processes share one queue and one chain.
"""

from memorywire.governance.actor import acting_as, current_actor
from memorywire.governance.audit import AuditLog
from memorywire.governance.chain import AuditEntry, Checkpoint, VerifyReport
from memorywire.governance.policies import PolicyDecision, PolicySet, Rule
from memorywire.governance.store import GovernedStore

__all__ = [
    "AuditEntry",
    "AuditLog",
    "Checkpoint",
    "GovernedStore",
    "PolicyDecision",
    "PolicySet",
    "Rule",
    "VerifyReport",
    "acting_as",
    "current_actor",
]
