"""Typed edges (``links``) and ``hops`` on one store: the boost is real, edges keep types."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import anyio
import pytest

from memorywire.embed.hashing import HashingEmbedder
from memorywire.errors import InvalidRequest
from memorywire.store.graph import linked, links_from
from memorywire.store.memory import InMemoryStore
from memorywire.store.sqlite import SqliteStore
from memorywire.wire.models import MemoryType, MergeRequest, RecallRequest, RememberRequest


def _rem(mid: str, text: str, **kw: object) -> RememberRequest:
    return RememberRequest.model_validate(
        {"agent_id": "a", "type": MemoryType.SEMANTIC, "content": text, "id": mid, **kw})


def test_single_sqlite_store_boosts_linked_hits_with_hops(tmp_path: Path) -> None:
    """Regression: a single store declared ``graph`` yet ignored hops=1 (no boost, no
    ``supporting``). Written with the v0.0 ``metadata.links`` so it runs on old code too."""

    async def main() -> None:
        store = SqliteStore(tmp_path / "m.db", embedder=HashingEmbedder(64),
                            recall=replace(SqliteStore.DEFAULT_RECALL, relevance_floor=-2.0,
                                           lexical_floor=-2.0))
        await store.remember(_rem("t1", "tea brewed hot water"))
        await store.remember(_rem("t2", "tea brewed cooler", metadata={"links": ["t1"]}))
        await store.remember(_rem("t3", "coffee ground fine"))
        req = RecallRequest(agent_id="a", query="tea brewed", k=3)
        flat = {h.id: h for h in (await store.recall(req)).results}
        hopped = {h.id: h for h in
                  (await store.recall(req.model_copy(update={"hops": 1}))).results}
        await store.aclose()
        assert hopped["t2"].supporting == ["t1"]
        assert hopped["t2"].score == pytest.approx(flat["t2"].score * 1.05)
        assert hopped["t3"].supporting == [] and hopped["t3"].score == flat["t3"].score

    anyio.run(main)


def test_typed_edges_are_stored_read_and_queried_by_type(tmp_path: Path) -> None:
    async def main() -> None:
        for store in (SqliteStore(tmp_path / "m.db", embedder=HashingEmbedder(64)),
                      InMemoryStore(embedder=HashingEmbedder(64))):
            await store.remember(_rem("v1", "wifi password hunter2"))
            await store.remember(_rem("v2", "wifi password hunter3",
                                      links=[{"id": "v1", "type": "supersedes"}],
                                      metadata={"links": ["v0"]}))
            got = await store.get("a", "v2")
            assert got is not None and [(x.id, x.type) for x in got.links or ()] == [
                ("v0", "related"), ("v1", "supersedes")]
            assert [r.id for r in await linked(store, "a", "v1", "supersedes")] == ["v2"]
            assert [x.id for x in await links_from(store, "a", "v2", "related")] == ["v0"]
            await store.remember(_rem("v3", "wifi is slow"))
            await store.merge(MergeRequest(agent_id="a", canonical="v3", duplicates=["v2"]))
            survivor = await store.get("a", "v3")
            assert survivor is not None
            assert {(x.id, x.type) for x in survivor.links or ()} == {
                ("v0", "related"), ("v1", "supersedes")}
            assert [r.id for r in await linked(store, "a", "v1", "supersedes")] == ["v3"]
            await store.aclose()

    anyio.run(main)


def test_a_malformed_deprecated_link_is_refused_naming_links(tmp_path: Path) -> None:
    async def main() -> None:
        store = InMemoryStore(embedder=HashingEmbedder(64))
        with pytest.raises(InvalidRequest, match="links"):
            await store.remember(_rem("x", "t", metadata={"links": [{"id": "y", "type": "A"}]}))

    anyio.run(main)


def test_update_sets_typed_edges_and_the_router_boosts_with_them(tmp_path: Path) -> None:
    """Edges change through update's metadata patch (``links`` takes typed entries), and a
    router over a graph store boosts with the typed edges its children hold."""
    from memorywire.router import MemoryRouter
    from memorywire.store.base import UpdateRequest

    async def main() -> None:
        sqlite = SqliteStore(tmp_path / "r.db", embedder=HashingEmbedder(64),
                             recall=replace(SqliteStore.DEFAULT_RECALL, relevance_floor=-2.0,
                                            lexical_floor=-2.0))
        memory = InMemoryStore(embedder=HashingEmbedder(64),
                               recall=replace(InMemoryStore.DEFAULT_RECALL, relevance_floor=-2.0,
                                              lexical_floor=-2.0))
        router = MemoryRouter([sqlite, memory])
        await router.remember(_rem("t1", "tea brewed hot water"))
        await router.remember(_rem("t2", "tea brewed cooler"))
        await router.update(UpdateRequest(agent_id="a", id="t2", metadata_patch={
            "links": [{"id": "t1", "type": "derived_from"}]}))
        got = await sqlite.get("a", "t2")
        assert got is not None and [(x.id, x.type) for x in got.links or ()] == [
            ("t1", "derived_from")]
        hits = await router.recall(RecallRequest(agent_id="a", query="tea brewed", k=2, hops=1))
        assert {h.id: h.supporting for h in hits.results} == {"t1": ["t2"], "t2": ["t1"]}
        assert [r.id for r in await linked(router, "a", "t1", "derived_from")] == ["t2"]
        await router.aclose()

    anyio.run(main)
