"""The embedded SQLite store, as a package of composed modules (see :mod:`.store`).

``memorywire.store.sqlite:SqliteStore`` is the entry point pyproject registers; it stays here.
"""

from memorywire.store.sqlite.schema import SCHEMA_VERSION
from memorywire.store.sqlite.store import SqliteStore

__all__ = ["SCHEMA_VERSION", "SqliteStore"]
