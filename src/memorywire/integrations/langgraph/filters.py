"""LangGraph's value filters and namespace matching, evaluated on the client side.

memorywire filters are metadata equality only, so the store pushes the namespace down as
metadata equality and applies LangGraph's richer value filters (``$eq $ne $gt $gte $lt
$lte``, nested objects) here, with the semantics LangGraph's own stores give them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["matches_namespace", "matches_value"]

_NUMERIC = {"$gt": float.__gt__, "$gte": float.__ge__, "$lt": float.__lt__, "$lte": float.__le__}


def _operator(value: Any, op: str, want: Any) -> bool:
    if op == "$eq":
        return bool(value == want)
    if op == "$ne":
        return bool(value != want)
    if op in _NUMERIC:
        if value is None:
            return False
        return _NUMERIC[op](float(value), float(want))
    raise ValueError(f"unsupported filter operator {op!r}; use $eq $ne $gt $gte $lt $lte")


def _compare(value: Any, want: Any) -> bool:
    if isinstance(want, Mapping):
        if any(str(k).startswith("$") for k in want):
            return all(_operator(value, op, w) for op, w in want.items())
        if not isinstance(value, Mapping):
            return False
        return all(_compare(value.get(k), w) for k, w in want.items())
    if isinstance(want, list | tuple):
        return (
            isinstance(value, list | tuple)
            and len(value) == len(want)
            and all(_compare(v, w) for v, w in zip(value, want, strict=True))
        )
    return bool(value == want)


def matches_value(value: Mapping[str, Any], flt: Mapping[str, Any] | None) -> bool:
    """Every top-level key of ``flt`` matches the item's value."""
    return not flt or all(_compare(value.get(k), w) for k, w in flt.items())


def matches_namespace(namespace: tuple[str, ...], match_type: str, path: tuple[str, ...]) -> bool:
    """LangGraph's ``MatchCondition``: prefix or suffix, ``*`` matching any one label."""
    if len(namespace) < len(path):
        return False
    if match_type == "prefix":
        pairs = zip(namespace, path, strict=False)
    elif match_type == "suffix":
        pairs = zip(reversed(namespace), reversed(path), strict=False)
    else:
        raise ValueError(f"unsupported match type {match_type!r}")
    return all(p == "*" or n == p for n, p in pairs)
