"""memorywire 0.5's documented Python runs here unchanged: its README quickstart and its
``examples/01_quickstart.py``, verbatim (tests/fixtures/mw05/ORIGIN.md says where they come
from and under which licence), each in an empty folder with an empty home, as a 0.5 user
would run them after upgrading. Beside them, the 0.5 shape's pieces one by one."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from memorywire import Memory, MemoryType
from memorywire.client05 import RecallHits
from memorywire.embed.hashing import HashingEmbedder
from memorywire.errors import InvalidRequest
from memorywire.router import MemoryRouter
from memorywire.store.sqlite_vec import SqliteVecStore

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "mw05"
SRC = str(Path(__file__).resolve().parents[2] / "src")
VERBATIM = {
    "readme_quickstart.py.txt":
        "8572176259945c1a0dbe90206c644766b7f16703d138a10f43a9bf7ae25bf888",
    "examples_01_quickstart.py.txt":
        "a54fe45e109b008940e69e766228b6f684510cc171a59e382177488a6c2b1c21",
}


def _run(name: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    raw = (FIXTURES / name).read_bytes()
    assert hashlib.sha256(raw).hexdigest() == VERBATIM[name], f"{name} is not 0.5's code"
    work, home = tmp_path / "work", tmp_path / "home"
    work.mkdir()
    home.mkdir()
    script = work / name.removesuffix(".txt")
    script.write_bytes(raw)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMORYWIRE_", "XDG_"))}
    env.update(HOME=str(home), PYTHONPATH=SRC)
    cache = Path.home() / ".cache" / "memorywire"
    if cache.is_dir():  # the converted model, so the test does not rebuild it (minutes)
        env["MEMORYWIRE_CACHE_DIR"] = str(cache)
    return subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=600, cwd=work, env=env)


def test_the_0_5_readme_quickstart_runs_verbatim(tmp_path: Path) -> None:
    """Two stores (``sqlite-vec://./mem.db`` and ``mem0://default``) become a router; the
    hits are iterated for ``score``, ``type`` and ``content``."""
    done = _run("readme_quickstart.py.txt", tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines and "peanuts" in lines[0] and "semantic" in lines[0], lines
    assert (tmp_path / "work" / "mem.db").is_file()


def test_the_0_5_example_01_quickstart_runs_verbatim(tmp_path: Path) -> None:
    """A store object with 0.5's fake function embedder, forget by ``user_id`` filter, the
    health dictionary, ``close``."""
    done = _run("examples_01_quickstart.py.txt", tmp_path)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "-> stored 50 semantic memories." in out
    assert out.count("score=") == 5
    assert "-> forgot 10 memories belonging to Bob." in out
    assert "router status: ok" in out and "memory_count=40" in out


def _memory(tmp_path: Path, n: int = 1) -> Memory:
    stores = [SqliteVecStore(tmp_path / f"m{i}.db", embedder=HashingEmbedder(), name=f"s{i}")
              for i in range(n)]
    return Memory(agent_id="bot", stores=stores)


def test_the_shape_piece_by_piece(tmp_path: Path) -> None:
    async def go() -> None:
        mem = _memory(tmp_path, 2)
        try:
            assert isinstance(mem.store, MemoryRouter)  # several stores: a router
            a = await mem.remember("Alice likes tea", user_id="alice")
            await mem.remember("Bob likes coffee", type=MemoryType.EPISODIC, user_id="bob",
                               source="chat")
            hits = await mem.recall("what does Alice like?", k=3)
            assert isinstance(hits, RecallHits) and hits.results  # both shapes at once
            assert [h.id for h in hits] == [h.id for h in hits.results]
            assert len(hits) == len(hits.results) and hits[0].content == "Alice likes tea"
            assert hits[0].id == a.id and str(hits[0].type) == "semantic"
            gone = await mem.forget(filter={"user_id": "bob", "source": "chat"})
            assert len(gone.forgotten_ids) == 1
            assert (await mem.forget(filter={"user_id": "bob"})).forgotten_ids == []
            health = await mem.health()
            assert health["status"] == "ok"
            assert [(r["backend"], r["memory_count"]) for r in health["stores"]] == [
                ("s0", 1), ("s1", 1)]
        finally:
            await mem.close()

    anyio.run(go)


def test_unnamed_agent_and_refusals(tmp_path: Path) -> None:
    async def go() -> None:
        mem = Memory("bot", stores=[f"sqlite-vec://{tmp_path}/x.db"], embedder=HashingEmbedder())
        try:
            assert mem.agent_id == "bot"
            await mem.remember("a fact")
            assert len(await mem.recall("fact")) == 1
        finally:
            await mem.close()

    anyio.run(go)
    with pytest.raises(InvalidRequest, match="stores"):
        Memory(agent_id="bot", stores=[])
    with pytest.raises(InvalidRequest, match=r"stores\[0\]"):
        Memory(agent_id="bot", stores=[42])  # type: ignore[list-item]
    with pytest.raises(InvalidRequest, match="agent_id"):
        Memory(agent_id="", store="memory://")
