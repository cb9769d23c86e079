"""The write path's shortcuts store and answer exactly what the plain path does (issue 35).

A remember's per-row Python was cut: new rows go into ``memories`` and ``vectors`` in one
``executemany`` each per run of rows (the rids come back in order), ``fold_request`` returns
a request with no links and no metadata as it is, ids are formatted without a ``uuid.UUID``,
empty metadata is stored as ``{}`` without ``json.dumps``. Users rely on none of that; they
rely on the rows, the vectors, the full-text entries, the links, the contexts and every
answer being the same. These tests write one mixed corpus twice, once through the batched
inserts and once through a row-by-row reference of them (one statement per row, in the
order the store used before), and compare every table and every answer; and they hold the
folding and id shortcuts to the long way round.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import apsw
import pytest

from memorywire.core.clock import FakeClock
from memorywire.core.content import fold_links, fold_request
from memorywire.core.ids import new_id
from memorywire.embed.base import Vectors
from memorywire.embed.hashing import HashingEmbedder
from memorywire.errors import InvalidRequest
from memorywire.store._vector_cache import CachedRow
from memorywire.store.sqlite import SqliteStore, writes
from memorywire.store.sqlite.contexts import put_context, stored_metadata
from memorywire.store.sqlite.schema import vid
from memorywire.wire.fields import fold_fields
from memorywire.wire.models import (
    ForgetRequest,
    Link,
    MemoryType,
    RecallRequest,
    RememberRequest,
)

pytestmark = pytest.mark.anyio

S, E, EM, P = MemoryType.SEMANTIC, MemoryType.EPISODIC, MemoryType.EMOTIONAL, \
    MemoryType.PROCEDURAL
_PROC = json.dumps({"name": "brew", "states": ["idle", "hot"], "initial": "idle",
                    "transitions": [{"trigger": "heat", "source": "idle", "dest": "hot"}]})


def _row_by_row(conn: Any, pending: Sequence[tuple[int, str]],
                prepared: Sequence[tuple[RememberRequest, str]],
                metas: Sequence[tuple[str, str | None]], links: Sequence[list[str]],
                keys: Sequence[str], blobs: Sequence[bytes], vectors: Vectors, now: int,
                scopes: dict[str, tuple[int, str]], indexed: list[tuple[int, str, str]],
                added: dict[str, list[CachedRow]]) -> None:
    """The reference: each new row's statements one by one, as the store wrote them before."""
    for i, mid in pending:
        r, stored = prepared[i]
        rid = conn.execute(
            "INSERT INTO memories(agent_id, id, user_id, type, content, metadata, "
            "confidence, source, created_at, expires_at) VALUES(?,?,?,?,?,?,?,?,?,?) "
            "RETURNING rid",
            (r.agent_id, mid, r.user_id, r.type.value, stored, metas[i][0], r.confidence,
             r.source, now, r.expires_at)).fetchone()[0]
        if metas[i][1] is not None:
            put_context(conn, rid, metas[i][1])
        conn.execute("INSERT INTO vectors VALUES(?, ?)",
                     (vid(scopes[r.agent_id][0], rid), blobs[i]))
        indexed.append((rid, keys[i], scopes[r.agent_id][1]))
        if links[i]:
            conn.executemany("INSERT OR IGNORE INTO links VALUES(?, ?, ?, 'link')",
                             [(r.agent_id, mid, dst) for dst in links[i]])
        added.setdefault(r.agent_id, []).append(CachedRow(
            rid, mid, r.user_id, r.type, now, r.expires_at, False, vectors[i]))


def _batch(k: int) -> list[RememberRequest]:
    """Plain rows, a twin, named ids (one repeated in the batch, one revived), metadata with
    a context, links both ways, typed fields, a procedure, validity, two agents, users."""
    plain = [RememberRequest(agent_id="a", type=S, content=f"Ada note {k}-{i} about tea")
             for i in range(30)]
    return [
        *plain[:10],
        RememberRequest(agent_id="a", type=S, content=f"Ada note {k}-3 about tea"),  # twin
        RememberRequest(agent_id="a", type=S, content="named row", id=f"named-{k}"),
        RememberRequest(agent_id="a", type=S, content="named row", id=f"named-{k}"),  # replay
        RememberRequest(agent_id="a", type=S, content="revived row", id="gone"),
        *plain[10:20],
        RememberRequest(agent_id="a", user_id="u1", type=S, content=f"Bo lives in Lyon {k}",
                        metadata={"context": "a chat about moving", "é": "ü"},
                        confidence=0.5, source="chat", expires_at=9_000_000_000_000),
        RememberRequest(agent_id="a", type=S, content=f"linked {k}",
                        links=[Link(id="gone"), Link(id="x", type="derived_from")],
                        metadata={"links": ["y"]}),
        RememberRequest(agent_id="a", type=E, content=f"went to Rome {k}", event_time=5,
                        location="Rome", participants=["Ada"]),
        RememberRequest(agent_id="a", type=E, content=f"went to Oslo {k}",
                        metadata={"location": "Oslo"}),
        RememberRequest(agent_id="a", type=EM, content=f"glad {k}", sentiment="positive",
                        valence=0.8),
        RememberRequest(agent_id="a", type=P, content=_PROC, allow_duplicate=True),
        RememberRequest(agent_id="a", type=S, content=f"Ada drinks coffee {k}",
                        valid_from=1000, valid_to=2000),
        RememberRequest(agent_id="b", type=S, content=f"Ada note {k}-3 about tea"),
        *plain[20:],
    ]


