"""SQLite store URLs, read the way SQLAlchemy and Datasette users already write them.

``sqlite:///relative.db`` is relative to the working directory, ``sqlite:////abs/file.db``
is absolute, ``sqlite://`` and ``sqlite://:memory:`` are in memory. ``sqlite-vec://`` (the
first implementation's scheme) opens the same store, its path read as 0.5 read it: everything
after ``://`` is the path, so ``sqlite-vec://./mem.db`` and ``sqlite-vec://mem.db`` are
relative, ``sqlite-vec:///abs/mem.db`` is absolute and ``sqlite-vec://:memory:`` is in memory
(no warning: that is how 0.5's documentation and programs write it).

Before 0.2 this package read ``sqlite:///tmp/m.db`` as the absolute ``/tmp/m.db``. So that a
configuration written then does not silently start an empty store elsewhere, that spelling
is still read the old way for one version, with a :class:`FutureWarning`, when only the old
reading points into an existing folder. Where *both* readings point into existing folders
(``sqlite:///data/m.db`` run from a directory holding ``data/`` on a machine with ``/data``),
the URL is refused as ambiguous instead of quietly taking the relative one: which file it
meant would otherwise depend on the working directory.

The query (``?turn_weight=0``) carries the store's settings
(:mod:`memorywire.store.url_settings`). SQLite's own URI parameters (``mode=ro``,
``uri=true``, ``cache=shared``, ...) are refused naming the key rather than dropped: the store
opens its file read-write, so a ``mode=ro`` quietly ignored would let writes through.
"""

from __future__ import annotations

import warnings
from pathlib import Path

from memorywire.errors import InvalidRequest

__all__ = ["SCHEMES", "SQLITE_URI_HINTS", "sqlite_path", "sqlite_query"]

SCHEMES = ("sqlite", "sqlite-vec")

#: What a refusal adds for the SQLite and SQLAlchemy URL parameters people carry over.
SQLITE_URI_HINTS = {
    key: f"({key!r} is a SQLite or SQLAlchemy URL parameter, not a setting of this store, "
         "which opens its file read-write itself.)"
    for key in ("mode", "uri", "cache", "immutable", "nolock", "vfs", "psow", "modeof",
                "check_same_thread")
} | {"timeout": "(The store's lock wait is busy_timeout_ms.)"}


def _old_absolute(rest: str) -> bool:
    """Whether ``sqlite:///<rest>`` was meant as the absolute ``/<rest>`` (the old reading)."""
    parent = Path(rest).parent
    if parent == Path(".") or parent.exists():
        return False
    return Path("/" + rest).parent.is_dir()


def _ambiguous(rest: str) -> bool:
    """Whether ``sqlite:///<rest>`` names an existing folder both here and at the root."""
    relative, absolute = Path(rest), Path("/" + rest)
    if relative.parent == Path(".") or not relative.parent.is_dir():
        return False
    return absolute.parent.is_dir() and relative.absolute() != absolute


def sqlite_query(url: str) -> str:
    """The query of a SQLite store URL (``""`` when it has none)."""
    return url.partition("?")[2]


def sqlite_path(url: str) -> str:
    """The file (or ``:memory:``) a SQLite store URL names (its query: :func:`sqlite_query`)."""
    scheme, sep, rest = url.partition("://")
    if not sep or scheme.lower() not in SCHEMES:
        raise InvalidRequest(f"not a sqlite URL: {url!r}")
    rest = rest.split("?", 1)[0]
    if rest in ("", ":memory:", "/:memory:"):
        return ":memory:"
    if scheme.lower() == "sqlite-vec":
        return rest
    if not rest.startswith("/"):
        warnings.warn(
            f"store URL {url!r}: a relative path takes three slashes "
            f"(sqlite:///{rest}); the two-slash form is read the same until 0.2",
            FutureWarning,
            stacklevel=3,
        )
        return rest
    rest = rest[1:]
    if rest.startswith("/"):
        return rest
    if not rest:
        raise InvalidRequest("sqlite URL names no file (use sqlite:///relative.db or "
                             "sqlite:////absolute/path.db)")
    if rest.startswith("./"):
        return rest  # spelt relative on purpose: never the old absolute reading
    if _old_absolute(rest):
        warnings.warn(
            f"store URL {url!r} is read as the absolute path /{rest} because the folder "
            f"{Path(rest).parent} does not exist here; write sqlite:////{rest} (four slashes) "
            f"for an absolute path: from 0.2 three slashes always mean a path relative to the "
            "working directory, as in SQLAlchemy",
            FutureWarning,
            stacklevel=3,
        )
        return "/" + rest
    if _ambiguous(rest):
        raise InvalidRequest(
            f"store URL {url!r} is ambiguous: {Path(rest).parent}/ exists here and "
            f"/{Path(rest).parent}/ exists too; write sqlite:////{rest} (four slashes) for "
            f"the absolute path or sqlite:///./{rest} for the one relative to the working "
            "directory")
    return rest
