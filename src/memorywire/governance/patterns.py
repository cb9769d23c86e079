"""Approval patterns learned in the open: when reviewers keep approving the same kind of
write, offer the policy rule that would have committed it, as a diff to accept or ignore.

A *pattern* is the (agent, source, type) of staged remembers that a policy rule sent to
review (their ``reasoning`` names the rule). It is offered once its latest
``threshold`` decisions were all approvals: a rejection of the pattern resets the count, so
it has to earn ``threshold`` approvals again. Remembers staged for another reason (the writer
asked, a contradiction under ``conflicts: review``, a directive under ``directives: stage``,
an agent's write under ``agent_review``) are not counted: no rule decides those, so a rule
could not have committed them. A remember without a ``source`` is not counted either: a rule
cannot say "no source", and one without the condition would cover every source.

The offered rule (``decision: commit``) goes just before the rule that staged the pattern,
so every earlier rule (a ``reject`` among them) still wins. Nothing is applied here:
:func:`with_rule` builds the new policy, :func:`policy_diff` shows it, and the caller writes
it through :meth:`GovernedStore.set_policies`, which records the change.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass

from memorywire.governance.chain import canonical_json, sha256_hex
from memorywire.governance.policies import Match, PolicySet, Rule
from memorywire.governance.queue import QueueItem

__all__ = ["DEFAULT_THRESHOLD", "Pattern", "learn", "policy_diff", "policy_sha", "with_rule"]

#: Approvals in a row (no rejection among them) before a pattern is offered.
DEFAULT_THRESHOLD = 5
_STAGED_BY_RULE = re.compile(r"^governance policy rule '(?P<rule>.+)'$")


@dataclass(frozen=True)
class Pattern:
    agent_id: str
    source: str
    type: str
    #: The policy rule that staged them (the offered rule goes just before it).
    staged_by: str
    #: Approvals since the pattern's last rejection (or ever).
    approvals: int

    @property
    def key(self) -> str:
        return sha256_hex(canonical_json([self.agent_id, self.source, self.type]))[:16]

    def rule(self) -> Rule:
        return Rule(
            name=f"learned: {self.agent_id} {self.source} {self.type}",
            match=Match(operation="remember", agent_id=self.agent_id, source=self.source,
                        type=self.type),
            decision="commit",
            reason=f"reviewers approved {self.approvals} such writes in a row",
        )


def _facts(item: QueueItem) -> tuple[tuple[str, str, str], str] | None:
    m = _STAGED_BY_RULE.match(item.reasoning or "")
    source, mtype = item.request.get("source"), item.request.get("type")
    if m is None or not isinstance(source, str) or not source or not isinstance(mtype, str):
        return None
    return (item.agent_id, source, mtype), m.group("rule")


def learn(decided: Iterable[QueueItem], policies: PolicySet,
          threshold: int = DEFAULT_THRESHOLD) -> list[Pattern]:
    """The patterns to offer, most approvals first. ``decided``: remember items a reviewer
    decided, the latest decision first (:meth:`GovernedStore.decided_items`). A pattern whose
    staging rule is gone from ``policies``, or whose learned rule is in it already, is not
    offered."""
    if threshold < 1:
        raise ValueError("threshold must be at least 1")
    streak: dict[tuple[str, str, str], int] = {}
    rule_of: dict[tuple[str, str, str], str] = {}
    closed: set[tuple[str, str, str]] = set()
    for item in decided:
        facts = _facts(item)
        if facts is None or facts[0] in closed:
            continue
        key, rule = facts
        if item.status == "rejected":
            closed.add(key)  # older approvals came before this rejection: they do not count
            continue
        streak[key] = streak.get(key, 0) + 1
        rule_of.setdefault(key, rule)  # the latest approval's rule
    names = [r.name for r in policies.rules]
    out = [Pattern(k[0], k[1], k[2], rule_of[k], n) for k, n in streak.items()
           if n >= threshold and rule_of[k] in names]
    return sorted([p for p in out if p.rule().name not in names],
                  key=lambda p: (-p.approvals, p.agent_id, p.source, p.type))


def with_rule(policies: PolicySet, pattern: Pattern) -> PolicySet:
    """``policies`` with the pattern's rule just before the rule that staged it."""
    rules = list(policies.rules)
    at = next(n for n, r in enumerate(rules) if r.name == pattern.staged_by)
    rules.insert(at, pattern.rule())
    return PolicySet.from_dict({**policies.to_dict(),
                                "rules": [r.model_dump(exclude_none=True) for r in rules]})


def _lines(policies: PolicySet) -> list[str]:
    return json.dumps(policies.to_dict(), indent=2, sort_keys=True).splitlines()


def policy_diff(before: PolicySet, after: PolicySet) -> list[str]:
    """A unified diff of the two policies as JSON (the file format), lines without ends."""
    return list(difflib.unified_diff(_lines(before), _lines(after), "policy (now)",
                                     "policy (with the rule)", lineterm=""))


def policy_sha(policies: PolicySet) -> str:
    """What a reviewer saw the diff against: accepting it over another policy is refused."""
    return sha256_hex(canonical_json(policies.to_dict()))

