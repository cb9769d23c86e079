"""A LangGraph ``BaseStore`` kept in memorywire.

A store serves one memorywire agent. A LangGraph namespace lives in each memory's metadata
(``lg_ns`` whole, ``lg_ns0``, ``lg_ns1``... per label, so a prefix search is a metadata
equality filter the server applies), and ``user_segment`` names the namespace label that is
the memorywire user: with ``user_segment=1``, ``("memories", "alice")`` is written with
``user_id="alice"``, so erase, governance and tenancy see alice's memories as hers.

The item's value is kept whole in metadata; ``content`` is the text recall embeds (the
string leaves of the value, or the fields ``index`` names). LangGraph's value filters and
namespace match conditions are richer than memorywire's equality filters, so they are
evaluated here (:mod:`.filters`). ``ttl`` (minutes) becomes ``expires_at``; refreshing a TTL
on read cannot be expressed through the public API, so ``refresh_ttl=True`` on an item that
has a TTL is refused rather than ignored. A write that governance stages raises
:class:`memorywire.errors.PendingApproval`.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterable, Iterator, Mapping
from datetime import UTC, datetime
from typing import Any, Literal

from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
)

from memorywire.client import SyncMemory
from memorywire.integrations._common import SOURCE_AGENT, require_committed
from memorywire.integrations.langgraph.filters import matches_namespace, matches_value
from memorywire.wire.models import MemoryRecord, MemoryType, RecallHit

__all__ = ["MemorywireStore"]

_PAGE = 500


def _check_namespace(namespace: tuple[str, ...], *, allow_empty: bool = False) -> None:
    if not namespace and not allow_empty:
        raise InvalidNamespaceError("namespace cannot be empty")
    for label in namespace:
        if not isinstance(label, str) or not label or "." in label or "\x00" in label:
            raise InvalidNamespaceError(
                f"invalid namespace label {label!r} in {namespace}: labels are non-empty "
                "strings without '.' or NUL"
            )
    if namespace and namespace[0] == "langgraph":
        raise InvalidNamespaceError(f"root label 'langgraph' is reserved: {namespace}")


def _leaves(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _leaves(v)
    elif isinstance(value, list):
        for v in value:
            yield from _leaves(v)


def _field(value: Mapping[str, Any], path: str) -> Any:
    cur: Any = value
    for part in path.split("."):
        cur = cur.get(part) if isinstance(cur, Mapping) else None
    return cur


def _when(ms: int | None) -> datetime:
    return datetime.fromtimestamp((ms or 0) / 1000, tz=UTC)


class MemorywireStore(BaseStore):
    """LangGraph long-term memory for ``agent_id``, over the local store or a server."""

    supports_ttl = True

    def __init__(
        self,
        client: SyncMemory[Any],
        *,
        agent_id: str,
        user_segment: int | None = None,
        memory_type: MemoryType | str = MemoryType.SEMANTIC,
        index: list[str] | None = None,
        source: str = SOURCE_AGENT,
        ttl_config: TTLConfig | None = None,
    ) -> None:
        self.client = client
        self.agent_id = agent_id
        self.user_segment = user_segment
        self.memory_type = MemoryType(memory_type)
        self.index = index
        self.source = source
        # LangGraph refreshes TTLs on read unless told otherwise; memorywire cannot.
        self.ttl_config = ttl_config or TTLConfig(refresh_on_read=False)

    # -- scope ------------------------------------------------------------------------------

    def _user(self, namespace: tuple[str, ...]) -> str | None:
        seg = self.user_segment
        return namespace[seg] if seg is not None and len(namespace) > seg else None

    def _scope(self, namespace: tuple[str, ...]) -> dict[str, Any]:
        user = self._user(namespace)
        return {"agent_id": self.agent_id, **({"user_id": user} if user else {})}

    def _records(
        self, namespace: tuple[str, ...], flt: dict[str, Any]
    ) -> Iterator[MemoryRecord]:
        cursor: str | None = None
        while True:
            page = self.client.list(
                self._scope(namespace), limit=_PAGE, filter=flt or None, cursor=cursor,
            )
            for rec in page.memories:
                if rec.metadata and "lg_ns" in rec.metadata:
                    yield rec
            cursor = page.next_cursor
            if not cursor:
                return

    def _find(self, namespace: tuple[str, ...], key: str) -> MemoryRecord | None:
        flt = {"lg_ns": list(namespace), "lg_key": key}
        return next(self._records(namespace, flt), None)

    def _item(self, rec: MemoryRecord | RecallHit, score: float | None = None) -> Item:
        meta = rec.metadata or {}
        created = meta.get("lg_created_at", rec.created_at)
        updated = getattr(rec, "updated_at", None) or meta.get("lg_updated_at", created)
        common = {
            "value": meta["lg_value"], "key": meta["lg_key"], "namespace": tuple(meta["lg_ns"]),
            "created_at": _when(created), "updated_at": _when(updated),
        }
        if score is None:
            return Item(**common)
        return SearchItem(**common, score=score)

    # -- operations -------------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        out: list[Result] = []
        for op in ops:
            if isinstance(op, GetOp):
                out.append(self._get(op))
            elif isinstance(op, PutOp):
                self._put(op)
                out.append(None)
            elif isinstance(op, SearchOp):
                out.append(self._search(op))
            elif isinstance(op, ListNamespacesOp):
                out.append(self._list_namespaces(op))
            else:
                raise ValueError(f"unknown store operation {type(op).__name__}")
        return out

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        # SyncMemory blocks; a worker thread keeps the graph's event loop free meanwhile.
        return await asyncio.to_thread(self.batch, list(ops))

    def _refuse_refresh(self, refresh: bool, rec: MemoryRecord | RecallHit) -> None:
        if refresh and getattr(rec, "expires_at", None) is not None:
            raise NotImplementedError(
                "refresh_ttl=True: memorywire cannot extend an item's TTL on read; pass "
                "refresh_ttl=False (the default of this store) or put the item again"
            )

    def _get(self, op: GetOp) -> Item | None:
        _check_namespace(op.namespace)
        rec = self._find(op.namespace, op.key)
        if rec is None:
            return None
        self._refuse_refresh(op.refresh_ttl, rec)
        return self._item(rec)

    def _text(self, value: Mapping[str, Any], index: Literal[False] | list[str] | None) -> str:
        fields = index if isinstance(index, list) else self.index
        if fields:
            parts = [_field(value, f) for f in fields]
            text = " ".join(p if isinstance(p, str) else json.dumps(p) for p in parts if p)
        else:
            text = " ".join(s for s in _leaves(value) if s.strip())
        return text or json.dumps(dict(value), sort_keys=True)

    def _put(self, op: PutOp) -> None:
        _check_namespace(op.namespace)
        old = self._find(op.namespace, op.key)
        scope = self._scope(op.namespace)
        if op.value is None:
            if old is not None:
                resp = self.client.forget(**scope, ids=[old.id], reason="langgraph delete")
                require_committed(resp, f"deleting {op.namespace}/{op.key}")
            return
        now = int(time.time() * 1000)
        created = (old.metadata or {}).get("lg_created_at", old.created_at) if old else now
        meta = {
            "lg_ns": list(op.namespace), "lg_key": op.key, "lg_value": op.value,
            "lg_created_at": created, "lg_updated_at": now,
            **{f"lg_ns{i}": label for i, label in enumerate(op.namespace)},
        }
        content = self._text(op.value, op.index)
        if old is not None and op.ttl is None and old.expires_at is None:
            upd = self.client.update(
                **scope, id=old.id, content=content, metadata=meta, reason="langgraph put"
            )
            require_committed(upd, f"updating {op.namespace}/{op.key}")
            return
        doc: dict[str, Any] = {
            **scope, "type": self.memory_type.value, "content": content, "metadata": meta,
            "source": self.source,
        }
        if op.ttl is not None:
            doc["expires_at"] = now + max(1, int(op.ttl * 60_000))
        stored = self.client.remember(doc)
        require_committed(stored, f"storing {op.namespace}/{op.key}")
        if old is not None:
            # the new version is stored first, so a failure here leaves a duplicate, not a loss
            gone = self.client.forget(**scope, ids=[old.id], reason="langgraph put (new ttl)")
            require_committed(gone, f"replacing {op.namespace}/{op.key}")

    def _search(self, op: SearchOp) -> list[SearchItem]:
        _check_namespace(op.namespace_prefix, allow_empty=True)
        prefix = {f"lg_ns{i}": label for i, label in enumerate(op.namespace_prefix)}
        want = op.offset + op.limit
        found: list[SearchItem] = []
        if op.query:
            k = min(1000, max(want * 4, want + 20))
            hits = self.client.recall(
                {**self._scope(op.namespace_prefix), "query": op.query}, k=k,
                types=[self.memory_type.value], filter=prefix or None,
            ).results
            for hit in hits:
                meta = hit.metadata or {}
                if "lg_ns" in meta and matches_value(meta["lg_value"], op.filter):
                    item = self._item(hit, score=hit.score)
                    assert isinstance(item, SearchItem)
                    found.append(item)
            return found[op.offset : want]
        for rec in self._records(op.namespace_prefix, prefix):
            if matches_value((rec.metadata or {})["lg_value"], op.filter):
                self._refuse_refresh(bool(op.refresh_ttl), rec)
                item = self._item(rec)
                found.append(
                    SearchItem(
                        namespace=item.namespace, key=item.key, value=item.value,
                        created_at=item.created_at, updated_at=item.updated_at,
                    )
                )
                if len(found) >= want:
                    break
        return found[op.offset : want]

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        seen: set[tuple[str, ...]] = set()
        for rec in self._records((), {}):
            ns = tuple((rec.metadata or {})["lg_ns"])
            if all(matches_namespace(ns, c.match_type, c.path) for c in op.match_conditions or ()):
                seen.add(ns[: op.max_depth] if op.max_depth is not None else ns)
        return sorted(seen)[op.offset : op.offset + op.limit]
