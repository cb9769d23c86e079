"""What a reviewer compares: the memories as they are now beside what approval would leave.

Pure functions over a review document (``ReviewRequest`` as JSON), so any front end (the web
UI, a terminal) shows the same cards.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["REPLACEABLE", "pretty", "side_by_side"]

#: The relations of a stored memory to a staged remember that the reviewer may resolve by
#: superseding it: a changed value, a contradiction, or one the write already proposes.
REPLACEABLE = ("supersedes?", "contradiction", "supersedes")


def pretty(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)


def _card(rec: dict[str, Any], content: Any, note: str, kind: str = "",
          **extra: Any) -> dict[str, Any]:
    """One card: the memory's id, content, type and source (what a reviewer judges a write
    by, so never hidden in a collapsed panel), and what the change does to it."""
    return {"id": rec.get("id"), "content": pretty(content), "note": note, "kind": kind,
            "type": rec.get("type") or "", "source": rec.get("source") or "",
            "relation": "", "why": "", "replaceable": False, **extra}


def side_by_side(review: dict[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(now, after approval) cards for the side-by-side view.

    For a remember, a stored memory it may replace (:data:`REPLACEABLE`) is marked
    ``replaceable``: the reviewer chooses whether approving supersedes it or keeps both.
    """
    diff = review.get("diff") or {}
    op = review["operation"]
    now: list[dict[str, Any]] = []
    after: list[dict[str, Any]] = []
    if op == "remember":
        for m in diff.get("modified", []):
            relation = str(m.get("relation"))
            replaceable = relation in REPLACEABLE
            now.append(_card(m, m.get("content"),
                             f"{relation} · similarity {m.get('similarity')}",
                             relation=relation, why=m.get("why") or "",
                             replaceable=replaceable))
            after.append(_card(m, m.get("content"),
                               "superseded if you choose so, else unchanged" if replaceable
                               else "unchanged"))
        for a in diff.get("added", []):
            after.append(_card(a, a.get("content"), "added", "added"))
    elif op == "forget":
        hard = bool((review.get("request") or {}).get("hard_delete"))
        for r in diff.get("removed", []):
            now.append(_card(r, r.get("content"),
                             "will be erased from storage" if hard else "will be forgotten",
                             "removed"))
    else:
        for m in diff.get("modified", []):
            before, new = m.get("before") or {}, m.get("after") or {}
            now.append(_card({"id": m.get("id"), **before}, before.get("content"),
                             str(m.get("relation") or "canonical")))
            after.append(_card({"id": m.get("id"), **new}, new.get("content"),
                               str(m.get("relation") or "canonical"), "added"))
        for r in diff.get("removed", []):
            now.append(_card(r, r.get("content"), "absorbed", "removed"))
    return now, after
