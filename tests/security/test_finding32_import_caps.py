"""Finding 32 (medium): a 0.3 MB gzip import inflated the server from 356 MB to 1.9 GB (a
dump is read a line at a time, and the bomb was one line), and the CLI importing ``/dev/zero``
grew without bound. Now the unzipped size, each line's length and the number of records are
capped while the dump streams, before a line is parsed."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import tracemalloc
import zlib
from pathlib import Path

import anyio
import pytest

from memorywire.embed.hashing import HashingEmbedder
from memorywire.errors import PayloadTooLarge
from memorywire.portability import import_dump
from memorywire.store.sqlite import SqliteStore
from tests.security.conftest import Rig
from tests.security.dumps import dump, post_import, row

pytestmark = pytest.mark.anyio


def _gzip_bomb(unzipped: int) -> bytes:
    """A valid header line, then ``unzipped`` bytes of one line of zeros, gzip-compressed."""
    header = dump().split(b"\n", 1)[0] + b"\n"
    z = zlib.compressobj(9, zlib.DEFLATED, 31)  # 31: the gzip container
    parts = [z.compress(header)]
    chunk = b"0" * (1 << 20)
    for _ in range(unzipped // len(chunk)):
        parts.append(z.compress(chunk))
    parts.append(z.flush())
    return b"".join(parts)


async def test_a_gzip_bomb_is_refused_without_inflating_memory(rig: Rig) -> None:
    bomb = _gzip_bomb(300 << 20)
    assert len(bomb) < 400_000  # about 0.3 MB on the wire
    tracemalloc.start()
    try:
        r = await post_import(rig.http, bomb, rig.admin, **{"content-encoding": "gzip"})
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 64 << 20, f"the import held {peak >> 20} MiB"
    assert r.status_code == 413, r.text[:300]
    assert r.json()["code"] == "payload_too_large"
    assert "max_import_line_bytes" in r.json()["message"]
    ok = await rig.http.post("/v0/recall", json={"agent_id": "a1", "query": "x"},
                             headers={"authorization": f"Bearer {rig.admin}"})
    assert ok.status_code == 200


def test_cli_import_of_dev_zero_stops_with_an_error(tmp_path: Path) -> None:
    def cap_memory() -> None:  # on failure, a MemoryError instead of the machine's memory
        resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))

    p = subprocess.run(
        [sys.executable, "-m", "memorywire.cli", "import", "--store",
         f"sqlite:///{tmp_path / 'm.db'}", "--embedder", "hashing", "/dev/zero"],
        capture_output=True, timeout=120, preexec_fn=cap_memory,
        env={**os.environ, "MEMORYWIRE_HOME": str(tmp_path), "OPENBLAS_NUM_THREADS": "1"},
    )
    err = p.stderr.decode()
    assert p.returncode == 1, err[-2000:]
    assert "dump line 1 is longer than" in err and "max_import_line_bytes" in err, err[-2000:]
    assert "Traceback" not in err
    assert not (tmp_path / "m.db").exists()


@pytest.mark.parametrize(("cap", "words"), [
    ({"max_records": 3}, "max_import_records"),
    ({"max_bytes": 2_000}, "max_import_unzipped_bytes"),
    ({"max_line_bytes": 300}, "max_import_line_bytes"),
])
async def test_each_cap_refuses_while_streaming(tmp_path: Path, cap: dict[str, int],
                                               words: str) -> None:
    from memorywire.portability.dump_rules import DumpLimits

    limits = DumpLimits(**cap)
    path = tmp_path / "d.jsonl"
    path.write_bytes(dump(*(row(f"m{i}", content="x" * 50) for i in range(10))))
    store = SqliteStore(tmp_path / "m.db", embedder=HashingEmbedder())
    try:
        with pytest.raises(PayloadTooLarge, match=words):
            await import_dump(store, str(path), limits=limits)
        await import_dump(store, str(path))  # within the default caps it imports
    finally:
        await store.aclose()


def test_deep_nesting_in_a_dump_line_is_refused_not_a_crash(tmp_path: Path) -> None:
    header, _, rest = dump(row("m1", metadata={"d": 0})).partition(b"\n")
    line, _, footer = rest.partition(b"\n")
    deep = line.replace(b'{"d":0}', b'{"d":' + b"[" * 5_000 + b"]" * 5_000 + b"}")
    path = tmp_path / "d.jsonl"  # the digest no longer matches: depth is refused before it
    path.write_bytes(b"\n".join([header, deep, footer]))

    async def go() -> None:
        store = SqliteStore(tmp_path / "m.db", embedder=HashingEmbedder())
        try:
            with pytest.raises(Exception) as caught:
                await import_dump(store, str(path))
            assert type(caught.value).__name__ == "InvalidRequest", caught.value
            assert "nests" in str(caught.value)
        finally:
            await store.aclose()

    anyio.run(go)
