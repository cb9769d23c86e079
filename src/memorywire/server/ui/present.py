"""How the reviewer UI writes values for people: dates, ages, ids and hashes, excerpts.

Jinja filters, pure functions of their input (``now_ms`` is passed in by tests). Epoch
milliseconds become ISO-8601 in UTC with the age beside it; a 64-hex hash shows its first 12
characters with the whole value in the ``title`` (hover) and in the page for copying.
"""

from __future__ import annotations

import json
import re
import time
from datetime import UTC, datetime
from typing import Any

import jinja2
from markupsafe import Markup, escape

__all__ = ["FILTERS", "age", "excerpt", "iso", "op_name", "short"]

_HEX = re.compile(r"\b[0-9a-f]{40,}\b")


def iso(ms: Any) -> str:
    if not isinstance(ms, int) or isinstance(ms, bool):
        return ""
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="seconds").replace(
        "+00:00", "Z")


def age(ms: Any, now_ms: int | None = None) -> str:
    if not isinstance(ms, int) or isinstance(ms, bool):
        return ""
    now = int(time.time() * 1000) if now_ms is None else now_ms
    seconds = max(0, (now - ms) // 1000)
    for unit, size in (("d", 86_400), ("h", 3_600), ("min", 60)):
        if seconds >= size:
            return f"{seconds // size} {unit} ago"
    return "just now" if seconds < 10 else f"{seconds} s ago"


def when(ms: Any) -> Markup:
    """``<time>`` with the age as text and the exact ISO date on hover."""
    stamp = iso(ms)
    if not stamp:
        return Markup("")
    return Markup('<time datetime="{0}" title="{0}">{1}</time>').format(stamp, age(ms))


def short(value: Any, keep: int = 12) -> Markup:
    """A long id or hash cut to ``keep`` characters; the full value on hover."""
    text = str(value)
    if len(text) <= keep + 1:
        return Markup("<code>{0}</code>").format(text)
    return Markup('<code title="{0}">{1}…</code>').format(text, text[:keep])


def excerpt(value: Any, width: int = 90) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def details(value: Any) -> Markup:
    """An audit entry's details as JSON, with every long hex string (hashes) shortened."""
    text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    out: list[str] = []
    last = 0
    for m in _HEX.finditer(text):
        out.append(str(escape(text[last:m.start()])))
        out.append(str(short(m.group(0))))
        last = m.end()
    out.append(str(escape(text[last:])))
    return Markup("".join(out))


def op_name(item: Any) -> str:
    """The operation as the writer would name it: a forget with ``hard_delete`` (what
    ``erase`` and ``forget --hard`` stage) is an erase, gone from storage, not a soft forget."""
    if not isinstance(item, dict):
        return ""
    op = str(item.get("operation", ""))
    request = item.get("request")
    if op == "forget" and isinstance(request, dict) and request.get("hard_delete"):
        return "erase"
    return op


FILTERS: dict[str, Any] = {
    "iso": iso, "age": age, "when": when, "short": short, "excerpt": excerpt,
    "details": details, "op_name": op_name,
}


def install(env: jinja2.Environment) -> None:
    env.filters.update(FILTERS)
