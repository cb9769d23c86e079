"""The meaning rule of the contradiction detector: the closest memory, changed in value.

The word rules of :mod:`core.contradiction` need the two statements to share the slot's
words; an agent that writes "The user's broadband comes from Ziggo now" after "The user's
internet provider is Vodafone" shares none, and no list of synonyms covers every way of
naming a slot (the lists fitted to one set of phrasings missed most paraphrases of another:
issue 17's held-out recall 0.65). The sentence vectors the store already holds do know that
broadband is an internet provider, at no extra model call: the new memory's vector is
computed for its own write, the stored ones were computed when they were written.

A sentence vector is dominated by its value as much as by its slot ("works at Nokia" is as
close to "phone is a Pixel 8" as to "works at Siemens"), so a cosine floor alone alarms on
unrelated neighbours. The rule therefore only ever names the *one* closest memory, and only
when

- it states a value of the same kind (a number, a name, digits allowed: "Pixel 8", or a
  lower-case phrase: "3 cats" is not an answer to "which airline"),
- the value differs (a restatement, or the same value said again, is not a change),
- the two are not one template with the slot words swapped (see :func:`_other_slot`: "bank
  name is X" / "dentist name is Y" is another slot however close the vectors are),
- the new statement is not additive ("also", "too", "another": more detail, not a
  replacement; the word rules apply the same veto),
- its cosine reaches :data:`NEAR_CHANGED` when the new statement carries a change cue
  ("now", "switched", "replaced", "instead", "these days") and :data:`NEAR_PLAIN` otherwise:
  a statement that announces a change needs less evidence to find what it replaces.

Floors and cue words were tuned on the dev corpora of ``benchmarks/updates.py``
(``ATTRIBUTES`` and ``DEV_PARAPHRASE``) only; see docs/benchmarks.md for the held-out check.
Known blind spots: a paraphrase that keeps the sentence and swaps one span besides the value
("reports to X" / "manager is Y") is vetoed as another slot, and when another attribute's
memory is closer than the replaced one nothing is named.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from difflib import SequenceMatcher
from typing import Protocol

__all__ = ["ADDITIVE", "CHANGE_CUES", "NEAR_CHANGED", "NEAR_PLAIN", "closest_changed",
           "value_kind"]

#: Cosine floor for the closest memory when the new statement announces a change.
NEAR_CHANGED = 0.3
#: Cosine floor when it does not (a plain statement of a new value).
NEAR_PLAIN = 0.5
#: Words that say a statement replaces an earlier one (the word rules' cues and a few more
#: verbs of replacing).
CHANGE_CUES = frozenset(" ".join((
    "now currently switched switch changed change changes new newly instead anymore longer",
    "moved since lately recently became become turned days replaced upgraded cancelled old",
    "up",
)).split())
#: Words that add to what is known rather than replace it.
ADDITIVE = frozenset({"also", "too", "another", "additionally", "both"})


class _Parsed(Protocol):
    """What the rule reads of a statement parsed by :mod:`core.contradiction` (a protocol, so
    that module can import this one without a cycle)."""

    @property
    def words(self) -> tuple[str, ...]: ...
    @property
    def values(self) -> frozenset[str]: ...
    @property
    def lead(self) -> frozenset[str]: ...
    @property
    def content(self) -> frozenset[str]: ...
    @property
    def additive(self) -> bool: ...


def _kind(p: _Parsed) -> str:
    """The kind of value a statement gives: ``number``, ``name`` or ``phrase``."""
    values = p.values | p.lead
    if values and all(v.replace(".", "").replace(",", "").isdigit() for v in values):
        return "number"  # "3 cats", "72 kg"; "Pixel 8" is a name
    return "name" if values else "phrase"


def value_kind(p: _Parsed) -> str:
    """:func:`_kind`, for :mod:`core.contradiction`'s choice of the one statement
    :func:`closest_changed` weighs."""
    return _kind(p)


def _same_value(old: _Parsed, new: _Parsed, kind: str) -> bool:
    """True when ``new`` gives no value ``old`` lacks (a restatement or added detail)."""
    if kind != "phrase":
        return bool((old.values | old.lead) & (new.values | new.lead))
    fresh = new.content - old.content - CHANGE_CUES
    return not fresh or not old.content - new.content - CHANGE_CUES


def closest_changed(new: _Parsed, stored: Sequence[tuple[str, _Parsed]],
                    closeness: Mapping[str, float]) -> tuple[str, float, str] | None:
    """``(id, cosine, why)`` of the stored memory that ``new`` most likely replaces, or
    ``None`` (see the module doc for the conditions)."""
    if new.additive:
        return None
    kind = _kind(new)
    best: tuple[float, str, _Parsed] | None = None
    for id, old in stored:
        sim = closeness.get(id)
        if sim is not None and (best is None or sim > best[0]) and _kind(old) == kind:
            best = (sim, id, old)
    if best is None:
        return None
    sim, id, old = best
    changed = bool(CHANGE_CUES.intersection(new.words))
    if sim < (NEAR_CHANGED if changed else NEAR_PLAIN) or _same_value(old, new, kind) \
            or _other_slot(old, new, kind):
        return None
    cue = "a change cue, " if changed else ""
    return id, sim, (f"closest in meaning (cosine {sim:.2f}), {cue}another {kind}: "
                     f"{_value(old, new, kind)} → {_value(new, old, kind)}")


def _masked(p: _Parsed) -> list[str]:
    """The words with each value word replaced by one placeholder per run."""
    values = p.values | p.lead
    out: list[str] = []
    for w in p.words:
        w = "\0" if w in values else w
        if not (w == "\0" and out and out[-1] == w):
            out.append(w)
    return out


def _other_slot(old: _Parsed, new: _Parsed, kind: str) -> bool:
    """True when the two statements are one template with the *slot* words swapped ("the
    user's bank name is X" / "the user's dentist name is Y", "works at X" / "lives in Y"):
    with the values masked they differ in exactly one replaced span, which is then not the
    value but the subject. A paraphrase rewrites more than one span; a lower-case value
    cannot be masked, so there the one span may be the value and nothing is vetoed."""
    if kind == "phrase":
        return False
    ops = [op for op in SequenceMatcher(None, _masked(old), _masked(new),
                                        autojunk=False).get_opcodes() if op[0] != "equal"]
    return len(ops) == 1 and ops[0][0] == "replace"


def _value(p: _Parsed, other: _Parsed, kind: str) -> str:
    """The words of ``p`` that name its value (for the reviewer's why string)."""
    if kind != "phrase":
        return " ".join(sorted(p.values | p.lead))
    return " ".join(w for w in dict.fromkeys(p.words)
                    if w in p.content and w not in other.content and w not in CHANGE_CUES)

