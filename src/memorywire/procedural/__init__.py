"""Procedural memory: pytransitions-compatible state machines, validated so they carry no code.

See :mod:`memorywire.core.procedure` for the rules and
:mod:`memorywire.procedural.runner` for replay and persistence.
"""

from memorywire.core.procedure import (
    EMPTY_PREDICATES,
    MAX_JSON_BYTES,
    MAX_STATES,
    MAX_TRANSITIONS,
    Predicate,
    PredicateRegistry,
    parse_procedure,
    procedure_to_dict,
    procedure_to_json,
)
from memorywire.procedural.runner import ProcedureRunner
from memorywire.wire.models import Procedure

__all__ = [
    "EMPTY_PREDICATES",
    "MAX_JSON_BYTES",
    "MAX_STATES",
    "MAX_TRANSITIONS",
    "Predicate",
    "PredicateRegistry",
    "Procedure",
    "ProcedureRunner",
    "parse_procedure",
    "procedure_to_dict",
    "procedure_to_json",
]
