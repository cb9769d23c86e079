"""``LettaStore``: memorywire memories kept as passages of a real Letta server's archives.

Letta (the last server release, 0.16.8) offers archives of embedded passages over REST, which
work without any LLM. Each memorywire agent gets one archive; each memory is a passage whose
``metadata.memorywire`` holds the whole record losslessly (ids, scope, type, content,
timestamps, soft-delete/archive/demote marks), whose text is what gets embedded, and whose
vector Letta computes through the archive's embedding endpoint.

Why the adapter does more than forward calls:

* Letta assigns passage ids and cannot update a passage, so a change writes a new revision
  of the record (``rev`` + 1) and then deletes the old passage. A crash in between leaves
  both; readers always take the highest revision, so nothing half-done is ever visible.
* Letta's search returns score 0.0 and applies tag filters after its LIMIT (capped at 100),
  which cannot give an exact scoped top-k. So reads enumerate the archive (pages of 100 in
  passage ``created_at`` order, which we set strictly increasing) and rank here with the
  vectors Letta stored and the query embedded by ``embedder`` — which must be the model the
  archive's endpoint serves (the default MiniLM, by default). Cost is O(archive / 100)
  requests per operation: fine for agent-sized memories, not for millions.
* Scope (``agent_id`` by archive, ``user_id`` by record), filters, expiry and merge rules are
  memorywire's own (``memorywire.core``), so they match every other store.

Not offered: recall tracking (each recall would rewrite every hit), graph links, and
atomicity across several memories in one call (each memory's change is atomic on its own).
"""

from __future__ import annotations

import builtins
import hashlib
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, fields, replace
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

import anyio
import httpx
import numpy as np

from memorywire.core.clock import DAY_MS, Clock, SystemClock
from memorywire.core.content import embed_text
from memorywire.core.fields import matches_where
from memorywire.core.filters import matches_filter
from memorywire.core.records import Row
from memorywire.core.scoring import candidate_pool, exact_top, hybrid_rank
from memorywire.core.textsearch import query_terms
from memorywire.embed.base import Embedder
from memorywire.errors import (
    BackendUnavailable,
    CapabilityMissing,
    InvalidRequest,
    MemorywireError,
    StoreCorrupt,
)
from memorywire.recall.plan import recall_in_time
from memorywire.recall.settings import DEFAULT_LEXICAL_FLOOR, DEFAULT_RELEVANCE_FLOOR
from memorywire.store._common import resolve_embedder
from memorywire.store._revision import RevisionRow, revision_fields
from memorywire.store.base import Capability, Health
from memorywire.store.graph import refuse_hops
from memorywire.store.portable import ALL_FIELDS
from memorywire.store.rowstore import RowDelegate, RowOps, live_in_scope, row_hit
from memorywire.store.url_settings import Setting, split_query, typed_settings
from memorywire.wire.models import (
    Fusion,
    RecallHit,
    RecallRequest,
    RecallResponse,
)

__all__ = ["LettaStore"]

#: The URL's query keys (``prefix`` sets the constructor's prefix); any other is refused.
_URL_KEYS = ("embedding_endpoint", "embedding_model", "embedding_dim", "prefix")
_DIM = {"embedding_dim": Setting("embedding_dim", "int")}

_KEY = "memorywire"
_PAGE = 100  # Letta's hard cap on one search
_CAPABILITIES = frozenset({
    Capability.SEMANTIC, Capability.EPISODIC, Capability.PROCEDURAL, Capability.EMOTIONAL,
    Capability.VECTOR, Capability.FTS, Capability.ERASE, Capability.TIME,
})


@dataclass(frozen=True)
class _Row(RevisionRow):
    """A revision plus the passage that holds it and its embedding."""

    passage_id: str = ""
    vector: np.ndarray[Any, np.dtype[np.float32]] = field(
        default_factory=lambda: np.zeros(0, dtype=np.float32), compare=False)


def _row_from_passage(p: dict[str, Any], dim: int) -> _Row:
    try:
        d = p["metadata"][_KEY]
        emb = p.get("embedding") or []
        vec = np.asarray(emb[:dim], dtype=np.float32)
        norm = float(np.linalg.norm(vec))
        return _Row(passage_id=str(p["id"]), vector=vec / norm if norm > 0 else vec,
                    **revision_fields(d))
    except (KeyError, TypeError, ValueError) as exc:
        raise StoreCorrupt(
            f"Letta passage {p.get('id')!r} does not hold a memorywire record") from exc


