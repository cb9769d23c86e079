"""SqliteStore re-ranks a recall's pool as views of its rows and builds hits only for the
answer (``store.sqlite.recall``); ``RecallPlan`` annotates after ranking. Both are only
cheaper if they rank exactly as the hits did: these tests pin what that rests on."""

from __future__ import annotations

import random
from dataclasses import replace
from pathlib import Path

import pytest

from memorywire.core.clock import DAY_MS, FakeClock
from memorywire.core.records import UpdateRequest
from memorywire.core.scoring import Scored
from memorywire.core.timeline import TIME_KEY, annotate, annotate_own
from memorywire.embed.hashing import HashingEmbedder
from memorywire.recall.plan import RecallPlan
from memorywire.recall.rules import UNRANKED
from memorywire.recall.subject_boost import SUBJECT_WEIGHT
from memorywire.recall.substance_prior import SUBSTANCE_WEIGHT
from memorywire.store.sqlite import SqliteStore
from memorywire.store.sqlite.db import COLS
from memorywire.store.sqlite.hits import hit_of
from memorywire.store.sqlite.recall import _views
from memorywire.wire.models import MemoryType, RecallHit, RecallRequest, RememberRequest

pytestmark = pytest.mark.anyio

NOW = 1_700_000_000_000
_VIEWED = ("id", "content", "metadata", "created_at", "valid_from", "valid_to",
           "superseded_by", "model_extra")


async def test_a_row_view_reads_as_the_hit_built_from_that_row(tmp_path: Path) -> None:
    """Every attribute the plan's rules read (``core.timeline.HitView``) is the same on the
    view as on the hit: typed fields lifted, validity kept in metadata, the context text
    back in place, a procedure's content decoded."""
    store = SqliteStore(tmp_path / "v.db", embedder=HashingEmbedder(), clock=FakeClock(NOW))
    try:
        await store.remember_many([
            RememberRequest(agent_id="a", type=MemoryType.EPISODIC, id="e1",
                            content="Met Alice at the harbour", event_time=NOW - 3 * DAY_MS,
                            location="Lisbon", participants=["Alice"],
                            metadata={"speaker": "Bob", "session": 4,
                                      "context": "the turn before\nthe turn after"}),
            RememberRequest(agent_id="a", type=MemoryType.SEMANTIC, id="s1",
                            content="Alice likes tea", valid_from=NOW - 9 * DAY_MS,
                            valid_to=NOW - DAY_MS, metadata={"entity_name": "Alice"}),
            RememberRequest(agent_id="a", type=MemoryType.EMOTIONAL, id="m1",
                            content="Glad about the trip", sentiment="positive", valence=0.8),
            RememberRequest(agent_id="a", type=MemoryType.PROCEDURAL, id="p1",
                            content={"name": "brew", "initial": "cold",
                                     "states": ["cold"]}),
        ])
        rows = store._db._conn.execute(  # type: ignore[union-attr]
            f"SELECT {COLS}, rid FROM memories ORDER BY rid").fetchall()
    finally:
        await store.aclose()
    assert len(rows) == 4
    views = _views(rows)
    for row, view in zip(rows, views, strict=True):
        hit = hit_of(Scored(row[0], 0.5, 0.5, 0.5), row, "sqlite")
        for name in _VIEWED:
            assert getattr(view, name) == getattr(hit, name), (row[0], name)
    assert views[0].model_extra == {"event_time": NOW - 3 * DAY_MS, "location": "Lisbon",
                                    "participants": ["Alice"]}
    assert TIME_KEY in (views[1].metadata or {})


