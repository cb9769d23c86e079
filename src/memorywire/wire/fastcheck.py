"""A compiled pre-check that accepts a valid wire document in about a microsecond.

The reference validator (``jsonschema``, draft 2020-12 through ``$ref``s) costs about a
quarter of a millisecond per remember, on every request, almost always to say "valid".
``jsonschema-rs`` (the optional ``fast`` extra) answers the same question about 200 times
faster, but it is used here **only to accept**: when it says valid, :func:`accepts` returns
``True`` and validation ends; for anything else the reference validator runs and alone
produces the issues. Errors, their pointers and their messages are therefore always the
reference's, and without the package installed only time is lost.

The two must agree wherever the pre-check accepts. Where they could differ, the pre-check
declines instead of deciding:

* ``contentSchema`` (a procedural FSM sent as a JSON string) is an annotation that only our
  reference validator enforces, so a string reaching it fails the pre-check;
* a value the compiled validator cannot convert (a set, bytes, any non-JSON object) declines;
* formats are not checked by either (draft 2020-12's default).

``tests/unit/test_wire_fastcheck.py`` compares the two on every shipped example and on
thousands of mutations of them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from functools import cache
from typing import Any, Protocol

from memorywire.wire.registry import schema, schema_id, schema_names

__all__ = ["ENV", "accepts", "available"]

#: Set to ``0`` to run only the reference validator (for A/B measurements and debugging).
ENV = "MEMORYWIRE_FAST_VALIDATION"


class _Compiled(Protocol):
    def is_valid(self, instance: Any) -> bool: ...


class _Declines:
    """``contentSchema``: fails every string, so the reference validator decides it."""

    def __init__(self, parent_schema: Mapping[str, Any], value: Any, schema_path: Any) -> None:
        self._json = parent_schema.get("contentMediaType") == "application/json"

    def validate(self, instance: Any) -> None:
        if self._json and isinstance(instance, str):
            raise ValueError("decided by the reference validator")


@cache
def _module() -> Any:
    if os.environ.get(ENV, "1") == "0":
        return None
    try:
        import jsonschema_rs
    except ImportError:
        return None
    return jsonschema_rs


@cache
def _registry() -> Any:
    rs = _module()
    return rs.Registry(
        [
            (schema_id(name), {k: v for k, v in schema(name).items() if k != "$schema"})
            for name in schema_names(include_definitions=True)
        ]
    )


@cache
def _compiled(kind: str) -> _Compiled | None:
    rs = _module()
    if rs is None:
        return None
    validator: _Compiled = rs.Draft202012Validator(
        {"$ref": schema_id(kind)},
        registry=_registry(),
        validate_formats=False,
        keywords={"contentSchema": _Declines},
    )
    return validator


def available() -> bool:
    """Whether the pre-check runs in this process (the package is installed and not turned off)."""
    return _module() is not None


def accepts(kind: str, document: Any) -> bool:
    """``True`` only when ``document`` is certainly a valid ``kind``; ``False`` means "ask the
    reference validator", not "invalid"."""
    validator = _compiled(kind)
    if validator is None:
        return False
    try:
        return validator.is_valid(document)
    except (ValueError, TypeError, OverflowError):
        # a value it cannot convert (a set, bytes, an object): the reference validator decides
        return False
