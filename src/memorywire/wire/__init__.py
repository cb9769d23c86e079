"""The wire format: JSON Schemas (the truth), typed models, validation, versions.

No I/O beyond reading the schema files shipped in this package.

The codec's names (the pydantic models behind them) load on first use (PEP 562): importing
any ``memorywire.wire.*`` module runs this file first, and ``memorywire --version`` must not
build every model to print one line. The rest is cheap to import; :mod:`.validate` and
:mod:`.registry` load ``jsonschema`` and ``referencing`` only when a document is checked.
``validate`` and ``examples`` are bound here eagerly because each is also the name of a
submodule, which a later first import would otherwise leave in their place.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memorywire.wire.examples import Example, examples
from memorywire.wire.registry import BASE_URI, registry, schema, schema_id, schema_names
from memorywire.wire.validate import ValidationIssue, best_match, check, validate
from memorywire.wire.versions import CURRENT, KNOWN_VERSIONS, compatible

if TYPE_CHECKING:
    from memorywire.wire.codec import (
        MODELS,
        OPERATIONS,
        RECORD_OPERATIONS,
        Operation,
        RecordOperation,
        Request,
        parse,
        parse_error,
        parse_json,
        parse_request,
        to_wire,
    )

_CODEC = frozenset({"MODELS", "OPERATIONS", "RECORD_OPERATIONS", "Operation",
                    "RecordOperation", "Request", "parse", "parse_error", "parse_json",
                    "parse_request", "to_wire"})

__all__ = [
    "BASE_URI",
    "CURRENT",
    "KNOWN_VERSIONS",
    "MODELS",
    "OPERATIONS",
    "RECORD_OPERATIONS",
    "Example",
    "Operation",
    "RecordOperation",
    "Request",
    "ValidationIssue",
    "best_match",
    "check",
    "compatible",
    "examples",
    "parse",
    "parse_error",
    "parse_json",
    "parse_request",
    "registry",
    "schema",
    "schema_id",
    "schema_names",
    "to_wire",
    "validate",
]


def __getattr__(name: str) -> Any:
    if name not in _CODEC:
        raise AttributeError(f"module 'memorywire.wire' has no attribute {name!r}")
    from memorywire.wire import codec

    value = getattr(codec, name)
    globals()[name] = value  # later look-ups do not come back here
    return value
