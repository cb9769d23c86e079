"""Reading a Letta agent's archival memory as Letta itself wrote it (not memorywire's adapter).

The source is a Letta server's base URL and ``--agent`` the Letta agent id; passages are read
over Letta's REST API (``GET /v1/agents/{id}/archival-memory``, oldest first, a page of 100 at
a time after the last id). An archival passage has an id, ``text``, ``created_at``/
``updated_at``, ``tags``, ``metadata``, the ``archive_id`` it lives in and its embedding. Each
becomes a ``semantic`` row of agent ``--agent`` with the passage id as its id; tags and archive
go under ``metadata.letta``. Only archival memory is read: an agent's core-memory blocks and
its message history are context, not stored memories, and are not imported.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import httpx

from memorywire.core.records import Row
from memorywire.errors import BackendUnavailable, InvalidRequest
from memorywire.portability.plan import source_note
from memorywire.portability.sources import ForeignData
from memorywire.wire.models import MemoryType

__all__ = ["LettaNativeSource"]

KEPT = frozenset({"id", "agent_id", "type", "stored", "metadata", "created_at", "updated_at"})
_PAGE = 100
#: The metadata key memorywire's own Letta store writes; such passages are moved by migrate.
_OURS = "memorywire"


def _ms(value: Any) -> int | None:
    if value in (None, ""):
        return None
    stamp = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=UTC)
    return int(stamp.timestamp() * 1000)


class LettaNativeSource:
    def __init__(self, base_url: str, *, agent: str | None,
                 client: httpx.AsyncClient | None = None, page: int = _PAGE) -> None:
        if agent is None:
            raise InvalidRequest("--from-format letta needs --agent LETTA_AGENT_ID "
                                 "(the agent whose archival memory to import)")
        self._url = base_url.rstrip("/")
        self._agent = agent
        self._client = client
        self._page = page

    @property
    def name(self) -> str:
        return f"letta:{self._url}/v1/agents/{self._agent}"

    @property
    def kept_fields(self) -> frozenset[str]:
        return KEPT

    async def _get(self, http: httpx.AsyncClient, path: str,
                   params: dict[str, Any] | None = None) -> Any:
        try:
            resp = await http.get(path, params=params)
        except httpx.HTTPError as exc:
            raise BackendUnavailable(f"Letta at {self._url}: {exc}") from exc
        if resp.status_code == 404:
            raise InvalidRequest(f"Letta at {self._url} has no agent {self._agent!r}")
        if resp.status_code >= 400:
            raise BackendUnavailable(f"Letta at {self._url} answered {resp.status_code} "
                                     f"for {path}: {resp.text[:200]}")
        return resp.json()

    async def read(self) -> ForeignData:
        http = self._client or httpx.AsyncClient(base_url=self._url, timeout=60.0)
        try:
            await self._get(http, f"/v1/agents/{self._agent}")
            passages: list[dict[str, Any]] = []
            after: str | None = None
            while True:
                params: dict[str, Any] = {"limit": self._page, "ascending": "true"}
                if after is not None:
                    params["after"] = after
                page = await self._get(http, f"/v1/agents/{self._agent}/archival-memory",
                                       params)
                passages += page
                if len(page) < self._page:
                    break
                after = str(page[-1]["id"])
        finally:
            if self._client is None:
                await http.aclose()
        return self._convert(passages)

    def _convert(self, passages: list[dict[str, Any]]) -> ForeignData:
        data = ForeignData()
        tagged = 0
        for p in passages:
            meta = dict(p.get("metadata") or {})
            if _OURS in meta:
                raise InvalidRequest(
                    f"Letta passage {p.get('id')} was written by memorywire's Letta store; "
                    "move it with: memorywire migrate --from letta://...")
            extra = {"archive_id": p.get("archive_id")}
            if p.get("tags"):
                extra["tags"] = list(p["tags"])
                tagged += 1
            meta["letta"] = extra
            created = _ms(p.get("created_at")) or 0
            updated = _ms(p.get("updated_at"))
            data.rows.append(Row(
                id=str(p["id"]), agent_id=self._agent, user_id=None, type=MemoryType.SEMANTIC,
                stored=str(p.get("text") or ""), metadata=meta, confidence=1.0, source=None,
                created_at=created,
                updated_at=None if updated is None or updated == created else updated))
        data.notes = [
            source_note("letta_fields", len(passages), "transformed",
                        "archive_id and tags kept under metadata.letta"),
            source_note("tags", tagged, "transformed", "passage tags in metadata.letta.tags"),
        ]
        return data
