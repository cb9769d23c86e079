"""Declarative write policies: ordered rules, first match wins, default commit.

A rule matches when every condition it names holds (conditions are ANDed; a list value means
"any of"). Conditions about the memory itself (``source``, ``type``, ``tags``,
``confidence_below``, ``content_size_over``) only ever match a ``remember``: a forget or merge
carries no such facts, so a rule naming them never gates those operations by accident.

File format (JSON)::

    {"default": "commit",
     "rules": [{"name": "untrusted", "match": {"source": ["web_page", "tool_result"]},
                "decision": "review", "reason": "content from the open web"}],
     "conflicts": {"action": "review", "min_similarity": 0.5}}

``conflicts`` says what happens when a remember contradicts stored memories (the write-time
detector of :mod:`memorywire.core.contradiction`): ``report`` (the default) lists them in the
response and changes nothing; ``auto`` supersedes those at or above ``min_similarity``;
``review`` stages such a write for approval, proposing to supersede them; ``off`` does not
look (and saves the scan). ``"conflicts": "auto"`` is short for ``{"action": "auto"}``.

``directives`` says what happens when a remember reads like an instruction planted for the
agent (:mod:`memorywire.governance.directives`): ``flag`` (the default) writes it and records
the finding (score, rules that fired) in its audit entry; ``stage`` holds it for a reviewer
with the finding as the reason; ``off`` does not look. ``detectors`` names hooks run after the
built-in rules (``"package.module:name"``). ``"directives": "stage"`` is short for
``{"action": "stage"}``.

``agent_review`` names what an *agent-side* caller (see :mod:`memorywire.governance.actor`:
an agent token, any MCP tool call, the local agent side) may not commit by itself: such a
call is staged for a person whatever the rules decide, unless a rule rejects it. The kinds
are ``remember``, ``update`` (one that changes content), ``update_metadata`` (one that changes
only metadata, confidence or supersedes), ``forget`` (every forget), ``hard_forget``,
``erase``, ``merge`` and ``expire``; ``forget`` covers ``hard_forget`` and ``erase``, and
``hard_forget`` covers ``erase`` (an erase is a hard forget of a whole scope). Left out, it is
``["update", "hard_forget", "erase", "merge"]``: what destroys or overwrites a memory's text
waits for a person. ``[]`` lets agents commit everything the rules allow.

``history_text`` says how an update's replaced text is kept for ``history``: ``readable``,
``sealed`` (under the scope's per-user data key; needs ``per_user_keys``) or ``off`` (a keyed
hash only). Left out: ``sealed`` where ``per_user_keys`` is on, else ``readable`` (see
:mod:`memorywire.governance.revision_texts`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from memorywire.errors import ErrorDetail, InvalidRequest
from memorywire.wire.models import RememberRequest

__all__ = ["DEFAULT_AGENT_REVIEW", "AgentKind", "ConflictAction", "ConflictPolicy", "Decision",
           "DirectiveAction", "DirectivePolicy", "Match", "PolicyDecision", "PolicySet", "Rule"]

Decision = Literal["commit", "review", "reject"]
ConflictAction = Literal["report", "auto", "review", "off"]
DirectiveAction = Literal["flag", "stage", "off"]
HistoryText = Literal["readable", "sealed", "off"]
Operation = Literal["remember", "forget", "merge", "expire", "update"]
AgentKind = Literal["remember", "update", "update_metadata", "forget", "hard_forget", "erase",
                    "merge", "expire"]
#: What an agent-side caller may not commit by itself unless the policy says otherwise.
DEFAULT_AGENT_REVIEW: tuple[AgentKind, ...] = ("update", "hard_forget", "erase", "merge")
#: A kind of call, and the listed kinds that also cover it.
_COVERED_BY: dict[str, tuple[str, ...]] = {
    "hard_forget": ("forget",),
    "erase": ("forget", "hard_forget"),
}
_MEMORY_FACTS = ("source", "type", "tags", "confidence_below", "content_size_over")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Match(_Model):
    operation: Operation | list[Operation] = "remember"
    agent_id: str | list[str] | None = None
    user_id: str | list[str] | None = None
    source: str | list[str] | None = None
    type: str | list[str] | None = None
    #: Matches when ``metadata.tags`` contains any of these.
    tags: list[str] | None = None
    confidence_below: float | None = Field(default=None, ge=0.0, le=1.0)
    #: Content size in UTF-8 bytes.
    content_size_over: int | None = Field(default=None, ge=0)


class Rule(_Model):
    name: str = Field(min_length=1)
    match: Match = Field(default_factory=Match)
    decision: Decision
    reason: str | None = None


class ConflictPolicy(_Model):
    action: ConflictAction = "report"
    #: Only candidates at least this similar are superseded (``auto``) or staged (``review``);
    #: weaker ones are still reported.
    min_similarity: float = Field(default=0.0, ge=0.0, le=1.0)


class DirectivePolicy(_Model):
    action: DirectiveAction = "flag"
    #: Hooks run after the built-in rules, as ``package.module:name``.
    detectors: list[str] = Field(default_factory=list)


class _PolicyFile(_Model):
    default: Decision = "commit"
    rules: list[Rule] = Field(default_factory=list)
    conflicts: ConflictPolicy = Field(default_factory=ConflictPolicy)
    directives: DirectivePolicy = Field(default_factory=DirectivePolicy)
    agent_review: list[AgentKind] = Field(default_factory=lambda: list(DEFAULT_AGENT_REVIEW))
    history_text: HistoryText | None = None

    @field_validator("conflicts", "directives", mode="before")
    @classmethod
    def _short(cls, value: Any) -> Any:
        return {"action": value} if isinstance(value, str) else value


@dataclass(frozen=True)
class PolicyDecision:
    decision: Decision
    rule: str | None
    reason: str | None

    def to_dict(self) -> dict[str, Any]:
        return {"decision": self.decision, "rule": self.rule, "reason": self.reason}


def _one_of(want: str | list[str] | None, have: str | None) -> bool:
    if want is None:
        return True
    if have is None:
        return False
    return have in want if isinstance(want, list) else have == want


def _matches(m: Match, operation: str, agent_id: str, user_id: str | None, req: Any) -> bool:
    ops = m.operation if isinstance(m.operation, list) else [m.operation]
    if operation not in ops:
        return False
    if not (_one_of(m.agent_id, agent_id) and _one_of(m.user_id, user_id)):
        return False
    if not isinstance(req, RememberRequest):
        return all(getattr(m, f) is None for f in _MEMORY_FACTS)
    if not (_one_of(m.source, req.source) and _one_of(m.type, req.type.value)):
        return False
    if m.tags is not None:
        tags = (req.metadata or {}).get("tags")
        have = {str(t) for t in tags} if isinstance(tags, list) else set()
        if isinstance(tags, str):
            have = {tags}
        if not have & set(m.tags):
            return False
    if m.confidence_below is not None and not req.confidence < m.confidence_below:
        return False
    size = len(req.content_text().encode("utf-8"))
    return m.content_size_over is None or size > m.content_size_over


class PolicySet:
    """An immutable, ordered rule list; build a new one to change policy."""

    def __init__(self, rules: Sequence[Rule] = (), default: Decision = "commit",
                 conflicts: ConflictPolicy | None = None,
                 directives: DirectivePolicy | None = None,
                 agent_review: Sequence[AgentKind] = DEFAULT_AGENT_REVIEW,
                 history_text: HistoryText | None = None) -> None:
        self._rules = tuple(rules)
        self._default: Decision = default
        self._conflicts = conflicts or ConflictPolicy()
        self._directives = directives or DirectivePolicy()
        self._agent_review = frozenset(agent_review)
        self._history_text: HistoryText | None = history_text

    @property
    def history_text(self) -> HistoryText | None:
        """``None``: the store's default (sealed with per-user keys, else readable)."""
        return self._history_text

    @property
    def agent_review(self) -> frozenset[str]:
        return self._agent_review

    def agents_wait(self, kind: str) -> bool:
        """Whether an agent-side call of ``kind`` is staged for a person (``agent_review``)."""
        return kind in self._agent_review or any(
            k in self._agent_review for k in _COVERED_BY.get(kind, ()))

    @property
    def rules(self) -> tuple[Rule, ...]:
        return self._rules

    @property
    def conflicts(self) -> ConflictPolicy:
        return self._conflicts

    @property
    def directives(self) -> DirectivePolicy:
        return self._directives

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PolicySet:
        try:
            parsed = _PolicyFile.model_validate(data)
        except ValidationError as exc:
            details = [
                ErrorDetail("/" + "/".join(str(p) for p in e["loc"]), str(e["type"]), str(e["msg"]))
                for e in exc.errors()
            ]
            raise InvalidRequest("invalid governance policy", details) from exc
        return cls(parsed.rules, parsed.default, parsed.conflicts, parsed.directives,
                   parsed.agent_review, parsed.history_text)

    @classmethod
    def from_file(cls, path: str | Path) -> PolicySet:
        try:
            with open(path, encoding="utf-8") as fh:
                data = json.load(fh)
        except (OSError, ValueError) as exc:
            raise InvalidRequest(f"cannot read policy file {path}: {exc}") from exc
        if not isinstance(data, dict):
            raise InvalidRequest(f"policy file {path} must hold a JSON object")
        return cls.from_dict(data)

    def save(self, path: str | Path) -> None:
        """Write the policy to ``path`` as a policy file, atomically (a crash leaves the old
        file or the new one, never half of one), keeping the file's permissions."""
        target = Path(path)
        tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(self.to_dict(), indent=2) + "\n", encoding="utf-8")
        if target.exists():
            os.chmod(tmp, target.stat().st_mode & 0o777)
        os.replace(tmp, target)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "default": self._default,
            "rules": [r.model_dump(exclude_none=True) for r in self._rules],
        }
        if self._conflicts != ConflictPolicy():  # unchanged hash for policies without it
            out["conflicts"] = self._conflicts.model_dump()
        if self._directives != DirectivePolicy():
            out["directives"] = self._directives.model_dump()
        if self._agent_review != frozenset(DEFAULT_AGENT_REVIEW):  # the same, for this one
            out["agent_review"] = sorted(self._agent_review)
        if self._history_text is not None:
            out["history_text"] = self._history_text
        return out

    def decide(
        self, operation: str, agent_id: str, user_id: str | None = None, request: Any = None
    ) -> PolicyDecision:
        for rule in self._rules:
            if _matches(rule.match, operation, agent_id, user_id, request):
                return PolicyDecision(rule.decision, rule.name, rule.reason)
        return PolicyDecision(self._default, None, None)

    def decide_remember(self, req: RememberRequest) -> PolicyDecision:
        return self.decide("remember", req.agent_id, req.user_id, req)
