"""Where SqliteStore keeps a memory's ``metadata.context``: beside the row, not inside it.

A context key (:mod:`memorywire.core.context_key`) is long (a LongMemEval turn carries a
2,000-character reply) while the rest of the metadata is a few short fields. Kept inside the
``memories.metadata`` JSON it made every row several times larger, and a recall paid for that
on rows it never needed the context of: the recall statistics update rewrote each returned row
(one page written to the WAL per row instead of one per dozen rows), the fetch read the long
rows and ``json.loads`` decoded every context as JSON. Measured on LongMemEval S (whole
haystack returned), those costs were most of the recall-latency gap to a store without context
(docs/benchmarks.md, round 6).

So the text lives in ``contexts(rid, text)`` and the row's metadata JSON holds ``true`` in
its place (the key keeps its position, so a hit's metadata is the same object, key order
included). Readers select :data:`CONTEXT_SQL` next to ``metadata`` and rebuild the dict with
:func:`metadata_of`; the ``contexts`` row, not the placeholder, decides: a legacy store whose
metadata held a literal ``true`` under that key (never accepted since context keys exist)
reads back unchanged because it has no ``contexts`` row. The full-text key is still built
from the whole metadata, so what a recall finds does not change.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from memorywire.core.context_key import CONTEXT_FIELD, lexical_text
from memorywire.core.memo import ClearingMemo
from memorywire.wire.models import MemoryType

__all__ = ["CONTEXT_SQL", "PLACEHOLDER", "metadata_of", "put_context", "row_lexical_text",
           "stored_metadata"]

#: What the row's metadata JSON holds where the context text was.
PLACEHOLDER = True
#: The context text of the ``memories`` row in scope (NULL when it has none); usable in any
#: ``SELECT ... FROM memories`` whose table is not aliased.
CONTEXT_SQL = "(SELECT text FROM contexts WHERE contexts.rid = memories.rid)"


def stored_metadata(metadata: Mapping[str, Any] | None) -> tuple[str, str | None]:
    """The row's metadata JSON and the context text kept beside it (``None``: none)."""
    if not metadata:
        return "{}", None  # json.dumps({}): most writes carry no metadata
    meta = dict(metadata or {})
    context = meta.get(CONTEXT_FIELD)
    if not isinstance(context, str):
        return json.dumps(meta, ensure_ascii=False), None
    meta[CONTEXT_FIELD] = PLACEHOLDER
    return json.dumps(meta, ensure_ascii=False), context


def metadata_of(stored: str, context: str | None) -> dict[str, Any]:
    """The metadata a caller wrote, from the row's JSON and its ``contexts`` text."""
    meta: dict[str, Any] = json.loads(stored)
    if context is not None:
        meta[CONTEXT_FIELD] = context
    return meta


#: Full-text keys already built, by the stored columns they were built from (so a changed row
#: is a new key): the gates and the feedback round read the same hits' keys in every recall
#: of a scope.
_keys: ClearingMemo[tuple[str, str, str, str | None], str] = ClearingMemo(2048)


def row_lexical_text(mtype: str, stored: str, meta: str, context: str | None) -> str:
    """``core.context_key.lexical_text`` of a row from its stored columns (type, content,
    metadata JSON, ``contexts`` text), without decoding the JSON again for a row seen before."""
    key = (mtype, stored, meta, context)
    text = _keys.get(key)
    if text is None:
        text = _keys.put(key, lexical_text(MemoryType(mtype), stored, metadata_of(meta, context)))
    return text


def put_context(conn: Any, rid: int, context: str | None) -> None:
    """Make row ``rid``'s ``contexts`` entry ``context`` (none when ``None``)."""
    if context is None:
        conn.execute("DELETE FROM contexts WHERE rid = ?", (rid,))
    else:
        conn.execute("INSERT OR REPLACE INTO contexts(rid, text) VALUES(?, ?)", (rid, context))
