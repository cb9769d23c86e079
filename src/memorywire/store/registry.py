"""Open a store from a URL: ``memory://``, ``sqlite:///path.db``, ``postgresql://...``.

Built-in stores register exactly like third-party ones: an entry point in the group
``memorywire.stores`` whose name is the URL scheme and whose object is a class with a
``from_url(url, **kw)`` classmethod (or any callable taking ``(url, **kw)``). Programs can
also call :func:`register_store`, which wins over entry points of the same scheme.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib.metadata import entry_points
from typing import Any
from urllib.parse import urlsplit

from memorywire.errors import CapabilityMissing, InvalidRequest
from memorywire.store.base import MemoryStore

__all__ = [
    "ALIASES",
    "ENTRY_POINT_GROUP",
    "EXTRAS",
    "StoreFactory",
    "available_schemes",
    "open_store",
    "register_store",
]

ENTRY_POINT_GROUP = "memorywire.stores"

StoreFactory = Callable[..., MemoryStore]

#: Which ``pip install memorywire[extra]`` brings a scheme's optional dependency. Every value
#: is an extra pyproject defines (a test checks that). Letta is absent on purpose: its adapter
#: speaks REST through httpx, a core dependency, so it needs no extra.
EXTRAS: dict[str, str] = {
    "postgresql": "postgres",
    "mem0": "mem0",
    "cognee": "cognee",
}

#: Other spellings of a scheme; the entry point is registered under the canonical name only
#: (``sqlite-vec://``: the first implementation's URLs).
ALIASES: dict[str, str] = {"postgres": "postgresql", "sqlite-vec": "sqlite"}

_registered: dict[str, StoreFactory] = {}


def register_store(scheme: str, factory: StoreFactory) -> None:
    """Make ``scheme://...`` URLs open with ``factory(url, **kw)``."""
    if not scheme or not scheme.replace("+", "").replace("-", "").isalnum():
        raise InvalidRequest(f"invalid URL scheme {scheme!r}")
    _registered[scheme.lower()] = factory


def available_schemes() -> list[str]:
    names = {ep.name.lower() for ep in entry_points(group=ENTRY_POINT_GROUP)} | set(_registered)
    return sorted(names | {alias for alias, target in ALIASES.items() if target in names})


def _scheme_of(url: str) -> str:
    if "://" not in url:
        raise InvalidRequest(f"store URL {url!r} has no scheme (expected e.g. sqlite:///path.db)")
    scheme = urlsplit(url).scheme.lower() or url.split("://", 1)[0].lower()
    # "postgresql+psycopg://" style driver suffixes select the same store.
    scheme = scheme.split("+", 1)[0]
    return ALIASES.get(scheme, scheme)


def _as_factory(obj: Any) -> StoreFactory:
    from_url = getattr(obj, "from_url", None)
    if callable(from_url):
        return from_url  # type: ignore[no-any-return]
    if callable(obj):
        return obj  # type: ignore[no-any-return]
    raise InvalidRequest(f"store entry point {obj!r} is neither a class with from_url nor callable")


def _load(scheme: str) -> StoreFactory:
    if scheme in _registered:
        return _registered[scheme]
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name.lower() != scheme:
            continue
        try:
            obj = ep.load()
        except ImportError as exc:
            extra = EXTRAS.get(scheme, scheme)
            raise CapabilityMissing(
                f"the {scheme!r} store needs an optional dependency ({exc.name or exc}); "
                f"install it with: pip install 'memorywire[{extra}]'"
            ) from exc
        return _as_factory(obj)
    if scheme in EXTRAS:
        raise CapabilityMissing(
            f"no store is installed for {scheme!r}; "
            f"install it with: pip install 'memorywire[{EXTRAS[scheme]}]'"
        )
    raise InvalidRequest(
        f"unknown store URL scheme {scheme!r}; known: {', '.join(available_schemes())}"
    )


def open_store(url: str, **kw: Any) -> MemoryStore:
    """A store for ``url``; keyword arguments (embedder, clock, name, ...) pass through."""
    return _load(_scheme_of(url))(url, **kw)