def _hits(seed: int) -> list[RecallHit]:
    """A shuffled mix of what the rules look at: validity in metadata (closed, superseded,
    starting later), event times, speakers, sessions, long and short contents."""
    rnd = random.Random(seed)
    hits = []
    for i in range(60):
        meta: dict[str, object] = {"session": rnd.randrange(8),
                                   "speaker": rnd.choice(["Alice", "Bob", "Carol"])}
        if rnd.random() < 0.4:
            start = NOW + rnd.randrange(-40, 10) * DAY_MS  # some start later
            validity: dict[str, object] = {"valid_from": start}
            if rnd.random() < 0.5:
                validity["valid_to"] = start + rnd.randrange(1, 50) * DAY_MS
            if rnd.random() < 0.3:
                validity["superseded_by"] = f"h{rnd.randrange(60)}"
            meta[TIME_KEY] = validity
        if rnd.random() < 0.3:
            meta["event_time"] = NOW - rnd.randrange(1, 20) * DAY_MS
        words = rnd.choice([3, 12, 30, 40])
        hits.append(RecallHit(id=f"h{i}", type=MemoryType.EPISODIC,
                              content=" ".join(["word"] * words), score=1.0 / (i + 1),
                              metadata=meta, created_at=NOW - rnd.randrange(0, 60) * DAY_MS))
    return hits


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("flavour", ["now", "as_of", "include_superseded"])
def test_the_plan_ranks_hits_as_it_ranks_them_annotated(seed: int, flavour: str) -> None:
    """``RecallPlan.finish`` annotates the hits it returns after ranking them; that is the
    old order only because every rule reads a hit's validity alike from its metadata or,
    annotated, from its fields. Asked with a time window, a name, and each visibility."""
    extra: dict[str, object] = {"as_of": NOW - 10 * DAY_MS} if flavour == "as_of" else (
        {"include_superseded": True} if flavour == "include_superseded" else {})
    req = RecallRequest(agent_id="a", query="What did Alice do two weeks ago?", k=20,
                        **extra)  # type: ignore[arg-type]
    hits = _hits(seed)

    def plan() -> RecallPlan:
        return RecallPlan(req, NOW, replace(UNRANKED, session_weight=0.5,
                                            subject_weight=SUBJECT_WEIGHT,
                                            substance_weight=SUBSTANCE_WEIGHT))

    raw = plan().finish(hits)
    annotated_first = plan().order([annotate(h) for h in hits])
    assert [h.id for h in raw] == [h.id for h in annotated_first]
    assert raw == annotated_first
    assert len(raw) > 5


async def _contents(store: SqliteStore, query: str) -> dict[str, object]:
    resp = await store.recall(RecallRequest(agent_id="a", query=query, k=10))
    return {h.id: (h.content, (h.metadata or {}).get("speaker")) for h in resp.results}


@pytest.mark.parametrize("writer", ["same store", "another connection"])
async def test_rows_kept_between_recalls_give_way_to_a_write(tmp_path: Path,
                                                             writer: str) -> None:
    """A recall keeps the rows it read for the next recall of the scope; an update, by this
    store or by another connection to the file (another process), must show at once."""
    path = tmp_path / "k.db"
    store = SqliteStore(path, embedder=HashingEmbedder(), clock=FakeClock(NOW))
    other = SqliteStore(path, embedder=HashingEmbedder(), clock=FakeClock(NOW))
    try:
        await store.remember_many([
            RememberRequest(agent_id="a", type=MemoryType.EPISODIC, id=f"t{i}",
                            content=f"Alice talked about the garden, turn {i}",
                            metadata={"speaker": "Alice", "session": 1})
            for i in range(6)])
        before = await _contents(store, "What did Alice say about the garden?")
        assert before["t2"] == ("Alice talked about the garden, turn 2", "Alice")
        await (store if writer == "same store" else other).update(UpdateRequest(
            agent_id="a", id="t2", content="Alice talked about the garden shed, turn 2",
            metadata_patch={"speaker": "Bob"}))
        after = await _contents(store, "What did Alice say about the garden?")
        assert after["t2"] == ("Alice talked about the garden shed, turn 2", "Bob")
    finally:
        await store.aclose()
        await other.aclose()


def test_annotating_a_fresh_hit_in_place_gives_what_the_copy_gives() -> None:
    """SqliteStore annotates the hits it just built in place (``annotate_own``) instead of
    copying each: the wire JSON and the fields set must be the copy's, for a hit with a
    validity of its own (typed fields, links, a closed and superseded one) and one without."""
    validity = {"valid_from": NOW - DAY_MS, "valid_to": NOW, "superseded_by": "m2"}

    def fresh(metadata: dict[str, object] | None) -> RecallHit:
        return RecallHit(id="m1", type=MemoryType.EPISODIC, content="Met Alice", score=0.5,
                         relevance=0.7, metadata=metadata, created_at=NOW - 2 * DAY_MS,
                         supporting=[], source_store="sqlite", user_id=None, source=None,
                         confidence=1.0)

    for metadata in ({TIME_KEY: validity, "location": "harbour", "links": ["m0"],
                      "context": "a reply"},
                     {TIME_KEY: {"valid_from": NOW}}, {"location": "harbour"}, None):
        copied, own = annotate(fresh(metadata)), annotate_own(fresh(metadata))
        assert own.model_dump_json() == copied.model_dump_json()
        assert own.model_fields_set == copied.model_fields_set
        assert own.model_extra == copied.model_extra
    closed = annotate_own(fresh({TIME_KEY: validity}))
    assert (closed.valid_from, closed.valid_to, closed.superseded_by) == (
        NOW - DAY_MS, NOW, "m2")
    assert closed.metadata == {}
