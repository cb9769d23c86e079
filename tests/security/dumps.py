"""Dumps as an attacker writes them: any record, with correct digests (they are unkeyed), so
only the importer's own rules stand between the bytes and the store."""

from __future__ import annotations

import io
from typing import Any

import httpx

from memorywire.core.records import Row
from memorywire.portability.dump import DumpWriter
from memorywire.wire.models import MemoryType

NDJSON = {"content-type": "application/x-ndjson"}


def row(id: Any = "m1", agent_id: str = "a1", content: Any = "a fact", **kw: Any) -> Row:
    """A stored row with any values at all (a dataclass checks nothing)."""
    fields: dict[str, Any] = {"user_id": None, "metadata": {}, "confidence": 0.9,
                              "source": None, "created_at": 1_700_000_000_000}
    fields.update(kw)
    return Row(id=id, agent_id=agent_id, type=MemoryType.SEMANTIC, stored=content, **fields)


def dump(*rows: Row, pending: tuple[dict[str, Any], ...] = ()) -> bytes:
    out = io.BytesIO()
    writer = DumpWriter(out, {"source": "attacker://", "store": "sqlite", "kept_fields": [],
                              "embedder": None, "vectors": False, "created_at": 0},
                        gzip_it=False)
    for r in rows:
        writer.write(r)
    for item in pending:
        writer.write_pending(item)
    writer.close()
    return out.getvalue()


async def post_import(http: httpx.AsyncClient, body: bytes, token: str, query: str = "",
                      **headers: str) -> httpx.Response:
    return await http.post(f"/v0/admin/import{query}", content=body,
                           headers={"authorization": f"Bearer {token}", **NDJSON, **headers})
