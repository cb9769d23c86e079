"""``benchmarks/facts.py``'s store-floor row on the in-memory store or PostgreSQL (pgserver).

    python benchmarks/facts_stores.py memory [KEY=VALUE ...]
    python benchmarks/facts_stores.py postgres [KEY=VALUE ...]

The same corpus, questions and scoring as ``facts.py`` (which runs SQLite), with the store's
defaults (and any URL settings given); a fresh store per phrasing. Prints one JSON object:
per split, ``r_at_1``, ``r_at_5``, ``answerable_empty`` and ``no_match_empty``.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio
import facts  # a sibling script: run from benchmarks/ as the other scripts are

from memorywire.client import Memory
from memorywire.embed.base import Embedder
from memorywire.testing.postgres import PgHandle, start_pgserver

KEYS = ("r_at_1", "r_at_5", "answerable_empty", "no_match_empty")


def main(kind: str, settings: list[str]) -> dict[str, Any]:
    if kind not in ("memory", "postgres"):
        raise SystemExit(f"store {kind!r}: memory or postgres")
    parent = Path(tempfile.mkdtemp(prefix="memorywire-pg-"))
    parent.chmod(0o755)
    handle: PgHandle | None = start_pgserver(parent / "data") if kind == "postgres" else None

    def make(url: str, embedder: Embedder) -> Memory:
        query = url.split("?", 1)[1] if "?" in url else ""
        base = "memory://" if handle is None else handle.create_database("facts")
        return Memory(base + (("&" if "?" in base else "?") + query if query else ""),
                      embedder=embedder)

    vars(facts)["Memory"] = make  # facts builds its store from a SQLite URL
    try:
        result = anyio.run(facts.run, settings)
    finally:
        if handle is not None:
            handle.close()
        shutil.rmtree(parent, ignore_errors=True)
    row = result["rows"]["store-floor"]
    return {"store": kind, "settings": settings,
            **{split: {k: row[split][k] for k in KEYS} for split in facts.SPLITS}}


if __name__ == "__main__":
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    print(json.dumps(main(sys.argv[1], sys.argv[2:])))
