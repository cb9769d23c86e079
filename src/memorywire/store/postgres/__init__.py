"""PostgreSQL + pgvector store, as a package of composed modules (see :mod:`.store`).

``memorywire.store.postgres:PostgresStore`` is the entry point pyproject registers.
"""

from memorywire.store.postgres.store import PostgresStore

__all__ = ["PostgresStore"]
