"""The wire format: JSON Schemas (the truth), typed models, validation, versions.

No I/O beyond reading the schema files shipped in this package.
"""

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
from memorywire.wire.examples import Example, examples
from memorywire.wire.registry import BASE_URI, registry, schema, schema_id, schema_names
from memorywire.wire.validate import ValidationIssue, best_match, check, validate
from memorywire.wire.versions import CURRENT, KNOWN_VERSIONS, compatible

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