class LettaStore(RowDelegate[_Row]):
    def __init__(
        self,
        base_url: str,
        *,
        embedding_endpoint: str,
        embedding_model: str = "all-MiniLM-L6-v2",
        embedding_dim: int = 384,
        archive_prefix: str = "memorywire",
        embedder: Embedder | None = None,
        clock: Clock | None = None,
        name: str = "letta",
        timeout: float = 60.0,
        client: httpx.AsyncClient | None = None,
        relevance_floor: float = DEFAULT_RELEVANCE_FLOOR,
        lexical_floor: float = DEFAULT_LEXICAL_FLOOR,
    ) -> None:
        """``embedder`` must produce the vectors ``embedding_endpoint`` serves (queries are
        embedded here, memories by Letta through that endpoint)."""
        self._embedding_config = {
            "embedding_endpoint_type": "openai", "embedding_endpoint": embedding_endpoint,
            "embedding_model": embedding_model, "embedding_dim": embedding_dim,
            "embedding_chunk_size": 100_000,
        }
        self._dim = embedding_dim
        self._prefix = archive_prefix
        self._embedder = embedder
        self._clock: Clock = clock or SystemClock()
        self._name = name
        self._floor = relevance_floor
        self._lexical_floor = lexical_floor
        self._owns_client = client is None
        self._http = client or httpx.AsyncClient(base_url=base_url.rstrip("/"), timeout=timeout)
        self._archives: dict[str, str] = {}
        self._archive_lock = anyio.Lock()
        self._last_stamp = 0
        self._ops: RowOps[_Row] = RowOps(_Backend(self), name=name, clock=self._clock,
                                         recall_tracking=False)

    @classmethod
    def from_url(cls, url: str, **kw: Any) -> LettaStore:
        """``letta://host:port?embedding_endpoint=http://...&prefix=...`` (http to the server)."""
        parts = urlsplit(url)
        if not parts.hostname or parts.port is None:
            raise InvalidRequest(f"Letta URL {url!r} needs host:port (letta://127.0.0.1:8283)")
        q = split_query("letta", parts.query, _URL_KEYS)
        if "embedding_endpoint" not in q and "embedding_endpoint" not in kw:
            raise InvalidRequest("Letta URL needs ?embedding_endpoint=http://host:port/v1")
        if "embedding_dim" in q:
            q["embedding_dim"] = typed_settings("letta", q, _DIM)["embedding_dim"]
        for key in _URL_KEYS:
            if key in q:
                kw.setdefault("archive_prefix" if key == "prefix" else key, q[key])
        return cls(f"http://{parts.hostname}:{parts.port}", **kw)

    @property
    def name(self) -> str:
        return self._name

    @property
    def capabilities(self) -> frozenset[Capability]:
        return _CAPABILITIES

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = resolve_embedder(None)
        return self._embedder

    # --- REST, and the one place backend errors become memorywire errors ---------------------

    async def _call(self, method: str, path: str, json: Any = None,
                    params: dict[str, str] | None = None, missing_ok: bool = False) -> Any:
        try:
            resp = await self._http.request(method, path, json=json, params=params)
        except httpx.HTTPError as exc:
            raise BackendUnavailable(f"Letta unreachable: {type(exc).__name__}: {exc}") from exc
        if resp.status_code == 404 and missing_ok:
            return None
        if resp.status_code >= 400:
            kind = StoreCorrupt if resp.status_code in (404, 409, 422) else BackendUnavailable
            raise kind(f"Letta {method} {path} answered {resp.status_code}: {resp.text[:300]}")
        if resp.status_code == 204 or not resp.content:
            return None
        try:
            return resp.json()
        except ValueError as exc:
            raise StoreCorrupt(f"Letta {method} {path} answered non-JSON") from exc

    def _archive_name(self, agent_id: str) -> str:
        return f"{self._prefix}-{hashlib.sha256(agent_id.encode('utf-8')).hexdigest()[:40]}"

    async def _archive(self, agent_id: str, create: bool) -> str | None:
        if agent_id in self._archives:
            return self._archives[agent_id]
        async with self._archive_lock:
            if agent_id in self._archives:
                return self._archives[agent_id]
            name = self._archive_name(agent_id)
            found = await self._call("GET", "/v1/archives/", params={"name": name})
            if not isinstance(found, list):
                raise StoreCorrupt("Letta listed archives as something other than a list")
            # Oldest first, so every process settles on the same one after a creation race.
            found = sorted((a for a in found if a.get("name") == name),
                           key=lambda a: (str(a.get("created_at")), str(a.get("id"))))
            if found:
                archive_id = str(found[0]["id"])
            elif not create:
                return None
            else:
                made = await self._call("POST", "/v1/archives/", json={
                    "name": name, "description": f"memorywire agent {agent_id}",
                    "embedding_config": self._embedding_config})
                archive_id = str(made["id"])
            self._archives[agent_id] = archive_id
            return archive_id

    def _stamp(self) -> str:
        """Strictly increasing passage ``created_at``, so paging by time always advances."""
        ms = max(int(time.time() * 1000), self._last_stamp + 1)
        self._last_stamp = ms
        return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds")

    async def _write(self, archive_id: str, row: _Row) -> _Row:
        made = await self._call("POST", f"/v1/archives/{archive_id}/passages", json={
            "text": embed_text(row.type, row.stored) or " ",
            "metadata": {_KEY: row.doc()},
            "tags": ["memorywire", f"mwid:{row.id}"],
            "created_at": self._stamp(),
        })
        return _row_from_passage(made, self._dim)

    async def _drop(self, archive_id: str, passage_ids: Sequence[str]) -> None:
        for pid in passage_ids:
            await self._call("DELETE", f"/v1/archives/{archive_id}/passages/{pid}",
                             missing_ok=True)

    async def _rewrite(self, archive_id: str, old: _Row, new: _Row) -> _Row:
        """``new`` as the next revision of ``old``, then ``old``'s passage dropped."""
        stored = await self._write(archive_id, replace(new, rev=old.rev + 1))
        await self._drop(archive_id, [old.passage_id])
        return stored

    async def _scan(self, agent_id: str) -> tuple[str | None, dict[str, _Row]]:
        """Every memory of the agent at its newest revision; stale revisions are cleaned up."""
        archive_id = await self._archive(agent_id, create=False)
        if archive_id is None:
            return None, {}
        seen: set[str] = set()
        newest: dict[str, _Row] = {}
        stale: list[str] = []
        start: str | None = None
        while True:
            body: dict[str, Any] = {"archive_id": archive_id, "limit": _PAGE}
            if start is not None:
                body["start_date"] = start
            page = await self._call("POST", "/v1/passages/search", json=body)
            if not isinstance(page, list):
                raise StoreCorrupt("Letta answered a passage search with a non-list")
            fresh = [r["passage"] for r in page if r["passage"]["id"] not in seen]
            for p in fresh:
                seen.add(p["id"])
                row = _row_from_passage(p, self._dim)
                old = newest.get(row.id)
                if old is None or row.rev > old.rev:
                    newest[row.id] = row
                    if old is not None:
                        stale.append(old.passage_id)
                else:
                    stale.append(row.passage_id)
            if len(page) < _PAGE:
                break
            if not fresh:
                raise StoreCorrupt("over 100 Letta passages share one created_at; cannot page")
            start = max(str(p["created_at"]) for p in (r["passage"] for r in page))
        if stale:
            await self._drop(archive_id, stale)
        return archive_id, newest

    async def _live(self, agent_id: str, user_id: str | None) -> tuple[str | None, list[_Row]]:
        now = self._clock.now_ms()
        archive_id, rows = await self._scan(agent_id)
        return archive_id, live_in_scope(rows, user_id, now)

    # --- the operations come from RowDelegate; export_rows goes one agent at a time (Letta
    # --- cannot enumerate agents: capability_missing) ------------------------------------

    @property
    def kept_fields(self) -> frozenset[str]:
        """The revision document keeps every field but the recall counters (no tracking)."""
        return frozenset(ALL_FIELDS) - {"last_recalled_at", "recall_count"}

    # --- reads -------------------------------------------------------------------------------

    async def recall(self, req: RecallRequest) -> RecallResponse:
        refuse_hops(self._name, req)
        return await recall_in_time(req, self._search, self._clock.now_ms())

    async def _search(self, req: RecallRequest) -> RecallResponse:
        started = time.perf_counter()
        now = self._clock.now_ms()
        _, live = await self._live(req.agent_id, req.user_id)
        rows = [r for r in live
                if (req.types is None or r.type in req.types)
                and matches_filter(r.metadata, req.filter)
                and matches_where(r.type, r.metadata, req.where)
                and (req.fresher_than_days is None
                     or r.created_at >= now - req.fresher_than_days * DAY_MS)]
        hits: list[RecallHit] = []
        if rows:
            if any(r.vector.shape != (self._dim,) for r in rows):
                raise StoreCorrupt("a Letta passage came back without its embedding")
            qvec = np.asarray(self.embedder.embed([req.query])[0], dtype=np.float32)
            if qvec.shape != (self._dim,):
                raise InvalidRequest(f"the embedder's dimension {qvec.shape[0]} is not the "
                                     f"archive's {self._dim}")
            sims = (np.stack([r.vector for r in rows]) @ qvec).astype(np.float32)
            pool = candidate_pool(req.k)
            cosines = {r.id: float(s) for r, s in zip(rows, sims, strict=True)}
            vector_ranked = [rows[i].id for i in exact_top(sims, pool)]
            terms = set(query_terms(req.query))
            overlap = [(len(terms & set(query_terms(embed_text(r.type, r.stored),
                                                    max_terms=10_000))), r) for r in rows]
            lexical = sorted((o for o in overlap if o[0] > 0),
                             key=lambda o: (-o[0], o[1].created_at, o[1].id))
            ranked = hybrid_rank(cosines, vector_ranked, [r.id for _, r in lexical[:pool]],
                                 k=req.k, floor=self._floor, lexical_floor=self._lexical_floor,
                                 demoted={r.id for r in rows if r.demoted},
                                 min_relevance=req.min_relevance)
            by_id = {r.id: r for r in rows}
            hits.extend(row_hit(by_id[s.id], s.score, s.relevance, self._name) for s in ranked)
        return RecallResponse(results=hits, fusion_used=Fusion.RRF, stores_queried=[self._name],
                              latency_ms=int((time.perf_counter() - started) * 1000))

    async def health(self) -> Health:
        try:
            body = await self._call("GET", "/v1/health/")
        except MemorywireError as exc:
            return Health("down", {"error": str(exc)})
        return Health("ok", {"letta": body if isinstance(body, dict) else str(body)})

    async def aclose(self) -> None:
        if self._owns_client:
            await self._http.aclose()


