"""Metadata equality filters (the ``filter`` of recall, forget and list).

A filter matches when every key it names is present in the memory's metadata with an equal
JSON value. Equality is JSON equality, not Python's: ``true`` never equals ``1`` and a list
only equals a list with the same items in the same order.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["json_equal", "matches_filter"]


def json_equal(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and bool(a == b)


def matches_filter(metadata: Mapping[str, Any] | None, flt: Mapping[str, Any] | None) -> bool:
    """``None`` or an empty filter matches everything; a missing key never matches."""
    if not flt:
        return True
    if not metadata:
        return False
    return all(key in metadata and json_equal(metadata[key], want) for key, want in flt.items())
