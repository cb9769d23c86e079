"""What a pending operation would change, as a reviewer needs to see it.

Pure functions over plain record dicts (``MemoryRecord.model_dump(mode="json")`` shapes and
recall hits). Similarity here is lexical (word-set Jaccard) on purpose: recall scores are
backend-specific (RRF ranks, cosine, BM25), so a floor on them would mean something different
per store; the recall score is still reported alongside.

Which rows are a changed value (``supersedes?``) is not decided here: it is the contradiction
detector's verdict (:func:`memorywire.core.contradiction.find_conflicts`, the rule a remember
reports as ``conflicts``), so a reviewer is shown every candidate the write would report.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from memorywire.core.contradiction import find_conflicts
from memorywire.core.merge import MergeRow, plan_merge
from memorywire.wire.models import Diff, MergeStrategy

__all__ = [
    "DEFAULT_SIMILARITY_FLOOR",
    "DUPLICATE_SIMILARITY",
    "forget_diff",
    "merge_diff",
    "remember_diff",
    "similarity",
]

DEFAULT_SIMILARITY_FLOOR = 0.3
DUPLICATE_SIMILARITY = 0.9
_WORD = re.compile(r"[\w']+", re.UNICODE)
_NEGATIONS = frozenset({"not", "no", "never", "none", "nobody", "nothing", "neither", "nor"})


def _text(content: Any) -> str:
    return content if isinstance(content, str) else str(content)


def _words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text)}


def _negated(words: set[str]) -> bool:
    return bool(words & _NEGATIONS) or any(w.endswith("n't") for w in words)


def similarity(a: str, b: str) -> float:
    """Jaccard over lower-cased word sets, in [0, 1]; 1.0 for identical word sets."""
    wa, wb = _words(a), _words(b)
    if not wa and not wb:
        return 1.0
    return len(wa & wb) / len(wa | wb)


def _relation(new_text: str, old_text: str, sim: float, flagged: bool) -> str:
    """``supersedes?`` when the detector flagged the row as a changed value (``flagged``): a
    row the reviewer can accept as superseding."""
    if sim >= DUPLICATE_SIMILARITY and _negated(_words(new_text)) == _negated(_words(old_text)):
        return "duplicate"
    if _negated(_words(new_text)) != _negated(_words(old_text)):
        return "contradiction"
    if flagged:
        return "supersedes?"
    return "related"


def remember_diff(
    new: Mapping[str, Any],
    candidates: Sequence[Mapping[str, Any]],
    *,
    floor: float = DEFAULT_SIMILARITY_FLOOR,
    top: int = 3,
    conflicts: Sequence[Mapping[str, Any]] = (),
    superseded: Sequence[Mapping[str, Any]] = (),
) -> Diff:
    """``added`` is the new memory; ``modified`` the existing ones it may duplicate or
    contradict: candidates at or above ``floor``, most similar first, at most ``top``; then
    every record of ``conflicts`` and ``superseded`` not among them.

    ``conflicts`` are the records the store's detector reports for a remember of ``new``
    (each with its ``why``; the meaning rule included where the store holds vectors), shown
    however little they share with ``new`` in words; ``superseded`` the records ``new``
    proposes to supersede. The ``candidates`` themselves are judged by the same detector
    (its word rules, as nothing here knows their vectors).
    """
    new_text = _text(new.get("content", ""))
    others = [c for c in candidates if c.get("id") != new.get("id")]
    why = {c.id: c.why for c in find_conflicts(
        new_text, [(str(c.get("id")), _text(c.get("content", ""))) for c in others],
        limit=max(len(others), 1))}
    why.update({str(c["id"]): str(c.get("why")) for c in conflicts})
    scored: list[tuple[float, Mapping[str, Any]]] = []
    for cand in others:
        sim = similarity(new_text, _text(cand.get("content", "")))
        if sim >= floor:
            scored.append((sim, cand))
    scored.sort(key=lambda t: (-t[0], str(t[1].get("id"))))
    rows = [cand for _, cand in scored[:top]]
    shown = {str(c.get("id")) for c in rows}
    for rec in [*conflicts, *superseded]:
        if str(rec.get("id")) not in shown and rec.get("id") != new.get("id"):
            shown.add(str(rec.get("id")))
            rows.append(rec)
    proposed = new.get("supersedes") or []

    def row(cand: Mapping[str, Any]) -> dict[str, Any]:
        cid, text = cand.get("id"), _text(cand.get("content", ""))
        sim = similarity(new_text, text)
        flagged = str(cid) in why
        return {
            "id": cid,
            "type": cand.get("type"),
            "source": cand.get("source"),
            "content": cand.get("content"),
            "metadata": cand.get("metadata"),
            "similarity": round(sim, 4),
            "recall_score": cand.get("score"),
            "relation": ("supersedes" if cid in proposed
                         else _relation(new_text, text, sim, flagged)),
            **({"why": why[str(cid)]} if flagged else {}),
        }

    return Diff(added=[dict(new)], modified=[row(c) for c in rows])


def forget_diff(records: Sequence[Mapping[str, Any]]) -> Diff:
    """Everything listed disappears from recall (soft) or from disk (hard)."""
    return Diff(removed=[dict(r) for r in records])


def _row(rec: Mapping[str, Any]) -> MergeRow:
    conf = rec.get("confidence")
    return MergeRow(
        id=str(rec["id"]),
        content=rec.get("content", ""),
        created_at=int(rec.get("created_at") or 0),
        confidence=1.0 if conf is None else float(conf),
        metadata=dict(rec.get("metadata") or {}),
    )


def merge_diff(
    canonical: Mapping[str, Any],
    duplicates: Sequence[Mapping[str, Any]],
    strategy: MergeStrategy,
) -> Diff:
    """``modified`` is the surviving row before and after; ``removed`` the rows it absorbs."""
    outcome = plan_merge(_row(canonical), [_row(d) for d in duplicates], strategy)
    everyone = {str(r["id"]): r for r in [canonical, *duplicates]}
    before = everyone[outcome.canonical_id]
    after = dict(before)
    after.update(content=outcome.content, metadata=outcome.metadata, confidence=outcome.confidence)
    return Diff(
        removed=[dict(everyone[i]) for i in outcome.absorbed_ids if i in everyone],
        modified=[{"id": outcome.canonical_id, "before": dict(before), "after": after}],
    )
