"""``memorywire forget --cascade --hard`` on a real SQLite file: the seed and everything
derived from it leave every read (get, list, recall, graph hops) and every file of the store;
an unrelated memory and one that only links to the seed stay."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from memorywire.cli import main
from memorywire.core.provenance import descendants
from memorywire.embed.hashing import HashingEmbedder
from memorywire.store.base import ListQuery
from memorywire.store.sqlite import SqliteStore
from memorywire.wire.models import Link, MemoryType, RecallRequest, RememberRequest

SECRET = b"quokka-7781"


def _req(id_: str, text: str, links: list[Link] | None = None) -> RememberRequest:
    return RememberRequest(id=id_, agent_id="A", type=MemoryType.SEMANTIC, content=text,
                           links=links)


def _d(*ids: str) -> list[Link]:
    return [Link(id=i, type="derived_from") for i in ids]


def test_descendants_follow_derivations_only() -> None:
    rows = [_req("s", "x"), _req("d1", "x", _d("s")), _req("d2", "x", _d("d1", "o")),
            _req("r", "x", [Link(id="s")]), _req("o", "x")]
    recs = [type("R", (), {"id": r.id, "source": None,
                           "metadata": {"links": [ln.model_dump() for ln in r.links or []]}})()
            for r in rows]
    assert descendants(recs, ["s"]) == ["d1", "d2"]


def test_cascade_hard_forget_leaves_no_trace(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "m.db"

    async def fill() -> None:
        store = SqliteStore(db, embedder=HashingEmbedder(64))
        try:
            await store.remember(_req("seed", "the door code is quokka-7781"))
            await store.remember(_req("sum", "summary: door code quokka-7781 noted", _d("seed")))
            await store.remember(_req("dig", "digest: quokka-7781 among others", _d("sum")))
            await store.remember(_req("rel", "about the front door", [Link(id="seed")]))
            await store.remember(_req("other", "the cat is grey"))
        finally:
            await store.aclose()

    anyio.run(fill)
    store_args = ["--store", f"sqlite:///{db}", "--embedder", "hashing", "-a", "A"]
    assert main(["forget", *store_args, "--id", "seed", "--hard", "--cascade", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert sorted(out["forgotten_ids"]) == ["dig", "seed", "sum"]

    async def reads() -> tuple[list[str], list[str], list[str | None]]:
        store = SqliteStore(db, embedder=HashingEmbedder(64))
        try:
            listed = sorted(r.id for r in await store.list(ListQuery(agent_id=None,
                                                                     include_archived=True)))
            hits = await store.recall(RecallRequest(agent_id="A", query="quokka-7781 door code",
                                                    k=50, hops=2))
            got = [None if (r := await store.get("A", i)) is None else r.id
                   for i in ("seed", "sum", "dig")]
            return listed, [str(h.content) for h in hits.results], got
        finally:
            await store.aclose()

    listed, recalled, got = anyio.run(reads)
    assert listed == ["other", "rel"]
    assert not [c for c in recalled if "quokka" in c]
    assert got == [None, None, None]
    for f in tmp_path.iterdir():
        assert SECRET not in f.read_bytes(), f"{f.name} still holds the forgotten bytes"
