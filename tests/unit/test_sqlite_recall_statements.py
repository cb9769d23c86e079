"""A default SqliteStore recall on a 100-memory scope issues a small, fixed number of SQL
statements, however many words the question has and whether or not anything answers it.

Issue 31's speed goal (store-side recall of a 100-memory scope at most 1 ms p50) was missed
by statements issued one per query word: a count per unit, a scope count per unit, and the
list gate's agreement rescue one FTS5 lookup per word per vector hit (a question nothing
answers issued the most). ``store.sqlite.fts_units`` asks each of those questions once
for all words; this pins it, so a change that goes back to per-word statements fails here.
The recall's answer must not depend on which thread runs it: a recall given its vector runs
on the caller's thread when the scope is small and nothing waits (``SqliteDb.call_read``),
and on a worker thread when another process holds the write lock.
"""

from __future__ import annotations

import json
import threading
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
import apsw
import pytest

from memorywire.embed.hashing import HashingEmbedder
from memorywire.store.sqlite import SqliteStore
from memorywire.wire.models import MemoryType, RecallRequest, RememberRequest

pytestmark = pytest.mark.anyio

FACTS = Path(__file__).resolve().parents[2] / "benchmarks" / "corpus" / "facts.jsonl"
EMB = HashingEmbedder(64)
#: What a default recall issues at most on this scope: transaction and synchronous pragmas
#: (5), the unit counts, the units' scope rows, the BM25 list, the rows read, the feedback
#: round's hit texts, word counts and list, the subject's rows, the recall statistics.
MAX_STATEMENTS = 14
QUESTIONS = [
    "What food allergy does Alice have?",  # a named subject the scope holds
    "Which programming language does Alice use at her job?",
    "What is the capital of Australia and how many people live in its largest city?",
    # nothing answers these: the list gate's agreement rescue looks at every vector hit
    "quantum chromodynamics lattice gauge symmetry breaking renormalisation group flows",
    "Tell me about volcanoes glaciers tectonic plates earthquakes tsunamis and hurricanes",
    "What is Alice's shoe size?",
]

#: A stored fact, word for word: answered whatever the embedder.
ANSWERED = "Alice is allergic to peanuts and carries an epinephrine pen."


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SqliteStore]:
    facts = [json.loads(line) for line in FACTS.read_text(encoding="utf-8").splitlines()
             if line.strip()]
    made = SqliteStore(tmp_path / "m.db", EMB)
    await made.remember_many([RememberRequest(
        agent_id="a", user_id=f["user"], type=f["type"], content=f["content"], id=f["id"])
        for f in facts])
    # other agents' rows share the full-text table (table-wide counts, row-id ranges)
    await made.remember_many([RememberRequest(agent_id="b", type=f["type"],
                                              content=f["content"]) for f in facts[:40]])
    try:
        yield made
    finally:
        await made.aclose()


def _traced(store: SqliteStore) -> tuple[apsw.Connection, list[str]]:
    conn = store._db._conn
    assert conn is not None
    seen: list[str] = []

    def trace(_cursor: Any, sql: str, _bindings: Any) -> bool:
        seen.append(sql)
        return True

    conn.exec_trace = trace
    return conn, seen


async def test_a_default_recall_issues_a_bounded_number_of_statements(
        store: SqliteStore) -> None:
    conn, seen = _traced(store)
    counts = {}
    try:
        for question in QUESTIONS:
            seen.clear()
            await store.recall(RecallRequest(agent_id="a", query=question, k=5))
            counts[question] = len(seen)
            # no statement per word: an FTS5 lookup of one row, or one count per statement
            assert not [s for s in seen if "rowid = ?" in s], question
    finally:
        conn.exec_trace = None
    assert max(counts.values()) <= MAX_STATEMENTS, counts
    # a long question nothing answers (10 content words) costs about what a short one does
    assert counts[QUESTIONS[3]] <= counts[QUESTIONS[0]] + 2, counts


def _threads(store: SqliteStore, searched: set[int] | None = None,
             ) -> tuple[apsw.Connection, set[int]]:
    """Trace which threads run the store's statements (into ``searched``: those that run a
    SELECT, i.e. got past ``BEGIN``)."""
    conn = store._db._conn
    assert conn is not None
    seen: set[int] = set()

    def trace(_cursor: Any, sql: str, _bindings: Any) -> bool:
        seen.add(threading.get_ident())
        if searched is not None and sql.startswith("SELECT"):
            searched.add(threading.get_ident())
        return True

    conn.exec_trace = trace
    return conn, seen


