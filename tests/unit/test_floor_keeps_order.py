"""SqliteStore's default floors choose which rows a recall returns, never how the kept rows
rank: a row below the tail floor still holds its place while session evidence (and the other
rank-based boosts) re-rank the list, then it is left out. So the defaults return the floors-off
ranking with the cut rows removed (LongMemEval S dev120 lost a multi-session question when a
cut low-cosine turn no longer lifted its session's neighbours; docs/benchmarks.md, "gate19b")."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from memorywire.core.scoring import hybrid_rank
from memorywire.store.sqlite import SqliteStore
from memorywire.wire.models import RecallRequest

from .test_sqlite_store import DictEmbedder, req

pytestmark = pytest.mark.anyio

QUESTION = "Which trails did we hike?"
# No two texts share a word, so the full-text and feedback rounds add nothing: the order is
# the vector order, then session evidence.
A1 = "Ridgeline loop above Lyons, fourteen miles."
C1 = "Sunrise paddle across Bowman lake."
B1 = "Waterfall scramble near Estes."
B2 = "Unrelated grocery errands: eggs, flour."
EMB = DictEmbedder({
    QUESTION: [1.0, 0.0, 0.0],
    A1: [0.5, 0.866, 0.0],  # cosine 0.50: clears the floor, the list is relevant
    C1: [0.30, 0.954, 0.0],  # 0.30: kept as the tail
    B1: [0.29, 0.0, 0.957],  # 0.29: kept as the tail
    B2: [0.01, 0.0, 1.0],  # 0.01: below the tail floor (0.36 - 0.3), cut
})
SESSION = {A1: "a", C1: "c", B1: "b", B2: "b"}


async def _ranked(tmp_path: Path, name: str, k: int = 3, **settings: float) -> list[str]:
    store = SqliteStore(tmp_path / f"{name}.db", embedder=EMB,
                        recall=replace(SqliteStore.DEFAULT_RECALL, **settings))
    try:
        await store.remember_many([req("u", t, id=f"m{i}", metadata={"session": SESSION[t]})
                                   for i, t in enumerate(SESSION)])
        got = await store.recall(RecallRequest(agent_id="u", query=QUESTION, k=k))
        return [str(h.content) for h in got.results]
    finally:
        await store.aclose()


async def test_the_defaults_return_the_floors_off_ranking_less_the_cut_rows(
        tmp_path: Path) -> None:
    off = await _ranked(tmp_path, "off", relevance_floor=-1.0, lexical_floor=-1.0)
    # Floors off, B2 counts for its session: session b (two hits) passes session c.
    assert off == [A1, B1, C1]
    defaults = await _ranked(tmp_path, "defaults")
    assert defaults == [A1, B1, C1]
    # B2 itself never comes back from the defaults, however deep the recall.
    assert await _ranked(tmp_path, "deep", k=10) == [A1, B1, C1]


def test_cut_rows_are_listed_only_up_to_the_kth_kept_row() -> None:
    cos = {"a": 0.5, "j1": 0.01, "b": 0.3, "j2": 0.02, "c": 0.2, "j3": 0.0}
    order = ["a", "j1", "b", "j2", "c", "j3"]
    ranked = hybrid_rank(cos, order, [], k=2, floor=0.36, lexical_floor=0.36, tail_gap=0.3,
                         keep_cut=True)
    assert [(s.id, s.cut) for s in ranked] == [("a", False), ("j1", True), ("b", False)]
    # Without keep_cut (every other store) the cut rows are simply absent.
    plain = hybrid_rank(cos, order, [], k=2, floor=0.36, lexical_floor=0.36, tail_gap=0.3)
    assert [s.id for s in plain] == ["a", "b"]


async def test_a_cut_row_listed_for_the_re_ranking_is_not_counted_as_recalled(
        tmp_path: Path) -> None:
    # k=10 > the three kept rows: B2 is listed (cut) for session evidence, then left out;
    # no_recall_in_days expiry must see it as never recalled. (C1 and B1, the returned tail,
    # do not count either: only rows the per-row floors hold do, ``Scored.core``.)
    store = SqliteStore(tmp_path / "stats.db", embedder=EMB)
    try:
        await store.remember_many([req("u", t, id=f"m{i}", metadata={"session": SESSION[t]})
                                   for i, t in enumerate(SESSION)])
        got = await store.recall(RecallRequest(agent_id="u", query=QUESTION, k=10))
        assert [str(h.content) for h in got.results] == [A1, B1, C1]
        counts = {}
        for i, text in enumerate(SESSION):
            rec = await store.get("u", f"m{i}")
            assert rec is not None
            counts[text] = rec.recall_count
        assert counts == {A1: 1, C1: 0, B1: 0, B2: 0}
    finally:
        await store.aclose()
