"""SqliteStore's rows as :class:`~memorywire.wire.models.RecallHit` objects.

:func:`hit_of` validates, as every model is built elsewhere. :func:`answer_hits` builds a
recall's answer: the hits of rows this store wrote, annotated with their validity
(``core.timeline.annotate``). A LongMemEval S recall returns its whole haystack (~245
hits), and validating each (pydantic's core, then ``model_post_init``'s links and typed
fields) and annotating it was the largest part of such a recall after the search
(docs/benchmarks.md, "lat19d", "lat19e"). Every value of such a hit has already been
checked: the row was validated when it was written, and what the recall adds (score,
relevance, the store's name) is computed. So when each value is of the exact type and in
the range the model declares, the hit is assembled directly: the same ``__dict__`` (same
keys, same order), the same fields set and extras, and ``model_post_init``'s own code run
on it, which is what validation leaves behind. Any value that is not (a legacy row, a
NaN relevance) goes through validation as before, so a value validation would refuse is
still refused. ``tests/unit/test_answer_hits.py`` pins the equality on a corpus of typed
fields, links, validity, supersession, procedures and contexts.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from memorywire.core.content import content_from_storage
from memorywire.core.context_key import CONTEXT_FIELD
from memorywire.core.scoring import Scored
from memorywire.core.timeline import TIME_KEY, annotate_own, validity_of
from memorywire.store.sqlite.contexts import metadata_of
from memorywire.wire.models import MemoryType, RecallHit, lift_typed_fields, links_from_metadata

__all__ = ["answer_hits", "hit_of"]

_TYPES = {t.value: t for t in MemoryType}
#: What validating :func:`hit_of`'s keyword arguments sets, plus ``links``
#: (``model_post_init`` assigns it, which adds it to the set) ...
_SET = frozenset(("id", "type", "content", "score", "metadata", "created_at", "relevance",
                  "supporting", "source_store", "user_id", "source", "confidence", "links"))
#: ... and what annotating a hit with a validity of its own adds.
_ANNOTATED = _SET | {"valid_from", "valid_to", "superseded_by"}
#: The model's id bounds (``wire.vocabulary.Id``).
_ID_MAX = 256
_new = object.__new__
_put = object.__setattr__


def hit_of(s: Scored, r: Sequence[Any], store: str,
           metadata: dict[str, Any] | None = None) -> RecallHit:
    """Ranked row ``s`` as a hit, from its row ``r`` (``COLS``, then anything); ``metadata``
    when the caller already decoded the row's (see :func:`answer_hits`)."""
    mtype = MemoryType(r[3])
    return RecallHit(
        id=r[0], type=mtype, content=content_from_storage(mtype, r[4]), score=s.score,
        relevance=round(s.relevance, 4),
        metadata=metadata_of(r[5], r[13]) if metadata is None else metadata, created_at=r[8],
        supporting=[], source_store=store, user_id=r[2], source=r[7], confidence=r[6])


def answer_hits(ranked: Sequence[Scored], rows: Mapping[str, Sequence[Any]],
                store: str) -> list[RecallHit]:
    """The answer's hits, annotated: what ``[annotate_own(hit_of(s, rows[s.id], store))
    for s in ranked]`` gives, byte for byte. Their metadata JSON is decoded in one
    ``json.loads`` (245 hits: one call, not 245)."""
    picked = [rows[s.id] for s in ranked]
    decoded: list[Any] = json.loads("[" + ",".join(r[5] for r in picked) + "]")
    out = []
    for s, r, meta in zip(ranked, picked, decoded, strict=True):
        if r[13] is not None:
            meta[CONTEXT_FIELD] = r[13]
        hit = _assembled(s, r, store, meta)
        out.append(annotate_own(hit_of(s, r, store, meta)) if hit is None else hit)
    return out


def _assembled(s: Scored, r: Sequence[Any], store: str,
               meta: Any) -> RecallHit | None:
    """The annotated hit without validation, or ``None`` when a value is not exactly what
    the model declares (the caller then validates)."""
    mtype = _TYPES.get(r[3])
    if mtype is None:
        return None
    content = content_from_storage(mtype, r[4])
    rid, user, created, conf, source = r[0], r[2], r[8], r[6], r[7]
    score, relevance = s.score, round(s.relevance, 4)
    if not (type(meta) is dict and type(score) is float and type(relevance) is float
            and 0.0 <= relevance <= 1.0
            and type(rid) is str and 0 < len(rid) <= _ID_MAX
            and (type(content) is str or type(content) is dict)
            and (created is None or (type(created) is int and created >= 0))
            and (conf is None or (type(conf) is float and 0.0 <= conf <= 1.0))
            and (user is None or type(user) is str)
            and (source is None or type(source) is str)):
        return None
    fields = {"id": rid, "type": mtype, "content": content, "score": score,
              "metadata": meta, "created_at": created, "relevance": relevance,
              "supporting": [], "source_store": store, "user_id": user, "source": source,
              "confidence": conf, "valid_from": None, "valid_to": None,
              "superseded_by": None, "links": links_from_metadata(meta)}
    hit = _new(RecallHit)
    _put(hit, "__dict__", fields)
    _put(hit, "__pydantic_fields_set__", set(_SET))
    _put(hit, "__pydantic_extra__", {})
    _put(hit, "__pydantic_private__", None)
    lift_typed_fields(hit)  # the rest of model_post_init, as validation runs it
    if meta and TIME_KEY in meta:  # annotate_own, on a hit known to be fresh
        v = validity_of(meta, created if created is not None else 0)
        fields.update(valid_from=v.valid_from, valid_to=v.valid_to,
                      superseded_by=v.superseded_by,
                      metadata={k: x for k, x in meta.items() if k != TIME_KEY})
        hit.__pydantic_fields_set__.update(_ANNOTATED)
    return hit