async def test_a_recall_given_its_vector_answers_alike_inline_or_on_a_worker_thread(
        store: SqliteStore) -> None:
    answered = 0
    await store.recall(RecallRequest(agent_id="a", query="warm"))  # the scope is cached now
    for question in [*QUESTIONS, ANSWERED]:
        vector = EMB.embed([question])[0]
        request = RecallRequest(agent_id="a", query=question, k=5)
        conn, threads = _threads(store)
        try:
            inline = await store.recall_by_vector(request, vector)  # cached 100-row scope
            assert threads == {threading.get_ident()}
            threads.clear()
            threaded = await store.recall(request)  # embeds: always a worker thread
            assert threading.get_ident() not in threads
        finally:
            conn.exec_trace = None
        assert [(h.id, h.relevance) for h in inline.results] == [
            (h.id, h.relevance) for h in threaded.results]
        answered += bool(inline.results)
    assert answered >= 1


async def test_a_recall_waits_for_another_writer_without_blocking_the_event_loop(
        store: SqliteStore, tmp_path: Path) -> None:
    question = ANSWERED
    vector = EMB.embed([question])[0]
    expected = await store.recall_by_vector(RecallRequest(agent_id="a", query=question), vector)
    other = apsw.Connection(str(tmp_path / "m.db"))
    other.execute("BEGIN IMMEDIATE")  # another process's write in progress
    ticks = 0
    got: list[str] = []
    searched: set[int] = set()
    conn, _ = _threads(store, searched)

    async def recall() -> None:
        resp = await store.recall_by_vector(RecallRequest(agent_id="a", query=question), vector)
        got.extend(h.id for h in resp.results)

    async def tick() -> None:
        nonlocal ticks
        for _ in range(5):
            await anyio.sleep(0.02)
            ticks += 1
        other.execute("COMMIT")

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(recall)
            tg.start_soon(tick)
    finally:
        if not other.getautocommit():
            other.execute("ROLLBACK")
        other.close()
        conn.exec_trace = None
    # it tried inline, found the lock held and searched on a worker thread once it was free
    assert searched and threading.get_ident() not in searched
    assert ticks == 5  # the loop kept running while the recall waited for the lock
    assert got == [h.id for h in expected.results] and got


@pytest.mark.parametrize("writer", ["same store", "another connection"])
async def test_reused_word_counts_follow_every_write(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, writer: str) -> None:
    """A recall reuses the full-text counts of earlier ones only while nothing was written:
    a word pushed over the row budget by a write, this store's or another connection's,
    stops ranking at the next recall, exactly as in a store opened afresh."""
    from memorywire.store.sqlite import search as sqlite_search

    monkeypatch.setattr(sqlite_search, "LEXICAL_BUDGET", 5)
    settings = replace(SqliteStore.DEFAULT_RECALL, relevance_floor=0.99, lexical_floor=-1.0)
    path = tmp_path / "w.db"
    store = SqliteStore(path, EMB, recall=settings)
    other = SqliteStore(path, EMB, recall=settings)
    request = RecallRequest(agent_id="a", query="weather", k=5)
    try:
        await store.remember_many([RememberRequest(agent_id="a", type=MemoryType.SEMANTIC,
                                                   content=f"note number {i}")
                                   for i in range(8)])
        await store.remember_many([RememberRequest(agent_id="a", type=MemoryType.SEMANTIC,
                                                   content=f"weather note {i}",
                                                   id=f"w{i}") for i in range(2)])
        # "weather": 2 rows of 10, under the budget: full-text evidence admits them
        assert {h.id for h in (await store.recall(request)).results} == {"w0", "w1"}
        assert {h.id for h in (await store.recall(request)).results} == {"w0", "w1"}
        writes = store if writer == "same store" else other
        await writes.remember_many([RememberRequest(agent_id="b", type=MemoryType.SEMANTIC,
                                                    content=f"weather {i}")
                                    for i in range(4)])
        # 6 rows now, over the budget of 5: the word no longer ranks anything
        assert (await store.recall(request)).results == []
        fresh = SqliteStore(path, EMB, recall=settings)
        try:
            assert (await fresh.recall(request)).results == []
        finally:
            await fresh.aclose()
    finally:
        await store.aclose()
        await other.aclose()
