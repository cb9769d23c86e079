"""In-process Cognee as a store, as a package of composed modules (see :mod:`.store`).

``memorywire.store.cognee:CogneeStore`` is the entry point pyproject registers.
"""

from memorywire.store.cognee.store import CogneeStore

__all__ = ["CogneeStore"]
