"""What the CLI prints for people: tables that fit the terminal, full ids, ISO-8601 dates.

A recall is not a table: its answer is the content, so each hit is its content wrapped to the
terminal's width, then its relevance (0..1), type, date and id on a dim line.
Colour comes from rich, which leaves it out when the output is not a terminal or
``NO_COLOR`` is set.

``--json`` prints the wire documents unchanged (epoch milliseconds, as the schemas say); this
module only shapes the human view. Ids are never cut, because they are what the next command
needs (``memorywire approvals approve ID``); long text is cut instead, with an ellipsis.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # rich loads when a table is drawn, not when the CLI starts
    from rich.console import Console
    from rich.table import Table

__all__ = ["age", "excerpt", "is_time_key", "iso", "render"]

_EXCERPT = 60
#: Keys holding epoch milliseconds that are not named ``*_at``.
_TIME_KEYS = frozenset({"ts", "timestamp", "expires"})
#: Wire fields too bulky for a row; ``show`` and ``--json`` print them.
_BULKY = frozenset({"request", "diff", "content_hash", "metadata", "supporting"})


def is_time_key(key: str) -> bool:
    return key.endswith("_at") or key in _TIME_KEYS


def iso(ms: int) -> str:
    """``2026-12-01T16:35:25Z``: UTC, to the second."""
    stamp = datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="seconds")
    return stamp.replace("+00:00", "Z")


def age(ms: int, now_ms: int | None = None) -> str:
    """How long ago, in the largest unit that is at least one (``3 min ago``)."""
    now = int(time.time() * 1000) if now_ms is None else now_ms
    seconds = (now - ms) // 1000
    if seconds < 0:
        return "in the future"
    for unit, size in (("d", 86_400), ("h", 3_600), ("min", 60)):
        if seconds >= size:
            return f"{seconds // size} {unit} ago"
    return f"{seconds} s ago"


def excerpt(value: Any, width: int = _EXCERPT) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _cell(key: str, value: Any) -> str:
    if value is None:
        return ""
    if is_time_key(key) and isinstance(value, int) and not isinstance(value, bool):
        return iso(value)
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def fit_table(
    console: Console,
    title: str,
    columns: list[str],
    rows: list[list[str]],
    wide: str = "",
) -> Table:
    """A table no wider than the terminal: columns are kept left to right while they fit at
    their natural width (``wide`` at 20 or more, folded), ids always and never cut; the
    caption names what was left out."""
    natural = {
        c: max([len(c), *(len(r[i]) for r in rows)]) for i, c in enumerate(columns)
    }
    budget = console.width - 1
    kept: list[int] = []
    dropped: list[str] = []
    for i, c in enumerate(columns):
        need = (min(natural[c], 20) if c == wide else natural[c]) + 3
        if c == "id" or need <= budget:
            kept.append(i)
            budget -= need
        else:
            dropped.append(c)
    caption = f"not shown here: {', '.join(dropped)} (--json)" if dropped else None
    from rich.table import Table

    table = Table(title=title, caption=caption, expand=False)
    for i in kept:
        c = columns[i]
        if c == wide:
            table.add_column(c, overflow="fold", ratio=1)
        else:
            # An id is what the next command needs: never wrapped, cut or folded.
            table.add_column(c, no_wrap=True, min_width=natural[c])
    for r in rows:
        table.add_row(*(r[i] for i in kept))
    return table


def _what(request: Mapping[str, Any]) -> str:
    """One line saying what a staged request would do."""
    if "content" in request:
        return excerpt(request["content"])
    if request.get("ids"):
        return excerpt(f"ids: {', '.join(request['ids'])}")
    if request.get("filter") is not None:
        return excerpt(f"filter: {json.dumps(request['filter'], ensure_ascii=False)}")
    if request.get("policy") is not None:
        return excerpt(f"policy: {json.dumps(request['policy'], ensure_ascii=False)}")
    return ""


#: Below this many columns a table of approvals cannot show a full id and the request.
_NARROW = 125


def _approvals(rows: list[dict[str, Any]], console: Console) -> None:
    """A table on a wide terminal; on a narrow one, three lines per approval."""
    if console.width >= _NARROW:
        cells = []
        for r in rows:
            request = r.get("request") or {}
            created = r.get("created_at")
            cells.append([r.get("id", ""), r.get("status", ""), r.get("operation", ""),
                          r.get("agent_id", ""), str(request.get("type", "")),
                          age(created) if isinstance(created, int) else "", _what(request)])
        console.print(fit_table(console, "approvals", ["id", "status", "operation", "agent_id",
                                                  "type", "age", "what"], cells, wide="what"))
        return
    for r in rows:
        request = r.get("request") or {}
        created = r.get("created_at")
        when = f"{age(created)} ({iso(created)})" if isinstance(created, int) else ""
        kind = " ".join(str(x) for x in (r.get("operation"), request.get("type")) if x)
        console.print(f"[bold]{r.get('id', '')}[/bold]", soft_wrap=True)
        console.print(f"  {r.get('status', '')} {kind} · {r.get('agent_id', '')} · {when}",
                      highlight=False)
        what = _what(request)
        if what:
            console.print(f"  {what}", highlight=False, markup=False)


def _recall(doc: Mapping[str, Any], console: Console) -> None:
    """Hits as the answer a person reads: the content first, wrapped to the terminal (never
    dropped or cut), then a dim line with relevance (0..1), type, date and the full id."""
    import textwrap

    from rich.text import Text

    hits = doc["results"]
    if not hits:
        console.print("no memories matched", highlight=False)
        return
    width = max(console.width - 1, 30)
    for n, hit in enumerate(hits, 1):
        lead = f"{n}. "
        text = _cell("content", hit["content"])
        lines = textwrap.wrap(" ".join(text.split()), width, initial_indent=lead,
                              subsequent_indent=" " * len(lead), break_on_hyphens=False)
        for line in lines or [lead]:
            console.print(line, markup=False, highlight=False, soft_wrap=True)
        rel = hit.get("relevance")
        score = f"relevance {rel:.2f}" if rel is not None else f"score {hit['score']:.3f}"
        created = hit.get("created_at")
        meta = [m for m in (score, str(hit["type"]),
                            iso(created) if isinstance(created, int) else "", str(hit["id"]))
                if m]
        for line in _packed(meta, width, " " * len(lead)):
            console.print(Text(line, style="dim"), soft_wrap=True)


def _packed(parts: list[str], width: int, indent: str) -> list[str]:
    """``parts`` joined with `` · `` into lines of at most ``width``, never splitting one
    (an id is copied whole into the next command)."""
    lines: list[str] = []
    line = ""
    for part in parts:
        joined = f"{line} · {part}" if line else part
        if line and len(indent) + len(joined) > width:
            lines.append(indent + line)
            line = part
        else:
            line = joined
    return [*lines, indent + line]


def _rows(key: str, rows: list[dict[str, Any]], console: Console) -> Table:
    cols = [c for c in dict.fromkeys(k for r in rows for k in r) if c not in _BULKY]
    if "id" in cols:
        cols.remove("id")
        cols.insert(0, "id")
    cells = [[_cell(c, r.get(c)) if c == "id" else excerpt(_cell(c, r.get(c)), 80)
              for c in cols] for r in rows]
    wide = next((c for c in cols if c != "id" and not is_time_key(c)), "")
    return fit_table(console, key, cols, cells, wide=wide)


def render(command: str, doc: Any, console: Console | None = None) -> None:
    """Print ``doc`` (a wire response) for a person."""
    from rich.console import Console
    from rich.table import Table

    console = console or Console()
    if command == "recall" and isinstance(doc, dict) and "results" in doc:
        _recall(doc, console)
        return
    if isinstance(doc, dict) and len(doc) == 1 and isinstance(next(iter(doc.values())), list):
        key, rows = next(iter(doc.items()))
        if not rows:
            console.print(f"{key}: (none)")
        elif all(isinstance(r, dict) for r in rows):
            if key == "approvals":
                _approvals(rows, console)
            else:
                console.print(_rows(key, rows, console))
        else:
            console.print(f"{key}: {', '.join(_cell(key, r) for r in rows)}")
        return
    if isinstance(doc, dict):
        table = Table("field", "value", show_header=False)
        table.columns[1].overflow = "fold"
        for k, v in doc.items():
            table.add_row(k, _cell(k, v))
        console.print(table)
        return
    console.print(_cell("", doc))
