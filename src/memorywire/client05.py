"""The first implementation's SDK shape, on today's :class:`memorywire.Memory`.

memorywire 0.5 documented ``Memory(agent_id="customer-bot", stores=["sqlite-vec://./mem.db",
...])`` and calls such as ``await mem.remember("text", type=MemoryType.SEMANTIC,
user_id=...)``, ``hits = await mem.recall("query", k=5, hops=1)`` (then ``for h in hits:
h.score, h.type, h.content``), ``await mem.forget(filter={"user_id": "bob"})``, ``await
mem.health()`` and ``await mem.close()``. :class:`~memorywire.client.Memory` accepts that
shape beside its own; the pieces that differ live here:

* ``stores``: URLs and store objects, opened as 0.5 did; several become a router (its first
  store the primary), as ``stores`` in a configuration file do. The memory closes them.
* a memory bound to an ``agent_id`` fills it into every call, and a ``remember`` without
  ``type`` is semantic (0.5's default); ``content`` and ``query`` may come first, unnamed.
* ``recall`` of a bound memory answers :class:`RecallHits`: the wire answer (``.results``)
  that also iterates, indexes and counts its hits, as 0.5's list did.
* 0.5's ``forget`` filter matched the columns ``agent_id``, ``user_id``, ``type``,
  ``source`` and ``confidence`` as well as metadata; those keys select the memories here
  (listed, then forgotten by id), the rest stays a metadata filter.
* ``health()`` answers 0.5's dictionary: ``status`` and one row per store with ``backend``,
  ``status`` and ``memory_count`` (live memories: a scan, as 0.5 counted).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from memorywire.errors import InvalidRequest
from memorywire.store.base import ListQuery, MemoryStore, list_all
from memorywire.wire.models import MemoryRecord, RecallHit, RecallResponse

__all__ = ["COLUMNS", "RecallHits", "forget_doc", "health_doc", "open_stores"]

#: The filter keys 0.5's ``forget`` matched against record fields, not metadata.
COLUMNS = ("agent_id", "user_id", "type", "source", "confidence")


class RecallHits(RecallResponse):
    """A recall answer that is also the sequence of its hits (0.5 returned the list)."""

    def __iter__(self) -> Iterator[RecallHit]:  # type: ignore[override]
        return iter(self.results)

    def __len__(self) -> int:
        return len(self.results)

    def __getitem__(self, index: int) -> RecallHit:
        return self.results[index]

    @classmethod
    def of(cls, resp: RecallResponse) -> RecallHits:
        return cls.model_construct(**{k: getattr(resp, k) for k in RecallResponse.model_fields})


def open_stores(stores: Sequence[str | MemoryStore], store_kw: Mapping[str, Any],
                close: Callable[[MemoryStore], None]) -> MemoryStore:
    """One store, or a router over several (named apart when two share a name); a store
    opened before a later one fails is handed to ``close``."""
    from memorywire.store.registry import open_store

    if isinstance(stores, str) or not stores:
        raise InvalidRequest("Memory: stores: a non-empty list of store URLs or stores")
    for n, entry in enumerate(stores):
        if not isinstance(entry, str | MemoryStore):
            raise InvalidRequest(f"Memory: stores[{n}]: a store URL or a store, not "
                                 f"{type(entry).__name__}")
    opened: list[MemoryStore] = []
    try:
        for n, entry in enumerate(stores):
            if isinstance(entry, str):
                kw = dict(store_kw)
                if len(stores) > 1:
                    kw.setdefault("name", f"{entry.split(':', 1)[0]}-{n + 1}")
                opened.append(open_store(entry, **kw))
            else:
                opened.append(entry)
        if len(opened) == 1:
            return opened[0]
        from memorywire.router import MemoryRouter

        return MemoryRouter(opened)
    except BaseException:
        for store in opened:
            close(store)
        raise


def _matches(rec: MemoryRecord, columns: Mapping[str, Any]) -> bool:
    for key in ("source", "confidence"):
        if key in columns and getattr(rec, key) != columns[key]:
            return False
    return True


async def forget_doc(store: MemoryStore, doc: dict[str, Any]) -> dict[str, Any]:
    """A ``forget`` document whose 0.5 filter names record fields, as ids (see the module)."""
    flt = dict(doc.get("filter") or {})
    columns = {k: flt.pop(k) for k in list(flt) if k in COLUMNS}
    if not columns:
        return doc
    agent = str(doc["agent_id"])
    rest = {k: v for k, v in doc.items() if k != "filter"}
    if columns.get("agent_id", agent) != agent:
        return {**rest, "ids": []}
    user = columns.get("user_id", doc.get("user_id"))
    kind = columns.get("type")
    rows = await list_all(store, ListQuery(agent_id=agent, user_id=user,
                                           types=None if kind is None else [kind],
                                           filter=flt or None))
    wanted = doc.get("ids")
    ids = [r.id for r in rows if _matches(r, columns) and (wanted is None or r.id in wanted)]
    return {**rest, "ids": ids, **({"user_id": user} if user is not None else {})}


async def health_doc(store: MemoryStore) -> dict[str, Any]:
    """0.5's health dictionary for ``store`` (a router reports each child)."""
    children = getattr(store, "stores", None) or [store]
    rows = []
    for child in children:
        h = await child.health()
        count = None
        if h.status != "down":
            count = len(await list_all(child, ListQuery(agent_id=None)))
        rows.append({"backend": child.name, "status": h.status, "memory_count": count,
                     "details": h.details})
    overall = await store.health()
    return {"status": overall.status, "stores": rows}
