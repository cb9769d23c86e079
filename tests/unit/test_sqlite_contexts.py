"""SqliteStore keeps ``metadata.context`` beside the row (schema 3), invisibly to callers.

What a caller relies on: every read (recall, get, list, export) returns the metadata it wrote,
key order included; filters still see the context; an update or a hard delete leaves no stale
context behind; a version-2 file opens with the same answers. The split itself (the row's
JSON no longer holds the text) is checked once, because it is why a recall got cheaper.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import apsw
import pytest

from memorywire.core.records import ListQuery, UpdateRequest
from memorywire.embed.hashing import HashingEmbedder
from memorywire.store.sqlite import SqliteStore
from memorywire.wire.models import ForgetRequest, MemoryType, RecallRequest, RememberRequest
from tests.unit.test_sqlite_recalls import UNDO_V4

pytestmark = pytest.mark.anyio

EMB = HashingEmbedder(64)
CONTEXT = "Melanie: Did you adopt anything from the quokkashelter yesterday?"
QUESTION = "what came from the quokkashelter"


def _store(path: Path) -> SqliteStore:
    return SqliteStore(path, EMB,
                       recall=replace(SqliteStore.DEFAULT_RECALL, relevance_floor=-1.0,
                                      lexical_floor=-1.0))


def _turn(mid: str, text: str, metadata: dict[str, object]) -> RememberRequest:
    return RememberRequest(agent_id="a", type=MemoryType.EPISODIC, content=text, id=mid,
                           metadata=metadata)


META = {"speaker": "Caroline", "context": CONTEXT, "date": "2023-05-08"}


async def _write(store: SqliteStore) -> None:
    await store.remember_many([
        _turn("t1", "Caroline: A puppy! We named him Biscuit.", dict(META)),
        _turn("t2", "Caroline: The weather was grey all week.", {"speaker": "Caroline"}),
        _turn("t3", "Melanie: I baked bread.", {"context": "", "speaker": "Melanie"}),
    ])


async def test_every_read_returns_the_metadata_as_written_in_its_key_order(
        tmp_path: Path) -> None:
    store = _store(tmp_path / "m.db")
    try:
        await _write(store)
        resp = await store.recall(RecallRequest(agent_id="a", query=QUESTION, k=3))
        assert resp.results[0].id == "t1"  # found by its context's words alone
        by_id = {h.id: h.metadata for h in resp.results}
        assert by_id["t1"] == META and list(by_id["t1"]) == ["speaker", "context", "date"]
        assert by_id["t2"] == {"speaker": "Caroline"}
        assert by_id["t3"] == {"context": "", "speaker": "Melanie"}
        got = await store.get("a", "t1")
        assert got is not None and list(got.metadata.items()) == list(META.items())
        listed = {r.id: r.metadata for r in await store.list(ListQuery(agent_id="a"))}
        assert listed["t1"] == META and listed["t3"]["context"] == ""
        exported = {r.id: r.metadata for r in await store.export_rows("a", None, 10)}
        assert exported["t1"] == META
    finally:
        await store.aclose()


async def test_the_row_json_holds_no_context_text(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    store = _store(path)
    try:
        await _write(store)
    finally:
        await store.aclose()
    conn = apsw.Connection(str(path))
    try:
        metas = [r[0] for r in conn.execute("SELECT metadata FROM memories ORDER BY rid")]
        assert not any("quokkashelter" in m for m in metas)
        assert conn.execute("SELECT count(*) FROM contexts").fetchone() == (2,)
    finally:
        conn.close()


async def test_filters_see_the_context(tmp_path: Path) -> None:
    store = _store(tmp_path / "m.db")
    try:
        await _write(store)
        listed = await store.list(ListQuery(agent_id="a", filter={"context": CONTEXT}))
        assert [r.id for r in listed] == ["t1"]
        resp = await store.recall(RecallRequest(agent_id="a", query="puppy", k=3,
                                                filter={"context": CONTEXT}))
        assert [h.id for h in resp.results] == ["t1"]
        gone = await store.forget(ForgetRequest(agent_id="a", filter={"context": CONTEXT}))
        assert gone.forgotten_ids == ["t1"]
    finally:
        await store.aclose()


async def test_update_and_hard_delete_leave_no_stale_context(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    store = _store(path)
    try:
        await _write(store)
        new = "Melanie: What did the zebrafinch rescue give you?"
        record = await store.update(UpdateRequest(agent_id="a", id="t1",
                                                  metadata_patch={"context": new}))
        assert record.metadata == {**META, "context": new}
        assert list(record.metadata) == ["speaker", "context", "date"]
        resp = await store.recall(RecallRequest(agent_id="a", query="zebrafinch", k=1))
        assert [h.id for h in resp.results] == ["t1"]
        assert resp.results[0].metadata["context"] == new
        await store.forget(ForgetRequest(agent_id="a", ids=["t1"], hard_delete=True))
    finally:
        await store.aclose()
    conn = apsw.Connection(str(path))
    try:
        assert conn.execute("SELECT count(*) FROM contexts").fetchone() == (1,)  # t3's ""
    finally:
        conn.close()
    data = path.read_bytes() + (tmp_path / "m.db-wal").read_bytes() \
        if (tmp_path / "m.db-wal").exists() else path.read_bytes()
    assert b"zebrafinch" not in data


def _downgrade_to_v2(path: Path) -> None:
    """What a version-2 file held: the context inside the metadata JSON, no contexts table
    (and, as in version 3, the recall statistics in the row, no recalls table)."""
    conn = apsw.Connection(str(path))
    try:
        conn.execute(UNDO_V4 + """
            UPDATE memories SET metadata = json_set(metadata, '$.context',
                (SELECT text FROM contexts WHERE contexts.rid = memories.rid))
                WHERE rid IN (SELECT rid FROM contexts);
            DROP TRIGGER contexts_follow_rows;
            DROP TABLE contexts;
            UPDATE meta SET value = '2' WHERE key = 'schema_version';
        """)
    finally:
        conn.close()


async def test_a_version_2_file_is_migrated_with_the_same_answers(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    store = _store(path)
    try:
        await _write(store)
        before = (await store.recall(RecallRequest(agent_id="a", query=QUESTION, k=3))).results
    finally:
        await store.aclose()
    _downgrade_to_v2(path)
    conn = apsw.Connection(str(path))
    assert any("quokkashelter" in r[0] for r in conn.execute("SELECT metadata FROM memories"))
    conn.close()

    store = _store(path)
    try:
        after = (await store.recall(RecallRequest(agent_id="a", query=QUESTION, k=3))).results
        assert [(h.id, list(h.metadata.items())) for h in after] == [
            (h.id, list(h.metadata.items())) for h in before]
    finally:
        await store.aclose()
    conn = apsw.Connection(str(path))
    try:
        assert conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() \
            == ("4",)
        assert conn.execute("SELECT count(*) FROM contexts").fetchone() == (2,)
        assert not any("quokkashelter" in r[0]
                       for r in conn.execute("SELECT metadata FROM memories"))
    finally:
        conn.close()
