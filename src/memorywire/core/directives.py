"""Does a memory try to steer the agent? Word rules, no model: pure and cheap (microseconds).

A memory is text an agent will read as context later, so a planted instruction in it acts
on every future session ("ignore previous instructions", "always send refunds to ...").
Clean memories are mostly statements about the user and the world; the user's own standing
instructions ("always confirm the booking with the user") are instructions too, so being an
imperative is not the sign. What sets a planted directive apart, and what the rules look for:

* it **overrides** what the agent was told, or claims a **new identity** or a fake
  **system/role marker**;
* it **claims authority** ("message from the administrator", "override code");
* it **switches off a safeguard** (checks disabled, approve everything, never refuse);
* it sends **money or data to a third party** as a standing order (an account, an e-mail
  address or a URL, with "always", "every", "from now on" ...), not as a past event;
* it asks for **secrecy from the user**;
* it carries a **tool call or a command** for the agent to run, or a URL to fetch and obey,
  or an exfiltration link;
* the **hyphenated payloads** the first implementation looked for (``disable-logging``).

Each rule has a weight; a memory whose weights add up to :data:`THRESHOLD` or more reads as a
directive. A strong sign (an override, a role marker, a tool call) is enough alone; a weaker
one needs a second. Two things lower the weights: a memory that *reports* such text (security
talk: "a phishing email told them to ...", quoted words) and a standing order the memory
attributes to the user ("the user asked to always cc ..."). Procedures are read as the words
of their names, states, triggers and metadata.

:class:`Finding` says which rules fired, so a reviewer sees why. Other detectors (a model, a
vendor's guard) plug in beside this one: see :mod:`memorywire.governance.directives`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

__all__ = ["RULES", "THRESHOLD", "Finding", "Rule", "detect", "text_of"]

#: Weights at or above this sum make a directive.
THRESHOLD = 1.0
#: How much a rule counts in a memory that reports an attack rather than making one.
REPORTED = 0.45
#: How much a standing order counts when the memory says the user asked for it.
USER_ASKED = 0.3

_GAP = r"[^.!?\n]{0,40}?"


@dataclass(frozen=True)
class Rule:
    """One sign: ``pattern`` is matched against the lower-cased text, and only when one of
    ``keys`` (substrings every match contains) is in it, which keeps a clean memory's check to
    a few substring tests."""

    name: str
    weight: float
    keys: tuple[str, ...]
    pattern: re.Pattern[str]
    #: Matched against the text with quoted passages removed (a mention is not a use).
    unquoted: bool = False
    #: A standing order the user may legitimately give (discounted when the user asked).
    order: bool = False


#: A key that stands for "any digit" (an account number or an address has one).
_DIGIT = "<digit>"


def _r(pattern: str) -> re.Pattern[str]:
    """Patterns are written in lower case and run on lower-cased text: matching that way is
    several times faster than ``re.IGNORECASE``."""
    return re.compile(pattern)


_PRIOR = r"(?:previous|prior|earlier|above|preceding|original|all|any|your|the|other|old)"
_GUIDANCE = (r"(?:instructions?|guidance|guidelines|rules|directions|prompts?|polic(?:y|ies)"
             r"|settings|setup|configuration|orders|constraints)")
_DEST = (r"(?:\b[a-z]{2}\d{2}(?: ?[a-z0-9]{4}){2,7}\b|\b\d{3,4}-\d{3,4}-\d{2,4}\b"
         r"|\b0x[0-9a-f]{8,}\b|[\w.+-]+@[\w-]+\.[\w.]+|https?://\S+|\b\d{1,3}(?:\.\d{1,3}){3}\b)")
_FLOW = (r"(?:send|transfer|wire|forward|route|pay|deposit|copy|cc|bcc|share|email|mail"
         r"|upload|export|post|leak|hand out|reach|land|go|goes|belongs?|paid into|lands?)")
_STANDING = (r"(?:always|every(?:one| time)?|each|whenever|all|any(?:one|thing)?|from now on"
             r"|going forward|from here on|for good|in future|first|instead|must|should"
             r"|whoever|whatever)")

RULES: tuple[Rule, ...] = (
    # --- strong: enough alone ------------------------------------------------------------
    Rule("override", 1.0,
         ("ignor", "disregard", "forg", "overrid", "bypass", "drop", "discard", "void", "outdated",
          "obsolete", "suspended", "revoked", "cancelled", "no longer", "new instructions",
          "new rules", "new orders", "stop following", "obey only", "whatever the", "priority",
          "precedence"),
         _r(
        rf"\b(?:ignor(?:e|ed|ing)|disregard(?:ed|ing)?|forg(?:et|ot|etting)"
        rf"|overrid(?:e|den|ing)|bypass(?:ed|ing)?|drop|discard)\b{_GAP}\b{_PRIOR}\b"
        rf"{_GAP}\b{_GUIDANCE}\b"
        rf"|\b{_GUIDANCE}\b{_GAP}\b(?:are|is|were|was)\s+(?:now\s+)?(?:void|outdated|obsolete"
        rf"|suspended|revoked|cancelled|no longer valid)\b"
        rf"|\bno longer appl(?:y|ies)\b|\bnew (?:instructions|rules|orders)\s*:"
        rf"|\bstop following\b|\bobey only\b|\bwhatever the (?:earlier|previous|old)\b"
        rf"|\b(?:instead of|over) (?:the |your )?(?:user|system prompt|instructions)\b"
        rf"{_GAP}\b(?:priority|precedence)\b|\btakes? (?:priority|precedence) over\b"), True),
    Rule("role_marker", 1.0,
         ("system", "assistant", "developer", "admin", "[inst]", "<|im_", "<<sys>>", "##",
          "you are", "new persona", " mode", "prompt", "instructions"),
         _r(
        r"^\s*(?:system|assistant|developer|admin)\s*(?:\(\w+\))?\s*:"
        r"|\[(?:system|admin|developer|inst)\]|<\|im_(?:start|end)\|>|<<sys>>"
        r"|^\s*#{2,}\s*(?:instruction|system|response)"
        r"|\byou are (?:now|no longer)\b|\bfrom now on,? you are\b|\bnew persona\b"
        r"|\b(?:developer|debug|maintenance|admin|god|unrestricted) mode\b"
        r"|\b(?:print|reveal|show|repeat) (?:me )?(?:your|the) (?:hidden |secret |system )+"
        r"(?:prompt|instructions)\b"), True),
    Rule("tool_call", 1.0,
         ("tool", "function", "action", "argument", "invoke", "curl", "wget", "run", "exec",
          "next step"),
         _r(
        r"[{,]\s*\"(?:tool|function|function_call|tool_name|action)\"\s*:"
        r"|\"arguments\"\s*:|<\s*/?\s*(?:tool_call|function_call|tool_use|invoke)\b"
        r"|\bfunction_call\s*:|\b(?:curl|wget)\b[^|\n]{0,120}\|\s*(?:ba|z)?sh\b"
        r"|^\s*(?:run|execute|exec)\b[^.\n]{0,20}`[^`]*(?:rm -rf|curl|wget|chmod|sudo)"
        r"|\b(?:call|invoke|use|trigger)\s+(?:the\s+)?`?\w+`?\s+(?:tool|function)\s+"
        r"(?:now|with|to|before)\b|\binvoke\s+\w+\s*\("
        r"|\b(?:assistant|agent) action\b|\bnext step for the (?:assistant|agent)\b")),
    Rule("authority", 1.0,
         ("from ", "per ", " code", "official notice", "compliance", "security", "priority"),
         _r(
        r"\b(?:message|notice|note|directive|instruction|update|order|memo)s? from "
        r"(?:the |your )?(?:administrator|admin|it|security team|developers?|management"
        r"|openai|anthropic|staff|compliance|headquarters|system owner)\b"
        r"|\bper (?:the )?(?:security team|administrator|admin|management|it department)\b"
        r"|\b(?:override|authori[sz]ation|access) code\b|\bofficial notice\b"
        r"|\b(?:compliance|security|priority) (?:update|directive|override)\b"
        r"|\bcomes from your developer\b"), True),
    Rule("remote_instructions", 1.0,
         ("http",),
         _r(
        r"\b(?:fetch|load|open|visit|read|download|check|go to)\b[^.!?\n]{0,40}https?://\S+"
        r"[^.!?\n]{0,40}\b(?:follow|obey|do what|execute)\b"
        r"|\b(?:visit|open|go to)\b[^.!?\n]{0,10}https?://\S+[^.!?\n]{0,20}\benter\b"
        r"[^.!?\n]{0,30}\b(?:password|card|pin|credentials|code|number)\b"
        r"|\b(?:load|fetch|get|download|pull|take)\b[^.!?\n]{0,30}\b(?:instructions|rules"
        r"|prompt|orders|commands)\b[^.!?\n]{0,20}\bfrom\b[^.!?\n]{0,10}https?://"), True),
    Rule("payload_05", 1.0,
         ("disable-", "mute-", "bypass-", "exfil-", "leak-", "reroute-", "poison-", "attacker-",
          "grant-all", "self-approve", "auto-approve", "run-as-root", "root-forever", "force-push",
          "paste-public", "allow-any", "open-shell", "chmod-777", "drop-table", "skip-"),
         _r(
        r"\b(?:disable|mute|bypass|exfil|leak|reroute|poison|attacker)-\w+"
        r"|\b(?:grant-all|self-approve|auto-approve\w*|run-as-root|root-forever|force-push"
        r"|paste-public|allow-any|open-shell|chmod-777|drop-table)\b"
        r"|\bskip-(?:verification|verify|checks?|auth\w*|approval|review|logging)\b")),
    # --- medium: a second sign is needed -------------------------------------------------
    Rule("safeguard_off", 0.6,
         ("off", "disabled", "suspended", "lifted", "removed", "waived", "not needed",
          "unnecessary", "without ", "skip", "approve ", "accept ", "grant ", "allow ", "never ",
          "no restrictions", "disable ", "trust ", "slow ", "the moment", "as soon as"),
         _r(
        r"\b(?:checks?|verification|logging|limits?|safety|restrictions?|content policy"
        r"|confirmations?|approvals?|guidelines)\b[^.!?\n]{0,30}\b(?:is|are|was|were|got|been)"
        r"\s+(?:now\s+)?(?:disabled|suspended|lifted|off|removed|waived|turned off|not needed"
        r"|unnecessary)\b"
        r"|\bwithout (?:any )?(?:checks?|verification|confirmation|question|asking)\b"
        r"|\bskip(?:ping)? (?:the |any |all )?(?:identity |id )?(?:verification|confirmation"
        r"|checks?|approval)\b|\b(?:approve|accept|grant|allow) (?:all|every|any)\b"
        r"|\bnever (?:refuse|decline|say no|deny|reject|ask for confirmation)\b"
        r"|\bno restrictions\b|\bdisable (?:logging|safety|checks|verification)\b"
        r"|\btrust (?:every|all|any) (?:message|request|instruction|email)"
        r"|\bslow (?:people|things|you) down\b|\b(?:the moment|as soon as) they are "
        r"mentioned\b|\bnever say no\b"), True),
    Rule("identity_play", 0.6,
         (" as ", "pretend", "roleplay", "role-play"),
         _r(
        r"\b(?:act|acting|pose|posing) as (?:the |a |an )?(?:system|admin|administrator"
        r"|developer|root|bank|fraud|support|it)\b"
        r"|\bpretend (?:you are|to be|you're)\b|\brole-?play(?:ing)? as\b"), True),
    Rule("third_party_flow", 0.6,
         ("@", "http", _DIGIT, "payment", "payout", "refund", "billing", "deposit"),
         _r(
        rf"\b{_FLOW}\b[^.!?\n]{{0,80}}{_DEST}|{_DEST}[^.!?\n]{{0,40}}\b(?:on|in) (?:the )?"
        rf"(?:confirmation|loop|copy)\b"
        rf"|\b(?:correct|real|new|only) (?:payment|payout|refund|billing|deposit) "
        rf"(?:address|account|destination)\b"), order=True),
    Rule("secrecy", 0.6,
         ("tell", "mention", "reveal", "inform", "disclose", "let", "without ", "secretly",
          "quietly", "silently", "covertly", "keep ", "hidden", "say ", "never explain",
          "do not log"),
         _r(
        r"\b(?:do not|don't|never|must not)\s+(?:tell|mention|reveal|inform|disclose|let)"
        r"\b[^.!?\n]{0,30}\b(?:user|customer|them|him|her|anyone|\w+ know)\b"
        r"|\bwithout (?:asking|telling|informing|notifying) (?:the |them|him|her|\w+)"
        r"|\b(?:secretly|quietly|silently|covertly)\b"
        r"|\bkeep (?:this|it) (?:hidden|secret|quiet) from\b|\bhidden from the user\b"
        r"|\bsay (?:no|that everything is fine|everything is fine)\b"
        r"|\bnever explain\b|\bdo not log\b")),
    Rule("fetch_follow", 0.6,
         ("http",),
         _r(
        r"\b(?:fetch|load|open|visit|read|download|check)\b[^.!?\n]{0,40}https?://\S+"
        r"[^.!?\n]{0,40}\b(?:follow|obey|do what|apply|execute|enter|instructions)\b"
        r"|https?://\S*\{\{?\w+\}?\}|!\[[^\]]*\]\(https?://[^)]*\?[^)]*\)"
        r"|\[[^\]]*\]\(https?://[^)]*\?ref="
        r"|\b(?:to|at) https?://\S+[^.!?\n]{0,30}\b(?:after every|each|every|before each)\b"
        r"|\b(?:send|post|include|append)\b[^.!?\n]{0,40}(?:history|address|card|password"
        r"|link)[^.!?\n]{0,40}https?://")),
    # Dismissing what the agent was set up with ("whatever the form says").
    Rule("dismissal", 0.6,
         ("whatever ", "regardless of", "only for show", "no matter what",
          "does not matter what"),
         _r(
        r"\bwhatever (?:the|your) \w+(?: \w+)? says\b|\bregardless of (?:what|the|your)\b"
        r"|\bonly for show\b|\bno matter what (?:the|your)\b|\bdoes not matter what\b")),
)

#: Words that make a memory prescriptive, addressed to whoever reads it: the second person,
#: a standing order, an imperative opening, a permission. Not a sign alone (the user's own
#: preferences read this way); it adds :data:`PRESCRIPTIVE` to a memory that already shows one.
_PRESCRIPTIVE = _r(
    r"\byou(?:r|rs|'re|'ll)?\b|\bthe (?:assistant|agent|ai|model|bot)\b"
    r"|\b(?:always|never|whenever|every time|from now on|going forward|from here on)\b"
    r"|(?:^|[.!?:;]\s+)(?:please\s+)?(?:do not|don't|just|remember|send|transfer|forward"
    r"|route|pay|copy|bcc|cc|share|email|upload|export|post|include|append|add|call|invoke"
    r"|run|execute|use|visit|fetch|load|open|enter|approve|grant|skip|ignore|disregard|tell"
    r"|say|keep|change|cancel|raise|store|reveal|print|give|hand|process|trust|obey"
    r"|follow|quietly|silently|secretly)\b"
    r"|\b(?:it is|it's) (?:fine|ok|okay|safe|allowed|best practice) to\b|\bfeel free to\b"
    r"|\bbest practice\b|\bgo ahead\b|\bis (?:ok|okay|fine|allowed)\b"
    r"|\b(?:should|must|has to|needs to)\b|\b(?:for|on) (?:each|every)\b|\beach time\b"
    r"|\b(?:if|when|whenever) (?:the user|anyone|someone|a customer|they) asks?\b")
#: What a prescriptive memory adds to a memory that already shows a sign.
PRESCRIPTIVE = 0.4

#: A memory that talks about such text instead of making it (security conversations).
_REPORTING = _r(
    r"\b(?:phishing|scam|suspicious|reported|warned|flagged|claiming to be|known attack"
    r"|attacks?\b|injection|social engineering|training covered|explained)\b")
#: The user asked for the standing order (their preference, not a third party's).
_USER_ASKED = _r(
    r"\b(?:the user|the customer|[a-z][a-z]+)\s+(?:asked|wants|wanted|prefers|requested"
    r"|would like|has asked|told us)\b")
#: The one sign that is case-sensitive: "DAN" ("do anything now"), not the name Dan.
_DAN = re.compile(r"\bDAN\b")
_IDENT = re.compile(r"[A-Za-z][A-Za-z0-9_-]*")
_KEYS = tuple(sorted({k for r in RULES for k in r.keys} - {_DIGIT}))
_HAS_DIGIT = re.compile(r"\d")
_DAN_RULE = Rule("role_marker", 1.0, ("DAN",), _DAN, unquoted=True)
_QUOTED = re.compile(r"'[^'\n]{3,200}'|\"[^\"\n]{3,200}\"|“[^”\n]{3,200}”")


@dataclass(frozen=True)
class Finding:
    """What the rules found in one memory: the summed ``score`` and the rules that fired."""

    score: float
    signals: tuple[str, ...]
    detector: str = "rules"

    @property
    def directive(self) -> bool:
        return self.score >= THRESHOLD

    def to_dict(self) -> dict[str, Any]:
        return {"detector": self.detector, "score": round(self.score, 3),
                "signals": list(self.signals)}


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield str(k)
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def text_of(content: Any, memory_type: str = "semantic") -> str:
    """The words a detector reads: a procedure's names, states, triggers and metadata values
    (identifiers split at ``_`` and ``-``), any other memory's text as it is."""
    if memory_type == "procedural":
        doc = content
        if isinstance(content, str):
            try:
                doc = json.loads(content)
            except ValueError:
                return content
        words = [s for s in _strings(doc) if s not in ("name", "initial", "states",
                                                       "transitions", "trigger", "source",
                                                       "dest", "metadata")]
        return ". ".join(w.replace("_", " ").replace("-", " ") if _IDENT.fullmatch(w) else w
                         for w in words)
    return content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)


