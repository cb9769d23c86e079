"""SqliteStore assembles a recall's answer hits without validating them again
(``store.sqlite.hits.answer_hits``). That is only allowed if each hit is the one
validation and annotation build, in every part a caller can see: the wire JSON, the fields
set, the extras, the attribute values and their order. These tests pin it on a store holding
every kind of value a hit carries, and pin the fallback to validation for values the model
would convert or refuse."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from pydantic import ValidationError

from memorywire.core.clock import DAY_MS, FakeClock
from memorywire.core.scoring import Scored
from memorywire.core.timeline import annotate_own
from memorywire.embed.hashing import HashingEmbedder
from memorywire.store.sqlite import SqliteStore
from memorywire.store.sqlite.db import COLS
from memorywire.store.sqlite.hits import answer_hits, hit_of
from memorywire.wire.models import Link, MemoryType, RecallHit, RememberRequest

pytestmark = pytest.mark.anyio

NOW = 1_700_000_000_000


def _corpus() -> list[RememberRequest]:
    """Typed fields of each type, links (ids and typed edges), validity (open, closed, not
    yet started), a supersession, a procedure, contexts, user ids, sources, confidences,
    expiry, and a memory with no metadata at all."""
    ep, se, em, pr = (MemoryType.EPISODIC, MemoryType.SEMANTIC, MemoryType.EMOTIONAL,
                      MemoryType.PROCEDURAL)
    return [
        RememberRequest(agent_id="a", type=ep, id="e1", content="Met Alice at the harbour",
                        event_time=NOW - 3 * DAY_MS, location="Lisbon",
                        participants=["Alice", "Bob"], user_id="u1", source="chat",
                        confidence=0.75,
                        metadata={"speaker": "Bob", "session": 4, "nested": {"x": [1, 2]},
                                  "context": "the turn before\nthe turn after"}),
        RememberRequest(agent_id="a", type=se, id="s1", content="Alice likes tea",
                        valid_from=NOW - 9 * DAY_MS, valid_to=NOW - DAY_MS,
                        metadata={"entity_name": "Alice", "links": ["e1"]}),
        RememberRequest(agent_id="a", type=se, id="s2", content="Alice likes coffee now",
                        supersedes=["s1"], valid_from=NOW - DAY_MS,
                        links=[Link(id="e1", type="derived_from"), Link(id="s1")]),
        RememberRequest(agent_id="a", type=se, id="s3", content="Alice moves in spring",
                        valid_from=NOW + 30 * DAY_MS, expires_at=NOW + 90 * DAY_MS,
                        metadata={"context": "said over dinner"}),
        RememberRequest(agent_id="a", type=em, id="m1", content="Glad about the trip",
                        sentiment="positive", valence=0.8, arousal=0.3, emotion="joy"),
        RememberRequest(agent_id="a", type=pr, id="p1",
                        content={"name": "brew", "initial": "cold", "states": ["cold", "hot"],
                                 "transitions": [{"trigger": "heat", "source": "cold",
                                                  "dest": "hot"}]}),
        RememberRequest(agent_id="a", type=ep, id="e2", content="Nothing else to say"),
    ]


async def _rows(tmp_path: Path) -> dict[str, Any]:
    store = SqliteStore(tmp_path / "h.db", embedder=HashingEmbedder(), clock=FakeClock(NOW))
    try:
        corpus = _corpus()
        await store.remember_many(corpus[:2])  # s2 supersedes s1: written after it
        await store.remember_many(corpus[2:])
        rows = store._db._conn.execute(  # type: ignore[union-attr]
            f"SELECT {COLS}, rid FROM memories ORDER BY rid").fetchall()
    finally:
        await store.aclose()
    return {str(r[0]): r for r in rows}


def _validated(ranked: list[Scored], rows: dict[str, Any]) -> list[RecallHit]:
    return [annotate_own(hit_of(s, rows[s.id], "sqlite")) for s in ranked]


def _same(got: RecallHit, want: RecallHit) -> None:
    assert got.model_dump_json() == want.model_dump_json()
    assert got.model_fields_set == want.model_fields_set
    assert got.model_extra == want.model_extra
    assert list(got.__dict__.items()) == list(want.__dict__.items())
    assert got.__pydantic_private__ == want.__pydantic_private__
    assert got == want


async def test_assembled_hits_are_the_validated_annotated_ones(tmp_path: Path) -> None:
    rows = await _rows(tmp_path)
    assert len(rows) == 7
    ranked = [Scored(i, 1.0 / (60 + n), 0.4, rel)
              for n, (i, rel) in enumerate(zip(rows, (0.91234567, 0.5, 0.0, 1.0, 0.33333,
                                                      0.7, 0.25), strict=True))]
    got, want = answer_hits(ranked, rows, "sqlite"), _validated(ranked, rows)
    assert [h.id for h in got] == list(rows)
    for g, w in zip(got, want, strict=True):
        _same(g, w)
    by_id = {h.id: h for h in got}
    # What the equality above must have covered: typed fields lifted, links typed,
    # validity annotated out of metadata, a procedure decoded, the context put back.
    assert by_id["e1"].model_extra == {"event_time": NOW - 3 * DAY_MS, "location": "Lisbon",
                                       "participants": ["Alice", "Bob"]}
    assert by_id["e1"].metadata is not None
    assert by_id["e1"].metadata["context"] == "the turn before\nthe turn after"
    assert by_id["s2"].links is not None
    assert Link(id="e1", type="derived_from") in by_id["s2"].links
    assert by_id["s1"].links == [Link(id="e1")]
    assert by_id["s1"].superseded_by == "s2"
    assert by_id["s3"].valid_from == NOW + 30 * DAY_MS
    assert isinstance(by_id["p1"].content, dict)
    assert by_id["m1"].model_extra == {"sentiment": "positive", "valence": 0.8,
                                       "arousal": 0.3, "emotion": "joy"}
    assert {"valid_from", "valid_to", "superseded_by"} <= by_id["s2"].model_fields_set
    assert "valid_from" not in by_id["e2"].model_fields_set


async def test_hits_are_owned_by_the_answer(tmp_path: Path) -> None:
    """Each hit gets its own metadata and ``supporting`` list, as validation gives it: a
    caller editing one hit must not change another or a later answer."""
    rows = await _rows(tmp_path)
    ranked = [Scored("e1", 0.5, 0.4, 0.5), Scored("e1", 0.4, 0.4, 0.4)]
    first, second = answer_hits(ranked, rows, "sqlite")
    assert first.metadata is not second.metadata
    assert first.supporting is not second.supporting
    assert first.metadata is not None
    first.metadata["speaker"] = "Eve"
    again = answer_hits(ranked[:1], rows, "sqlite")[0]
    assert again.metadata is not None and again.metadata["speaker"] == "Bob"


async def test_values_validation_would_convert_or_refuse_are_validated(
        tmp_path: Path) -> None:
    """A numpy score (validation turns it into a float), an out-of-range relevance or
    confidence and a NaN relevance (validation refuses them) take validation's path, so
    the answer, or the error, is still validation's."""
    rows = await _rows(tmp_path)
    numpy_score = [Scored("s2", np.float64(0.5), 0.4, 0.5)]
    _same(answer_hits(numpy_score, rows, "sqlite")[0], _validated(numpy_score, rows)[0])
    for relevance in (1.5, -0.1, math.nan):
        with pytest.raises(ValidationError):
            answer_hits([Scored("e1", 0.5, 0.4, relevance)], rows, "sqlite")
    bad = dict(rows)
    bad["e1"] = (*rows["e1"][:6], 1.5, *rows["e1"][7:])  # confidence out of range
    with pytest.raises(ValidationError):
        answer_hits([Scored("e1", 0.5, 0.4, 0.5)], bad, "sqlite")
    bad["e1"] = (*rows["e1"][:8], -1, *rows["e1"][9:])  # created_at below 0
    with pytest.raises(ValidationError):
        answer_hits([Scored("e1", 0.5, 0.4, 0.5)], bad, "sqlite")
