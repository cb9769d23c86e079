"""What a reviewer compares: the memories as they are now beside what approval would leave.

Pure functions over a review document (``ReviewRequest`` as JSON), so any front end (the web
UI, a terminal) shows the same cards.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["pretty", "side_by_side"]


def pretty(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)


def side_by_side(review: dict[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(now, after approval) cards for the side-by-side view."""
    diff = review.get("diff") or {}
    op = review["operation"]
    now: list[dict[str, Any]] = []
    after: list[dict[str, Any]] = []
    if op == "remember":
        for m in diff.get("modified", []):
            note = f"{m.get('relation')} · similarity {m.get('similarity')}"
            now.append({"id": m.get("id"), "content": m.get("content"), "note": note})
            after.append({"id": m.get("id"), "content": m.get("content"), "note": "unchanged"})
        for a in diff.get("added", []):
            after.append(
                {"id": a.get("id"), "content": a.get("content"), "note": "added", "kind": "added"}
            )
    elif op == "forget":
        for r in diff.get("removed", []):
            now.append(
                {
                    "id": r.get("id"),
                    "content": r.get("content"),
                    "note": "will be forgotten",
                    "kind": "removed",
                }
            )
    else:
        for m in diff.get("modified", []):
            before, new = m.get("before") or {}, m.get("after") or {}
            now.append({"id": m.get("id"), "content": before.get("content"), "note": "canonical"})
            after.append(
                {
                    "id": m.get("id"),
                    "content": new.get("content"),
                    "note": "canonical",
                    "kind": "added",
                }
            )
        for r in diff.get("removed", []):
            now.append(
                {
                    "id": r.get("id"),
                    "content": r.get("content"),
                    "note": "absorbed",
                    "kind": "removed",
                }
            )
    for card in now + after:
        card["content"] = pretty(card["content"])
        card.setdefault("kind", "")
    return now, after
