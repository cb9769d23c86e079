"""What a recall ``where`` filter means, once for every store (field rules: ``wire.fields``).

A condition names a typed field and operators on it; every condition must hold (AND), and a
memory without the field, of a type that has no such field, or holding a malformed value (a
row written before typed fields were validated) never matches. SQL stores translate the same
rule (``store.postgres.sql.add_typed_where``); the others call :func:`matches_where`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from memorywire.wire.fields import typed_fields

__all__ = ["matches_where"]


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _holds(op: str, have: Any, want: Any) -> bool:
    if op == "eq":
        return bool(have == want) and type(have) is not bool
    if op == "in":
        return have in want
    if op == "contains":
        return isinstance(have, list) and want in have
    if not _is_number(have):
        return False
    return bool({"lt": have < want, "lte": have <= want,
                 "gt": have > want, "gte": have >= want}[op])


def matches_where(mtype: str, metadata: Mapping[str, Any] | None,
                  where: Mapping[str, Mapping[str, Any]] | None) -> bool:
    """``None`` matches everything; otherwise every condition must hold on a typed field the
    memory's type has and the memory holds."""
    if not where:
        return True
    fields = typed_fields(mtype, metadata)
    return all(name in fields and all(_holds(op, fields[name], want) for op, want in cond.items())
               for name, cond in where.items())
