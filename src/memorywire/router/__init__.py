"""The router: one ``MemoryStore`` in front of several, fanning out and fusing.

``router`` holds :class:`MemoryRouter` (identity, recall fusion, writes, capabilities);
``fanout`` its calls on the children (deadlines, failures isolated and named); ``graph`` the
graph edges across children; ``outbox`` the forgets a child missed, kept until it takes them.
"""

from memorywire.router.graph import GraphStore
from memorywire.router.outbox import ForgetOutbox
from memorywire.router.router import MAX_FETCH, MemoryRouter, fetch_size

__all__ = ["MAX_FETCH", "ForgetOutbox", "GraphStore", "MemoryRouter", "fetch_size"]