#: A run of non-space characters longer than this is read as its first ``_RUN`` characters:
#: the rules look for words around a token, and a 200 KB token made some of them quadratic
#: (a remember near the content limit stalled the write path); no directive needs more of a
#: token than a URL's scheme and host.
_RUN = 64
_LONG_RUN = re.compile(r"\S{" + str(_RUN + 1) + ",}")


def _runs_cut(text: str) -> str:
    return _LONG_RUN.sub(lambda m: m.group()[:_RUN], text)


def detect(text: str) -> Finding:
    """Score ``text`` (see the module docstring); pure, no I/O."""
    text = _runs_cut(text)
    lowered = text.lower()
    present = {k for k in _KEYS if k in lowered}
    if _HAS_DIGIT.search(lowered):
        present.add(_DIGIT)
    unquoted: str | None = None
    fired: list[Rule] = []
    for rule in RULES:
        if present.isdisjoint(rule.keys):
            continue
        if rule.unquoted:
            if unquoted is None:
                unquoted = _QUOTED.sub(" ", lowered)
            hit = rule.pattern.search(unquoted)
        else:
            hit = rule.pattern.search(lowered)
        if hit:
            fired.append(rule)
    if "DAN" in text and not any(r.name == "role_marker" for r in fired) \
            and _DAN.search(_QUOTED.sub(" ", text)):
        fired.append(_DAN_RULE)
    if not fired:
        return Finding(0.0, ())
    reporting = bool(_REPORTING.search(lowered))
    asked = bool(_USER_ASKED.search(lowered))
    score = 0.0
    for rule in fired:
        weight = rule.weight * (REPORTED if reporting else 1.0)
        if rule.order and asked:
            weight *= USER_ASKED
        score += weight
    names = [r.name for r in fired]
    if _PRESCRIPTIVE.search(unquoted if unquoted is not None else _QUOTED.sub(" ", lowered)):
        score += PRESCRIPTIVE * (REPORTED if reporting else 1.0)
        names.append("prescriptive")
    return Finding(score, tuple(names))
