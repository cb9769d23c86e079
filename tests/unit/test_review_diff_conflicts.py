"""The reviewer's diff of a staged remember shows every conflict the write would report: a
paraphrased update that only the detector's meaning rule catches is a ``supersedes?`` row,
and building the diff costs no second model call."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from memorywire.core.clock import FakeClock
from memorywire.embed import MiniLMEmbedder
from memorywire.governance import GovernedStore, acting_as
from memorywire.store.sqlite import SqliteStore
from memorywire.store.timeline import conflicts_for
from memorywire.wire.models import MemoryType, RememberRequest
from tests.unit.test_contradiction_meaning import BROADBAND, ISP

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> MiniLMEmbedder:
    """The real model with its text cache on, as a server runs it."""
    return MiniLMEmbedder(cache_dir=tmp_path_factory.mktemp("mw-cache"))


@pytest.fixture
async def gov(tmp_path: Path, model: MiniLMEmbedder) -> AsyncIterator[GovernedStore]:
    clock = FakeClock(1_000_000)
    store = GovernedStore(SqliteStore(tmp_path / "s.db", embedder=model, clock=clock),
                          tmp_path / "gov.db", clock=clock)
    try:
        yield store
    finally:
        await store.aclose()


def _req(text: str, **kw: object) -> RememberRequest:
    return RememberRequest(agent_id="a", user_id="u", type=MemoryType.SEMANTIC, content=text,
                           **kw)  # type: ignore[arg-type]


async def test_a_paraphrase_only_the_meaning_rule_catches_is_a_supersedes_row(
        gov: GovernedStore, model: MiniLMEmbedder) -> None:
    with acting_as("writer"):
        isp = (await gov.remember(_req(ISP))).id
        await gov.remember(_req("The user's dentist name is Berlin."))
        await gov.remember(_req("The user has 2 cats."))
        staged = await gov.remember(_req(BROADBAND, approval_required=True))
    assert staged.pending_approval
    misses, hits = model.cache.misses, model.cache.hits
    review = await gov.get_review(staged.id)
    rows = {m["id"]: m["relation"] for m in review["diff"]["modified"]}
    assert rows.get(isp) == "supersedes?"
    [row] = [m for m in review["diff"]["modified"] if m["id"] == isp]
    assert "closest in meaning" in row["why"]
    assert row["similarity"] < 0.3  # below the lexical floor: shown for the detector
    # at most one model run for the whole diff: the scan's embedding is the recall query's
    assert model.cache.misses - misses <= 1 and model.cache.hits > hits
    # the same candidate a direct remember would report
    assert [c.id for c in await conflicts_for(gov.inner, _req(BROADBAND))] == [isp]


async def test_a_proposed_supersedes_is_shown_however_little_it_shares(
        gov: GovernedStore) -> None:
    with acting_as("writer"):
        isp = (await gov.remember(_req(ISP))).id
        staged = await gov.remember(_req(BROADBAND, supersedes=[isp],
                                         approval_required=True))
    review = await gov.get_review(staged.id)
    assert [(m["id"], m["relation"]) for m in review["diff"]["modified"]] == \
        [(isp, "supersedes")]