def _dump(path: Path) -> list[str]:
    """Every row of every table (the full-text index through its docsize and a match)."""
    conn = apsw.Connection(str(path))
    try:
        out: list[str] = []
        tables = [r[0] for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' "
            "AND name NOT LIKE 'memories_fts%' ORDER BY name")]
        for table in tables:
            out += [f"{table} {row!r}" for row in conn.execute(
                f"SELECT * FROM {table} ORDER BY 1, 2")]
        out += [f"docsize {row!r}" for row in conn.execute(
            "SELECT * FROM memories_fts_docsize ORDER BY 1")]
        out += [f"fts {row!r}" for row in conn.execute(
            "SELECT rowid FROM memories_fts WHERE memories_fts MATCH "
            "'ada OR tea OR rome OR lyon OR brew OR linked OR moving OR named OR revived' "
            "ORDER BY rowid")]
        return out
    finally:
        conn.close()


async def _run(path: Path, monkeypatch: pytest.MonkeyPatch,
               ) -> tuple[list[str], list[str], list[list[str]]]:
    counter = iter(range(1, 1_000_000))  # ids from a counter: both runs name rows alike
    monkeypatch.setattr(writes, "new_id", lambda now: f"id-{next(counter):06d}")
    store = SqliteStore(path, embedder=HashingEmbedder(), clock=FakeClock(1_000_000))
    answers: list[str] = []
    try:
        await store.remember(RememberRequest(agent_id="a", type=S, content="gone soon",
                                             id="gone"))
        await store.forget(ForgetRequest(agent_id="a", ids=["gone"]))
        for k in range(3):
            answers += [r.model_dump_json() for r in await store.remember_many(_batch(k))]
        recalled = [[h.id for h in (await store.recall(RecallRequest(
            agent_id=a, query=q, k=20))).results] for a, q in
            [("a", "Ada note about tea"), ("a", "Rome"), ("b", "tea")]]
    finally:
        await store.aclose()
    return answers, _dump(path), recalled


async def test_batched_inserts_store_and_answer_what_row_by_row_inserts_do(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fast = await _run(tmp_path / "fast.db", monkeypatch)
    monkeypatch.setattr(writes, "_insert_new", _row_by_row)
    reference = await _run(tmp_path / "reference.db", monkeypatch)
    assert fast[0] == reference[0]  # every answer
    assert fast[1] == reference[1]  # every row of every table
    assert fast[2] == reference[2]  # recall over the cache the write extended
    # the corpus did reach every path: contexts, links, a revived row, a replay, a twin
    dump = fast[1]
    assert any(line.startswith("contexts ") for line in dump)
    assert sum(line.startswith("links ") for line in dump) >= 9
    assert sum('"id":"gone"' in a for a in fast[0]) == 3  # revived, then replayed twice
    assert any(line.startswith("memories ") and "'gone'" in line and "'revived row'" in line
               for line in dump)
    assert sum('"deduplicated":true' in a for a in fast[0]) >= 3


def _reference_fold(req: RememberRequest) -> RememberRequest:
    """``fold_request`` without its shortcut: links folded, typed fields moved, always."""
    req = fold_links(req)
    typed = req.typed()
    metadata = fold_fields(req.type, req.metadata, typed)
    if not typed:
        return req
    return req.model_copy(update={"metadata": metadata, **dict.fromkeys(typed)})


@pytest.mark.parametrize("req", [
    RememberRequest(agent_id="a", type=S, content="plain"),
    RememberRequest(agent_id="a", type=S, content="empty metadata", metadata={}),
    RememberRequest(agent_id="a", type=S, content="metadata", metadata={"k": [1, 2]}),
    RememberRequest(agent_id="a", type=EM, content="typed", sentiment="mixed", arousal=0.2),
    RememberRequest(agent_id="a", type=E, content="typed, no metadata", event_time=7),
    RememberRequest(agent_id="a", type=E, content="both", event_time=7,
                    metadata={"event_time": 3, "x": 1}),
    RememberRequest(agent_id="a", type=S, content="links", links=[Link(id="z")]),
    RememberRequest(agent_id="a", type=S, content="old links", metadata={"links": ["z"]}),
], ids=lambda r: r.content)
def test_fold_request_matches_the_full_fold(req: RememberRequest) -> None:
    assert fold_request(req).model_dump() == _reference_fold(req).model_dump()


def test_fold_request_still_refuses_bad_metadata_links() -> None:
    req = RememberRequest(agent_id="a", type=S, content="x", metadata={"links": "nope"})
    with pytest.raises(InvalidRequest, match="links"):
        fold_request(req)


def test_empty_metadata_is_stored_as_json_of_an_empty_object() -> None:
    assert stored_metadata(None) == (json.dumps({}), None)
    assert stored_metadata({}) == (json.dumps({}), None)
    assert stored_metadata({"é": 1}) == (json.dumps({"é": 1}, ensure_ascii=False), None)


def test_new_id_is_the_text_of_a_version_7_uuid() -> None:
    for now in (0, 1_700_000_000_123, 2**48 - 1):
        text = new_id(now)
        parsed = uuid.UUID(text)
        assert str(parsed) == text
        assert parsed.version == 7
        assert parsed.int >> 80 == now
