"""PostgreSQL store URLs: the store's settings beside libpq's own connection parameters.

A key is the store's (:func:`memorywire.store.url_settings.constructor_settings`, the pool's
three under the ``pool_`` names this URL always used) or libpq's (``host``, ``sslmode``, ...,
passed on); libpq would refuse any other, but only at the first connection, long after the
store opened, so the URL is checked here instead. No store key is a libpq keyword (a test
checks it), so a key never changes owner.
"""

from __future__ import annotations

from functools import cache

import psycopg

__all__ = ["PG_ALIASES", "is_libpq_key", "libpq_keys"]

#: URL key -> constructor keyword, where the URL's name is not the keyword's.
PG_ALIASES = {"pool_min": "min_size", "pool_max": "max_size", "pool_timeout": "timeout"}


@cache
def libpq_keys() -> frozenset[str]:
    """The connection parameters the linked libpq knows (its version decides)."""
    return frozenset(d.keyword.decode() for d in psycopg.pq.Conninfo.get_defaults())


def is_libpq_key(key: str) -> bool:
    return key in libpq_keys()
