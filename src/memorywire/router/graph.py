"""The memory graph across a router's children: who reports edges, asking them, merging.

:class:`GraphEdges` is mixed into :class:`~memorywire.router.MemoryRouter`. Only children
that declare ``graph`` and implement :class:`GraphStore` are asked; their edges are merged to
the nearest distance per pair (``_merge_distances``), which is what recall's graph boost and
the router's own ``neighbours`` (so routers nest) use.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol, runtime_checkable

from memorywire.errors import CapabilityMissing
from memorywire.router.fanout import FanOut, _Outcome
from memorywire.store.base import Capability, MemoryStore
from memorywire.wire.models import RecallRequest, StoreFailure

__all__ = ["GraphEdges", "GraphStore"]


@runtime_checkable
class GraphStore(Protocol):
    """A store that can report the memory graph (``InMemoryStore`` and ``SqliteStore`` do)."""

    async def neighbours(
        self, agent_id: str, ids: Sequence[str], hops: int, user_id: str | None = None
    ) -> dict[str, dict[str, int]]: ...


class GraphEdges(FanOut):
    """Graph edges from the children that keep them, over the router's fan-out."""

    async def _edges(
        self,
        req: RecallRequest,
        ids: list[str],
        answered: list[str],
        deadline: float,
        out: dict[str, dict[str, dict[str, int]]],
        failures: list[StoreFailure],
    ) -> None:
        stores = [s for s in self._graph_children() if s.name in answered]
        for o in await self._ask_edges(stores, req.agent_id, ids, req.hops, req.user_id,
                                       deadline):
            if o.ok and o.value is not None:
                out[o.store.name] = o.value
            elif o.failure is not None:
                failures.append(o.failure)

    def _graph_children(self) -> list[MemoryStore]:
        return [s for s in self._stores
                if Capability.GRAPH in s.capabilities and isinstance(s, GraphStore)]

    async def _ask_edges(
        self, stores: Sequence[MemoryStore], agent_id: str, ids: Sequence[str], hops: int,
        user_id: str | None, deadline: float | None = None,
    ) -> list[_Outcome[dict[str, dict[str, int]]]]:
        async def edges(s: MemoryStore) -> dict[str, dict[str, int]]:
            assert isinstance(s, GraphStore)
            return await s.neighbours(agent_id, ids, hops, user_id)

        return await self._gather(stores, edges, "graph", deadline)

    async def neighbours(
        self, agent_id: str, ids: Sequence[str], hops: int, user_id: str | None = None
    ) -> dict[str, dict[str, int]]:
        """Edges known to any graph child, nearest distance wins (lets routers nest)."""
        graph = self._graph_children()
        if not graph:
            raise CapabilityMissing("no child store declares the graph capability")
        outcomes = await self._ask_edges(graph, agent_id, ids, hops, user_id)
        maps = [o.value for o in outcomes if o.ok and o.value is not None]
        if not maps:
            raise self._all_failed(outcomes, "graph")
        return _merge_distances(maps)


def _merge_distances(
    maps: Iterable[Mapping[str, Mapping[str, int]]],
) -> dict[str, dict[str, int]]:
    """Nearest distance per pair over every map, made symmetric (edges are undirected)."""
    out: dict[str, dict[str, int]] = {}
    for m in maps:
        for a, near in m.items():
            for b, d in near.items():
                for x, y in ((a, b), (b, a)):
                    row = out.setdefault(x, {})
                    if d < row.get(y, d + 1):
                        row[y] = d
    return out