class _Backend:
    """Letta archives as a :class:`RowBackend`: one archive per agent, one passage per
    revision."""

    def __init__(self, store: LettaStore) -> None:
        self._s = store

    async def scan(self, agent_id: str) -> dict[str, _Row]:
        return (await self._s._scan(agent_id))[1]

    async def fetch(self, agent_id: str, ids: Sequence[str]) -> dict[str, _Row]:
        rows = await self.scan(agent_id)  # the vendor cannot select by our id
        return {i: rows[i] for i in ids if i in rows}

    async def scan_all(self) -> builtins.list[_Row]:
        raise CapabilityMissing("the Letta store lists one agent at a time")

    async def insert(self, rows: Sequence[Row]) -> None:
        for row in rows:
            archive_id = await self._s._archive(row.agent_id, create=True)
            assert archive_id is not None
            await self._s._write(archive_id, _Row(**{f.name: getattr(row, f.name)
                                                     for f in fields(Row)}))

    async def replace(self, changes: Sequence[tuple[_Row, _Row, bool]]) -> builtins.list[_Row]:
        out = []
        for old, new, _ in changes:  # Letta embeds every new passage anyway
            archive_id = await self._s._archive(old.agent_id, create=False)
            assert archive_id is not None
            out.append(await self._s._rewrite(archive_id, old, new))
        return out

    async def erase(self, rows: Sequence[_Row]) -> None:
        for row in rows:
            archive_id = await self._s._archive(row.agent_id, create=False)
            if archive_id is not None:
                await self._s._drop(archive_id, [row.passage_id])
