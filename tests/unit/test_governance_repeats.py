"""A governed remember of a memory the scope holds: answered with it, as an ungoverned store
answers (see governance/repeats.py), on SQLite and the in-memory store; the PostgreSQL case
is in tests/integration/test_governance_pg.py."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from memorywire.core.clock import FakeClock
from memorywire.embed.hashing import HashingEmbedder
from memorywire.governance import GovernedStore, acting_as
from memorywire.store.base import ListQuery, MemoryStore
from memorywire.store.memory import InMemoryStore
from memorywire.store.sqlite import SqliteStore
from memorywire.wire.models import RememberRequest, RememberResponse

pytestmark = pytest.mark.anyio
A = "agent-1"
PEANUTS = "The user is allergic to peanuts."


def _memory(tmp: Path, clock: FakeClock) -> MemoryStore:
    return InMemoryStore(embedder=HashingEmbedder(), clock=clock)


def _sqlite(tmp: Path, clock: FakeClock) -> MemoryStore:
    return SqliteStore(tmp / "mem.db", embedder=HashingEmbedder(), clock=clock)


INNERS: dict[str, Callable[[Path, FakeClock], MemoryStore]] = {
    "memory": _memory, "sqlite": _sqlite}


@pytest.fixture(params=sorted(INNERS))
async def gov(tmp_path: Path, request: pytest.FixtureRequest) -> AsyncIterator[GovernedStore]:
    clock = FakeClock()
    g = GovernedStore(INNERS[request.param](tmp_path, clock), tmp_path / "gov.db", clock=clock)
    yield g
    await g.aclose()


async def _remember(g: GovernedStore, content: str, **kw: Any) -> RememberResponse:
    with acting_as("writer"):
        return await g.remember(RememberRequest(agent_id=A, type="semantic", content=content,
                                                user_id="u", **kw))


async def _ids(g: GovernedStore) -> list[str]:
    return sorted(r.id for r in await g.list(ListQuery(agent_id=A, user_id="u")))


def _trail(g: GovernedStore) -> list[tuple[str, list[str], str | None]]:
    return [(e["action"], e["memory_ids"], e["details"].get("phase"))
            for e in g.audit_entries()]


async def test_a_repeat_is_the_stored_memory_and_one_audit_entry(gov: GovernedStore) -> None:
    first = await _remember(gov, PEANUTS)
    again = await _remember(gov, "the user  is allergic to PEANUTS.")
    assert again.id == first.id and again.deduplicated is True, again
    assert again.stored_at == first.stored_at and again.stores == first.stores
    assert not again.pending_approval
    assert await _ids(gov) == [first.id], "a repeat was written"
    # No entry names an id that was never written: the repeat's one entry names the stored
    # memory, and no intent was opened for it.
    assert _trail(gov) == [("remember", [first.id], "intent"), ("remember", [first.id], "done"),
                           ("remember", [first.id], "deduplicated")]
    entry = gov.audit_entries()[-1]
    assert entry["actor"] == "writer" and entry["details"]["user_id"] == "u"
    # the text as this caller sent it (another case and spacing than the stored one's)
    assert entry["details"]["content_hmac"] != gov.audit_entries()[0]["details"]["content_hmac"]
    assert gov.verify()["ok"]


async def test_a_named_id_and_allow_duplicate_still_store_a_copy(gov: GovernedStore) -> None:
    first = await _remember(gov, PEANUTS)
    named = await _remember(gov, PEANUTS, id="mine")
    assert named.id == "mine" and not named.deduplicated
    assert [(n.id, n.similarity) for n in named.near_duplicates or []] == [(first.id, 1.0)]
    copy = await _remember(gov, PEANUTS, allow_duplicate=True)
    assert copy.id not in (first.id, "mine") and not copy.deduplicated
    assert await _ids(gov) == sorted([first.id, "mine", copy.id])
    assert gov.verify()["ok"]


async def test_other_scope_or_metadata_is_another_memory(gov: GovernedStore) -> None:
    first = await _remember(gov, PEANUTS)
    with acting_as("writer"):
        other_user = await gov.remember(RememberRequest(agent_id=A, type="semantic",
                                                        content=PEANUTS, user_id="v"))
    tagged = await _remember(gov, PEANUTS, metadata={"session": "s2"})
    assert other_user.id != first.id and not other_user.deduplicated
    assert tagged.id != first.id and not tagged.deduplicated
    assert gov.verify()["ok"]


async def test_a_staged_repeat_is_staged_and_approval_stores_it_under_its_id(
    gov: GovernedStore,
) -> None:
    """Review is unaffected: the reviewer decides on what was asked, and an approved write
    is stored under its approval id even when an identical memory exists by then (reported
    as a near-duplicate, as a named id is)."""
    first = await _remember(gov, PEANUTS)
    staged = await _remember(gov, PEANUTS, approval_required=True)
    assert staged.pending_approval and staged.id != first.id and not staged.deduplicated
    review = await gov.get_review(staged.id)
    done = await gov.approve(staged.id, "reviewer", review["content_hash"])
    assert done["status"] == "approved"
    assert await _ids(gov) == sorted([first.id, staged.id])
    # once stored, a later plain repeat is answered by one of the two
    again = await _remember(gov, PEANUTS)
    assert again.deduplicated and again.id in (first.id, staged.id)
    assert await _ids(gov) == sorted([first.id, staged.id])
    assert gov.verify()["ok"]
