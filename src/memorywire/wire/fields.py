"""Typed memory fields (emotional affect, episodic event facts) and the recall ``where`` filter:
what each field is and which values and conditions are well-formed. What a condition means
is :mod:`memorywire.core.fields`.

A typed field is kept under the metadata key of its own name, the way edges are kept under
``metadata.links``: every backend that keeps metadata keeps typed fields, with no column and
no migration, and a dump carries them inside ``record.metadata``. Records and hits show them
as top-level fields again. Because ``metadata.valence`` on an emotional memory *is* its
``valence``, the metadata spelling is validated by the same rule (a v0.0 client that put
``valence`` in metadata keeps working, and ``valence: 5`` can no longer be stored); a
metadata key of another type's field is free-form (``valence`` on a semantic memory means
whatever its writer meant, and no filter reads it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from memorywire.errors import ErrorDetail, InvalidRequest
from memorywire.wire.door import MAX_MILLIS

__all__ = [
    "FIELDS",
    "MAX_MILLIS",
    "MAX_TEXT",
    "OPERATORS",
    "Field",
    "check_metadata_fields",
    "field_problem",
    "fold_fields",
    "typed_fields",
    "where_problem",
]

NUMBER = "number"
TIME = "time"
TEXT = "text"
NAMES = "names"
SENTIMENTS = ("positive", "negative", "neutral", "mixed")
MAX_TEXT = 256


@dataclass(frozen=True)
class Field:
    """One typed field: the memory type that has it (its wire name), the kind of value."""

    name: str
    owner: str
    kind: str
    low: float | None = None
    high: float | None = None
    choices: tuple[str, ...] | None = None


FIELDS: dict[str, Field] = {f.name: f for f in (
    Field("sentiment", "emotional", TEXT, choices=SENTIMENTS),
    Field("valence", "emotional", NUMBER, -1.0, 1.0),
    Field("arousal", "emotional", NUMBER, 0.0, 1.0),
    Field("emotion", "emotional", TEXT),
    Field("target", "emotional", TEXT),
    Field("event_time", "episodic", TIME),
    Field("location", "episodic", TEXT),
    Field("participants", "episodic", NAMES),
)}

#: Each memory type's typed fields, in ``FIELDS`` order: every hit and record of a recall
#: looks its type's up (a pool builds 100 hits), so not the whole table each time.
_OWNED: dict[str, tuple[Field, ...]] = {}
for _f in FIELDS.values():
    _OWNED[_f.owner] = (*_OWNED.get(_f.owner, ()), _f)

#: The operators each kind of field accepts in a ``where`` condition.
OPERATORS: dict[str, frozenset[str]] = {
    NUMBER: frozenset({"eq", "lt", "lte", "gt", "gte"}),
    TIME: frozenset({"eq", "lt", "lte", "gt", "gte"}),
    TEXT: frozenset({"eq", "in"}),
    NAMES: frozenset({"contains"}),
}



def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def field_problem(f: Field, value: Any) -> str | None:
    """Why ``value`` cannot be ``f``'s value, or ``None`` when it can."""
    if f.kind == NUMBER:
        if not _is_number(value):
            return "must be a number"
        assert f.low is not None and f.high is not None
        if not f.low <= value <= f.high:
            return f"must be between {f.low:g} and {f.high:g} (got {value})"
    elif f.kind == TIME:
        if not isinstance(value, int) or isinstance(value, bool):
            return "must be an integer (Unix epoch milliseconds)"
        if not 0 <= value <= MAX_MILLIS:
            return f"must be Unix milliseconds in 0..{MAX_MILLIS} (got {value})"
    elif f.kind == TEXT:
        if not isinstance(value, str):
            return "must be a string"
        if len(value) > MAX_TEXT:
            return f"must be at most {MAX_TEXT} characters"
        if f.choices is not None and value not in f.choices:
            return f"must be one of {', '.join(f.choices)} (got {value!r})"
    elif not (isinstance(value, list) and all(isinstance(x, str) for x in value)):
        return "must be a list of strings"
    return None


def _refuse(path: str, why: str) -> InvalidRequest:
    return InvalidRequest(f"invalid remember: {path}: {why}",
                          [ErrorDetail(path, "typed_field", why)])


def check_metadata_fields(mtype: str, metadata: Mapping[str, Any] | None) -> None:
    """Refuse a metadata key that spells one of ``mtype``'s typed fields with a bad value."""
    for name, value in (metadata or {}).items():
        f = FIELDS.get(name)
        if f is not None and f.owner == mtype:
            why = field_problem(f, value)
            if why is not None:
                raise _refuse(f"/metadata/{name}", f"{name} {why}")


def fold_fields(mtype: str, metadata: Mapping[str, Any] | None,
                given: Mapping[str, Any]) -> dict[str, Any]:
    """The metadata a remember stores: ``given`` (the request's typed fields, already checked
    by the schema) written under their own keys. Given both ways, the field wins: it is the
    v0.1 spelling, and the metadata one is what a v0.0 client could send instead."""
    out = dict(metadata or {})
    check_metadata_fields(mtype, out)
    for name, value in given.items():
        if value is None:
            continue
        f = FIELDS[name]
        if f.owner != mtype:
            raise _refuse(f"/{name}", f"{name} is a field of {f.owner} memories, "
                                      f"not {mtype}")
        out[name] = value
    return out


def typed_fields(mtype: str, metadata: Mapping[str, Any] | None) -> dict[str, Any]:
    """The typed fields a stored memory of ``mtype`` holds (what records and hits show)."""
    if not metadata:
        return {}
    return {f.name: metadata[f.name] for f in _OWNED.get(mtype, ())
            if f.name in metadata and field_problem(f, metadata[f.name]) is None}


def where_problem(where: Mapping[str, Any]) -> tuple[str, str] | None:
    """The first thing wrong with a ``where`` filter, as (JSON pointer under it, why)."""
    if not where:
        return "", "must name at least one field"
    for name, cond in where.items():
        f = FIELDS.get(name)
        if f is None:
            return f"/{name}", (f"unknown field {name!r}; typed fields: {', '.join(FIELDS)}")
        if not isinstance(cond, Mapping) or not cond:
            return f"/{name}", "must be an object of operators, e.g. {\"lt\": 0}"
        allowed = OPERATORS[f.kind]
        for op, value in cond.items():
            if op not in allowed:
                return f"/{name}/{op}", (f"unknown operator {op!r} for {name}; "
                                         f"allowed: {', '.join(sorted(allowed))}")
            if op == "in":
                if not isinstance(value, list) or not value or any(
                        field_problem(f, v) for v in value):
                    return f"/{name}/in", f"must be a non-empty list of {name} values"
            elif op == "contains":
                if not isinstance(value, str):
                    return f"/{name}/contains", "must be a string"
            elif f.kind in (NUMBER, TIME) and not _is_number(value):
                return f"/{name}/{op}", "must be a number"
            elif f.kind == TEXT and not isinstance(value, str):
                return f"/{name}/{op}", "must be a string"
    return None
