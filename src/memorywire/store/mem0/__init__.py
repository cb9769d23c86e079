"""In-process mem0 as a store, as a package (mapping, backend, store).

``memorywire.store.mem0:Mem0Store`` is the entry point pyproject registers.
"""

from memorywire.store.mem0.store import Mem0Store

__all__ = ["Mem0Store"]
