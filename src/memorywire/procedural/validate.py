"""An alias of :mod:`memorywire.core.procedure` (moved there: stores need the rules)."""

from memorywire.core.procedure import (
    EMPTY_PREDICATES,
    MAX_JSON_BYTES,
    MAX_NAME_LENGTH,
    MAX_PROCEDURE_NAME_LENGTH,
    MAX_STATES,
    MAX_TRANSITIONS,
    WILDCARD,
    Predicate,
    PredicateRegistry,
    parse_procedure,
    procedure_to_dict,
    procedure_to_json,
)

__all__ = [
    "EMPTY_PREDICATES",
    "MAX_JSON_BYTES",
    "MAX_NAME_LENGTH",
    "MAX_PROCEDURE_NAME_LENGTH",
    "MAX_STATES",
    "MAX_TRANSITIONS",
    "WILDCARD",
    "Predicate",
    "PredicateRegistry",
    "parse_procedure",
    "procedure_to_dict",
    "procedure_to_json",
]
