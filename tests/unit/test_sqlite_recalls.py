"""SqliteStore keeps recall statistics in ``recalls(rid, at, n)`` beside the row
(``store.sqlite.recalls``): a recall writes that narrow table and leaves the memory's row
as it was, every reader sees the same ``last_recalled_at`` / ``recall_count``, and a file
of schema version 3 (statistics in the row) is migrated with its values."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import apsw
import pytest

from memorywire.core.clock import DAY_MS, FakeClock
from memorywire.core.records import ListQuery, UpdateRequest
from memorywire.embed.hashing import HashingEmbedder
from memorywire.store.portable import OnConflict
from memorywire.store.sqlite import SqliteStore
from memorywire.store.sqlite.schema import SCHEMA_VERSION
from memorywire.wire.models import (
    ExpirePolicy,
    ExpireRequest,
    ForgetRequest,
    MemoryType,
    RecallRequest,
    RememberRequest,
)

pytestmark = pytest.mark.anyio

NOW = 1_700_000_000_000
EMB = HashingEmbedder(64)
FLOORS = {"relevance_floor": -1.0, "lexical_floor": -1.0}


def _note(i: int) -> RememberRequest:
    return RememberRequest(agent_id="a", type=MemoryType.SEMANTIC, id=f"n{i}",
                           content=f"note {i} about the garden and the {i}th tomato plant",
                           metadata={"context": f"said on day {i}"})


async def _stats(store: SqliteStore) -> dict[str, tuple[int | None, int]]:
    """Every memory's statistics as get, list and export read them (asserted equal)."""
    listed = {r.id: (r.last_recalled_at, r.recall_count)
              for r in await store.list(ListQuery(agent_id="a", limit=100))}
    got = {}
    for i in listed:
        rec = await store.get("a", i)
        assert rec is not None
        got[i] = (rec.last_recalled_at, rec.recall_count)
    exported = {r.id: (r.last_recalled_at, r.recall_count)
                for r in await store.export_rows("a", None, 100)}
    assert listed == got == exported
    return listed


def _table(path: Path, sql: str) -> list[tuple[object, ...]]:
    conn = apsw.Connection(str(path))
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


async def test_a_recall_writes_the_narrow_table_not_the_rows(tmp_path: Path) -> None:
    clock = FakeClock(NOW)
    store = SqliteStore(tmp_path / "r.db", EMB, clock=clock,
                        recall=replace(SqliteStore.DEFAULT_RECALL, **FLOORS))
    try:
        await store.remember_many([_note(i) for i in range(6)])
        rows_before = _table(tmp_path / "r.db", "SELECT * FROM memories ORDER BY rid")
        first = await store.recall(RecallRequest(agent_id="a", query="tomato plant", k=2))
        clock.advance(5)
        second = await store.recall(RecallRequest(agent_id="a", query="tomato plant", k=4))
        assert _table(tmp_path / "r.db", "SELECT * FROM memories ORDER BY rid") == rows_before
        stats = await _stats(store)
    finally:
        await store.aclose()
    once = {h.id for h in second.results} - {h.id for h in first.results}
    twice = {h.id for h in first.results}
    assert twice <= {h.id for h in second.results}
    for i, (at, n) in stats.items():
        if i in twice:
            assert (at, n) == (NOW + 5, 2)
        elif i in once:
            assert (at, n) == (NOW + 5, 1)
        else:
            assert (at, n) == (None, 0)
    assert len(_table(tmp_path / "r.db", "SELECT * FROM recalls")) == len(once | twice)


