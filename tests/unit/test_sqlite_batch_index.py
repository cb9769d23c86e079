"""A batch's full-text entries are written once, at commit, and every one of them is found.

SqliteStore's remember writes a batch in one transaction. FTS5 writes its pending entries
out at every statement savepoint, and the ``INSERT INTO memories`` of each row opens one, so
entries written row by row between those inserts became one tiny segment per row, merged
again and again (about half of a turn's write cost with a 2,000-character context,
docs/benchmarks.md, ingest19). The entries now go in after the batch's other rows. What a
user relies on: every memory of the batch is found by its words, including one revived in
the middle of the batch, and the index is written a bounded number of times per batch.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import apsw
import pytest

from memorywire.core.clock import FakeClock
from memorywire.embed.hashing import HashingEmbedder
from memorywire.store.portable import OnConflict
from memorywire.store.sqlite import SqliteStore
from memorywire.wire.models import ForgetRequest, MemoryType, RecallRequest, RememberRequest

pytestmark = pytest.mark.anyio

_WORDS = ["quokka", "narwhal", "axolotl", "pangolin", "okapi", "tapir", "dugong", "caracal"]


def _store(path: Path) -> SqliteStore:
    # Floors off: the hashing embedder's cosines mean nothing, the full-text leg is tested.
    return SqliteStore(path, embedder=HashingEmbedder(), clock=FakeClock(1_000_000),
                       recall=replace(SqliteStore.DEFAULT_RECALL, relevance_floor=-1.0,
                                      lexical_floor=-1.0))


async def _found(store: SqliteStore, word: str) -> list[str]:
    """The ids whose full-text entry holds ``word``, read from the file itself."""
    conn = apsw.Connection(str(store._db.path))
    try:
        return sorted(r[0] for r in conn.execute(
            "SELECT id FROM memories WHERE rid IN (SELECT rowid FROM memories_fts "
            "WHERE memories_fts MATCH ?)", (f'body : "{word}"',)))
    finally:
        conn.close()


def _turns(id_format: str) -> list[RememberRequest]:
    """120 turns, each naming one word with its number, all with one long context."""
    reply = " ".join(f"{w} said something about the weather today" for w in _WORDS) * 4
    return [RememberRequest(agent_id="a", type=MemoryType.EPISODIC, id=id_format.format(i),
                            content=f"turn {i} mentions {_WORDS[i % len(_WORDS)]}{i}",
                            metadata={"context": reply})
            for i in range(120)]


@contextmanager
def _index_writes(store: SqliteStore) -> Iterator[list[str]]:
    """The statements that write full-text index pages while the block runs."""
    writes: list[str] = []

    def seen(statement: str, _ns: int) -> None:
        if "memories_fts_data" in statement and not statement.lstrip().startswith("SELECT"):
            writes.append(statement)

    conn: Any = store._db._conn
    conn.setprofile(seen)
    try:
        yield writes
    finally:
        conn.setprofile(None)


async def _top(store: SqliteStore, word: str) -> str:
    resp = await store.recall(RecallRequest(agent_id="a", query=word, k=3))
    return resp.results[0].id


async def test_a_batch_writes_the_index_a_bounded_number_of_times(tmp_path: Path) -> None:
    store = _store(tmp_path / "s.db")
    try:
        await store.remember(RememberRequest(agent_id="a", type=MemoryType.EPISODIC,
                                             content="opening the file"))
        with _index_writes(store) as writes:
            await store.remember_many(_turns("t{}"))
        # Row by row (before), these 120 rows wrote index pages 495 times; at commit, 11.
        assert 0 < len(writes) < 120
        assert await _found(store, "narwhal1") == ["t1"]
        assert await _found(store, "caracal119") == ["t119"]
        assert len(await _found(store, "weather")) == 120
        assert await _top(store, "narwhal1") == "t1"
    finally:
        await store.aclose()


async def test_an_import_page_writes_the_index_a_bounded_number_of_times(
    tmp_path: Path
) -> None:
    """Import (and migration) pages had the same interleaving; a row replaced in the middle
    of a page still ends with its new words only."""
    source, target = _store(tmp_path / "src.db"), _store(tmp_path / "dst.db")
    try:
        await source.remember_many(_turns("t{:03d}"))
        rows = await source.export_rows("a", None, 1000)
        await target.remember(RememberRequest(agent_id="a", type=MemoryType.EPISODIC,
                                              id="t060", content="an older wombat note"))
        vectors = await source.vectors_of(rows)
        with _index_writes(target) as writes:
            counts = await target.import_rows(rows, OnConflict.REPLACE, vectors=vectors)
        assert (counts.inserted, counts.replaced) == (119, 1)
        # Row by row (before), this page wrote index pages 501 times; now 22.
        assert 0 < len(writes) < 120
        assert await _found(target, "narwhal1") == ["t001"]
        assert await _found(target, "tapir61") == ["t061"]
        assert await _found(target, "wombat") == []
        assert len(await _found(target, "weather")) == 120
    finally:
        await source.aclose()
        await target.aclose()


async def test_every_memory_of_a_batch_is_found_a_revived_one_too(tmp_path: Path) -> None:
    store = _store(tmp_path / "s.db")
    try:
        await store.remember(RememberRequest(agent_id="a", type=MemoryType.SEMANTIC, id="old",
                                             content="the old note about a pangolin"))
        await store.forget(ForgetRequest(agent_id="a", ids=["old"]))
        await store.remember_many([
            RememberRequest(agent_id="a", type=MemoryType.SEMANTIC, id="n1",
                            content="a note about a quokka"),
            RememberRequest(agent_id="a", type=MemoryType.SEMANTIC, id="old",
                            content="the revived note about an okapi"),
            RememberRequest(agent_id="a", type=MemoryType.SEMANTIC, id="n2",
                            content="a note about a dugong",
                            metadata={"context": "the reply mentions a tapir"}),
        ])
        assert await _found(store, "quokka") == ["n1"]
        assert await _found(store, "okapi") == ["old"]
        assert await _found(store, "pangolin") == []  # the revived row's old words are gone
        assert await _found(store, "dugong") == ["n2"]
        assert await _found(store, "tapir") == ["n2"]  # found by its context
        assert await _top(store, "okapi") == "old"
    finally:
        await store.aclose()
