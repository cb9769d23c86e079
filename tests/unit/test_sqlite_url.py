"""SQLite URLs follow SQLAlchemy's convention, and a read never creates a store."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from memorywire.embed.hashing import HashingEmbedder
from memorywire.errors import NotFound
from memorywire.store.base import ListQuery
from memorywire.store.registry import open_store
from memorywire.store.sqlite import SqliteStore
from memorywire.store.sqlite.url import sqlite_path
from memorywire.wire.models import RecallRequest, RememberRequest


@pytest.fixture
def in_tmp(tmp_path: Path) -> Iterator[Path]:
    old = Path.cwd()
    os.chdir(tmp_path)
    try:
        yield tmp_path
    finally:
        os.chdir(old)


@pytest.mark.parametrize(
    ("url", "path"),
    [
        ("sqlite:///relative.db", "relative.db"),
        ("sqlite:///sub/dir/m.db", "sub/dir/m.db"),
        ("sqlite:////abs/m.db", "/abs/m.db"),
        ("sqlite:////abs/m.db?mode=x", "/abs/m.db"),
        ("sqlite://", ":memory:"),
        ("sqlite://:memory:", ":memory:"),
    ],
)
def test_sqlalchemy_convention(in_tmp: Path, url: str, path: str) -> None:
    assert sqlite_path(url) == path


@pytest.mark.parametrize(
    ("url", "path"),
    [
        ("sqlite-vec://./mem.db", "./mem.db"),
        ("sqlite-vec://mem.db", "mem.db"),
        ("sqlite-vec://./sub/m.db?turn_weight=0", "./sub/m.db"),
        ("sqlite-vec:///abs/m.db", "/abs/m.db"),
        ("sqlite-vec://:memory:", ":memory:"),
    ],
)
def test_sqlite_vec_urls_read_as_memorywire_0_5_wrote_them(in_tmp: Path, url: str,
                                                            path: str) -> None:
    """0.5's ``SqliteVecStore.from_url``: everything after ``://`` is the path (no warning:
    the test run turns warnings into errors)."""
    assert sqlite_path(url) == path


def test_three_slashes_write_a_file_in_the_working_directory(in_tmp: Path) -> None:
    """Regression: ``sqlite:///rel.db`` used to write ``/rel.db`` at the filesystem root."""

    async def go() -> None:
        store = open_store("sqlite:///rel.db", embedder=HashingEmbedder(16))
        try:
            await store.remember(RememberRequest(agent_id="a", type="semantic", content="x"))
        finally:
            await store.aclose()

    anyio.run(go)
    assert (in_tmp / "rel.db").is_file()
    assert not Path("/rel.db").exists()


def test_old_absolute_spelling_still_reads_absolute_with_a_warning(in_tmp: Path) -> None:
    """``sqlite:///tmp/x.db`` meant ``/tmp/x.db`` before; with no ``./tmp`` here it still does."""
    target = in_tmp / "old" / "x.db"
    target.parent.mkdir()
    sub = in_tmp / "elsewhere"
    sub.mkdir()
    os.chdir(sub)
    with pytest.warns(FutureWarning, match="four slashes"):
        assert sqlite_path("sqlite://" + str(target)) == str(target)


def test_two_slash_relative_spelling_warns(in_tmp: Path) -> None:
    with pytest.warns(FutureWarning, match="three slashes"):
        assert sqlite_path("sqlite://rel.db") == "rel.db"


def test_sqlite_vec_scheme_opens_the_sqlite_store(in_tmp: Path) -> None:
    async def go() -> None:
        store = open_store("sqlite-vec://./v.db", embedder=HashingEmbedder(16))
        try:
            assert isinstance(store, SqliteStore)
            await store.remember(RememberRequest(agent_id="a", type="semantic", content="x"))
        finally:
            await store.aclose()

    anyio.run(go)
    assert (in_tmp / "v.db").is_file()


def test_reading_a_store_that_does_not_exist_names_the_path_and_creates_nothing(
    in_tmp: Path,
) -> None:
    """Regression: a recall on a mistyped path silently created an empty database."""
    typo = in_tmp / "typo" / "mem.db"

    async def go() -> None:
        store = open_store(f"sqlite:///{typo}", embedder=HashingEmbedder(16),
                           reads_need_file=True)
        try:
            assert (await store.health()).status == "ok"
            with pytest.raises(NotFound, match=str(typo)):
                await store.recall(RecallRequest(agent_id="a", query="anything"))
            with pytest.raises(NotFound, match=str(typo)):
                await store.list(ListQuery(agent_id="a"))
            with pytest.raises(NotFound, match=str(typo)):
                await store.get("a", "some-id")
        finally:
            await store.aclose()

    anyio.run(go)
    assert not typo.parent.exists()


def test_an_application_reads_a_missing_store_as_empty_without_creating_it(
    in_tmp: Path,
) -> None:
    """An agent's first call is often a recall (MCP, an app on Memory.local): it gets
    nothing, not an error, and no file."""
    from memorywire.server.config import load_config
    from memorywire.server.runtime import open_configured_store

    path = in_tmp / "data" / "mem.db"
    config = load_config(overrides={"store": f"sqlite:///{path}", "embedder": "hashing"})

    async def go() -> None:
        store = open_configured_store(config)
        try:
            got = await store.recall(RecallRequest(agent_id="a", query="anything"))
            assert got.results == []
            assert await store.get("a", "x") is None
        finally:
            await store.aclose()

    anyio.run(go)
    assert not path.parent.exists()


def test_the_first_write_creates_the_file_and_its_folders(in_tmp: Path) -> None:
    path = in_tmp / "new" / "deeper" / "mem.db"

    async def go() -> None:
        store = SqliteStore(path, embedder=HashingEmbedder(16))
        try:
            await store.remember(RememberRequest(agent_id="a", type="semantic",
                                                 content="Carol is vegetarian"))
            hits = await store.recall(RecallRequest(agent_id="a", query="Carol vegetarian"))
            assert [h.content for h in hits.results] == ["Carol is vegetarian"]
        finally:
            await store.aclose()

    anyio.run(go)
    assert path.is_file()


def test_cli_recall_on_a_fresh_account_names_the_store_it_looked_for(
    in_tmp: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from memorywire.cli import main

    monkeypatch.setenv("MEMORYWIRE_HOME", str(in_tmp / "data"))
    assert main(["recall", "--embedder", "hashing", "-a", "A", "anything"]) == 1
    err = capsys.readouterr().err
    assert "not_found" in err and str(in_tmp / "data" / "mem.db") in err
    assert not (in_tmp / "data").exists()
    assert main(["remember", "--embedder", "hashing", "-a", "A", "first", "--json"]) == 0
    assert (in_tmp / "data" / "mem.db").is_file()