async def test_statistics_follow_updates_imports_and_hard_deletes(tmp_path: Path) -> None:
    clock = FakeClock(NOW)
    store = SqliteStore(tmp_path / "r.db", EMB, clock=clock,
                        recall=replace(SqliteStore.DEFAULT_RECALL, **FLOORS))
    try:
        await store.remember_many([_note(i) for i in range(3)])
        hits = (await store.recall(RecallRequest(agent_id="a", query="tomato", k=3))).results
        assert len(hits) == 3
        # An update rewrites the row; its statistics stay.
        clock.advance(1)
        await store.update(UpdateRequest(agent_id="a", id="n1", content="note 1, moved"))
        assert (await _stats(store))["n1"] == (NOW, 1)
        # An import replacing a row carries the statistics it brings, and a new row too.
        rows = await store.export_rows("a", None, 100)
        by_id = {r.id: r for r in rows}
        await store.import_rows([replace(by_id["n2"], last_recalled_at=NOW - 7, recall_count=9),
                                 replace(by_id["n0"], id="n9", recall_count=4,
                                         last_recalled_at=None)], OnConflict.REPLACE)
        stats = await _stats(store)
        assert stats["n2"] == (NOW - 7, 9)
        assert stats["n9"] == (None, 4)
        # A hard delete takes the row's entry with it: no later row inherits it.
        await store.forget(ForgetRequest(agent_id="a", ids=["n9", "n2"], hard_delete=True))
        assert _table(tmp_path / "r.db", "SELECT rid FROM recalls WHERE rid NOT IN "
                                         "(SELECT rid FROM memories)") == []
        await store.remember_many([_note(7)])
        assert (await _stats(store))["n7"] == (None, 0)
    finally:
        await store.aclose()


#: Schema 4 undone: the statistics back in the row's columns, no recalls table (also used by
#: test_sqlite_contexts to build a version-2 file).
UNDO_V4 = """
    UPDATE memories SET
        last_recalled_at = (SELECT at FROM recalls WHERE recalls.rid = memories.rid),
        recall_count = (SELECT n FROM recalls WHERE recalls.rid = memories.rid)
        WHERE rid IN (SELECT rid FROM recalls);
    DROP TRIGGER recalls_follow_rows;
    DROP TABLE recalls;
"""


def _downgrade_to_v3(path: Path) -> None:
    """What a version-3 file held: the statistics in the row's columns, no recalls table."""
    conn = apsw.Connection(str(path))
    try:
        conn.execute(UNDO_V4 + "UPDATE meta SET value = '3' WHERE key = 'schema_version';")
    finally:
        conn.close()


async def test_a_version_3_file_is_migrated_with_its_statistics(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    clock = FakeClock(NOW)
    store = SqliteStore(path, EMB, clock=clock,
                        recall=replace(SqliteStore.DEFAULT_RECALL, **FLOORS))
    try:
        await store.remember_many([_note(i) for i in range(8)])
        clock.advance(20 * DAY_MS)
        for k in (2, 5):
            await store.recall(RecallRequest(agent_id="a", query="tomato plant", k=k))
            clock.advance(3)
        before = await _stats(store)
    finally:
        await store.aclose()
    assert {n for _, n in before.values()} == {0, 1, 2}
    _downgrade_to_v3(path)
    in_rows = dict(_table(path, "SELECT id, recall_count FROM memories"))
    assert in_rows == {i: n for i, (_, n) in before.items()}

    store = SqliteStore(path, EMB, clock=clock,
                        recall=replace(SqliteStore.DEFAULT_RECALL, **FLOORS))
    try:
        assert await _stats(store) == before
        # Expiry reads the migrated values: 35 days after writing, 15 after the recalls,
        # the memories never recalled go and the recalled ones stay.
        clock.advance(15 * DAY_MS)
        gone = await store.expire(ExpireRequest(agent_id="a",
                                                policy=ExpirePolicy(no_recall_in_days=30)))
        assert set(gone.matched_ids or []) == {i for i, (_, n) in before.items() if n == 0}
    finally:
        await store.aclose()
    assert _table(path, "SELECT value FROM meta WHERE key = 'schema_version'") == [
        (str(SCHEMA_VERSION),)]
    assert SCHEMA_VERSION == 4
    # The values moved: the row's columns are cleared, one entry per recalled row.
    assert set(_table(path, "SELECT last_recalled_at, recall_count FROM memories")) <= {
        (None, 0)}
    assert len(_table(path, "SELECT rid FROM recalls")) == sum(
        n > 0 for _, n in before.values())
    assert len(before) == 8
