"""Parse and validate a stored procedure before anything of pytransitions sees it.

The rule is an allow-list at every level: a key, name or shape not named here is refused with
an :class:`~memorywire.errors.ErrorDetail` pointing at it. Guards (``conditions`` /
``unless``) are names looked up in an explicit :class:`PredicateRegistry` of Python callables
we wrote ourselves; a stored string is never resolved as a path to code.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping
from types import MappingProxyType
from typing import Any

from pydantic import ValidationError
from transitions import Machine

from memorywire.core.procedure_keys import (
    CALLBACK_KEYS,
    GUARD_KEYS,
    MACHINE_INSTANCE_ATTRIBUTES,
    MACHINE_KEYS,
    RESERVED_TRIGGER_PREFIXES,
    TRANSITION_KEYS,
)
from memorywire.errors import ErrorDetail, InvalidRequest, PayloadTooLarge
from memorywire.wire.models import Procedure

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

MAX_STATES = 256
MAX_TRANSITIONS = 1024
#: States, triggers and guard names.
MAX_NAME_LENGTH = 128
MAX_PROCEDURE_NAME_LENGTH = 256
#: Canonical JSON of the whole procedure, metadata included.
MAX_JSON_BYTES = 256 * 1024
WILDCARD = "*"

#: States, triggers, guards: a letter, then letters, digits, ``_`` or ``-``. No dots (import
#: paths), no leading underscore, and ``__`` is refused separately (dunder lookups).
_IDENT = re.compile(r"[A-Za-z][A-Za-z0-9_-]*")
#: A procedure's display name is never handed to pytransitions, so spaces and ``:`` are fine.
_PROCEDURE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9 _:-]*")

#: A safe predicate sees a read-only view of the procedure's metadata and answers yes or no.
Predicate = Callable[[Mapping[str, Any]], bool]

_RESERVED_TRIGGERS: frozenset[str] = (
    frozenset(dir(Machine))
    | frozenset(dir(object))
    | MACHINE_INSTANCE_ATTRIBUTES
    | CALLBACK_KEYS
    | frozenset(GUARD_KEYS)
    | frozenset(MACHINE_KEYS)
)


class PredicateRegistry(Mapping[str, Predicate]):
    """Guard names a procedure may use, each bound to code we trust.

    Immutable once built so a registry shared between runners cannot grow behind their back.
    """

    def __init__(self, predicates: Mapping[str, Predicate] | None = None) -> None:
        items = dict(predicates or {})
        for name, fn in items.items():
            problem = _name_problem(name)
            if problem is not None:
                raise InvalidRequest(f"predicate name {name!r} {problem}")
            if not callable(fn):
                raise InvalidRequest(f"predicate {name!r} is not callable")
        self._items: Mapping[str, Predicate] = MappingProxyType(items)

    def __getitem__(self, key: str) -> Predicate:
        return self._items[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)


#: The default: no guard is allowed at all.
EMPTY_PREDICATES = PredicateRegistry()


def _name_problem(name: object, limit: int = MAX_NAME_LENGTH) -> str | None:
    if not isinstance(name, str):
        return f"must be a string, not {type(name).__name__}"
    if not name or len(name) > limit:
        return f"must be 1..{limit} characters long"
    if "." in name:
        return "must not contain '.' (dotted names are import paths)"
    if "__" in name:
        return "must not contain '__' (dunder names reach Python internals)"
    if not _IDENT.fullmatch(name):
        return "must start with a letter and hold only letters, digits, '_' or '-'"
    return None


def _trigger_problem(name: object) -> str | None:
    problem = _name_problem(name)
    if problem is not None:
        return problem
    assert isinstance(name, str)
    if name in _RESERVED_TRIGGERS:
        return "collides with a pytransitions Machine/model attribute"
    for prefix in RESERVED_TRIGGER_PREFIXES:
        if name.startswith(prefix):
            return f"must not start with {prefix!r} (pytransitions adds such model attributes)"
    return None


def _ptr(*parts: object) -> str:
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def _unknown_key(path: str, key: object, allowed: tuple[str, ...]) -> ErrorDetail:
    if isinstance(key, str) and key in CALLBACK_KEYS:
        why = f"{key!r} is a pytransitions callback key (a code-execution vector) and is refused"
    else:
        why = f"unknown key {key!r}; allowed: {', '.join(allowed)}"
    return ErrorDetail(path, "additionalProperties", why)


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise InvalidRequest(
                f"duplicate key {k!r} in procedure JSON",
                [ErrorDetail("", "uniqueKeys", f"key {k!r} appears twice")],
            )
        out[k] = v
    return out


def _load(content: str | Mapping[str, Any] | Procedure) -> dict[str, Any]:
    if isinstance(content, Procedure):
        content = procedure_to_dict(content)
    if isinstance(content, str):
        size = len(content.encode("utf-8"))
        if size > MAX_JSON_BYTES:
            raise PayloadTooLarge(
                f"procedure JSON is {size} bytes; the limit is {MAX_JSON_BYTES}",
                [ErrorDetail("", "maxLength", f"at most {MAX_JSON_BYTES} bytes")],
            )
        try:
            data = json.loads(content, object_pairs_hook=_no_duplicate_keys)
        except (ValueError, RecursionError) as exc:
            raise InvalidRequest(
                "procedure content is not valid JSON",
                [ErrorDetail("", "format", f"not JSON: {exc}")],
            ) from None
    elif isinstance(content, Mapping):
        data = content
        try:
            size = len(json.dumps(data, allow_nan=False, ensure_ascii=False).encode("utf-8"))
        except (TypeError, ValueError, RecursionError) as exc:
            raise InvalidRequest(
                "procedure is not plain JSON data",
                [ErrorDetail("", "type", f"not JSON-serialisable: {exc}")],
            ) from None
        if size > MAX_JSON_BYTES:
            raise PayloadTooLarge(
                f"procedure JSON is {size} bytes; the limit is {MAX_JSON_BYTES}",
                [ErrorDetail("", "maxLength", f"at most {MAX_JSON_BYTES} bytes")],
            )
    else:
        raise InvalidRequest(
            "procedure content must be a JSON string or an object",
            [ErrorDetail("", "type", f"got {type(content).__name__}")],
        )
    if not isinstance(data, dict):
        raise InvalidRequest(
            "procedure must be a JSON object",
            [ErrorDetail("", "type", f"got {type(data).__name__}")],
        )
    return dict(data)


class _Checker:
    def __init__(self, predicates: PredicateRegistry) -> None:
        self.predicates = predicates
        self.errors: list[ErrorDetail] = []

    def err(self, path: str, keyword: str, message: str) -> None:
        self.errors.append(ErrorDetail(path, keyword, message))

    def machine(self, data: dict[str, Any]) -> None:
        for key in data:
            if key not in MACHINE_KEYS:
                self.errors.append(_unknown_key(_ptr(key), key, MACHINE_KEYS))
        for key in ("name", "initial", "states"):
            if key not in data:
                self.err(_ptr(key), "required", f"{key!r} is required")
        name = data.get("name")
        if "name" in data:
            if not isinstance(name, str) or not name or len(name) > MAX_PROCEDURE_NAME_LENGTH:
                self.err("/name", "type", f"must be a string of 1..{MAX_PROCEDURE_NAME_LENGTH}")
            elif "__" in name or not _PROCEDURE_NAME.fullmatch(name):
                self.err(
                    "/name",
                    "pattern",
                    "letters, digits, space, '_', '-' or ':' only; no dots, no '__'",
                )
        states = self.states(data.get("states"))
        for key in ("initial", "current"):
            value = data.get(key)
            if key not in data or (key == "current" and value is None):
                continue
            problem = _name_problem(value)
            if problem is not None:
                self.err(_ptr(key), "type", f"{key} {problem}")
            elif states is not None and value not in states:
                self.err(_ptr(key), "enum", f"{key} {value!r} is not one of the states")
        if "metadata" in data and not isinstance(data["metadata"], dict | None):
            self.err("/metadata", "type", "metadata must be an object")
        if "transitions" in data:
            self.transitions(data["transitions"], states)

    def states(self, states: object) -> set[str] | None:
        if states is None:
            return None
        if not isinstance(states, list) or not states:
            self.err("/states", "type", "states must be a non-empty list of strings")
            return None
        if len(states) > MAX_STATES:
            self.err("/states", "maxItems", f"at most {MAX_STATES} states, got {len(states)}")
            return None
        seen: set[str] = set()
        for i, state in enumerate(states):
            if isinstance(state, dict):
                self.err(
                    _ptr("states", i),
                    "type",
                    "states given as objects are refused (they carry on_enter/on_exit callbacks)",
                )
                continue
            problem = _name_problem(state)
            if problem is not None:
                self.err(_ptr("states", i), "type", f"state {problem}")
                continue
            assert isinstance(state, str)
            if state in seen:
                self.err(_ptr("states", i), "uniqueItems", f"state {state!r} is listed twice")
            seen.add(state)
        return seen if len(seen) == len(states) else None

    def transitions(self, transitions: object, states: set[str] | None) -> None:
        if not isinstance(transitions, list):
            self.err("/transitions", "type", "transitions must be a list of objects")
            return
        if len(transitions) > MAX_TRANSITIONS:
            self.err(
                "/transitions",
                "maxItems",
                f"at most {MAX_TRANSITIONS} transitions, got {len(transitions)}",
            )
            return
        triggers = {
            t["trigger"]
            for t in transitions
            if isinstance(t, dict) and isinstance(t.get("trigger"), str)
        }
        edges: dict[tuple[str, str], int] = {}
        for i, t in enumerate(transitions):
            if not isinstance(t, dict):
                self.err(
                    _ptr("transitions", i),
                    "type",
                    "a transition must be an object {trigger, source, dest}",
                )
                continue
            for source in self.transition(i, t, states, triggers):
                earlier = edges.setdefault((t["trigger"], source), i)
                if earlier != i:
                    self.err(
                        _ptr("transitions", i),
                        "uniqueItems",
                        f"trigger {t['trigger']!r} from state {source!r} is already defined "
                        f"by /transitions/{earlier}",
                    )

    def transition(
        self, i: int, t: dict[str, Any], states: set[str] | None, triggers: set[str]
    ) -> list[str]:
        """Check one edge; return the source states it expands to when it is sound."""
        allowed = TRANSITION_KEYS + GUARD_KEYS
        before = len(self.errors)
        for key in t:
            if key not in allowed:
                self.errors.append(_unknown_key(_ptr("transitions", i, key), key, allowed))
        for key in TRANSITION_KEYS:
            if key not in t:
                self.err(_ptr("transitions", i, key), "required", f"{key!r} is required")
        trigger = t.get("trigger")
        if "trigger" in t:
            problem = _trigger_problem(trigger)
            if problem is not None:
                self.err(_ptr("transitions", i, "trigger"), "pattern", f"trigger {problem}")
        dest = t.get("dest")
        if "dest" in t:
            problem = _name_problem(dest)
            if problem is not None:
                self.err(_ptr("transitions", i, "dest"), "type", f"dest {problem}")
            elif states is not None and dest not in states:
                self.err(_ptr("transitions", i, "dest"), "enum", f"dest {dest!r} is not a state")
        sources = self.sources(i, t.get("source"), states) if "source" in t else []
        for key in GUARD_KEYS:
            if key in t:
                self.guards(_ptr("transitions", i, key), t[key], triggers)
        return sources if len(self.errors) == before and states is not None else []

    def sources(self, i: int, source: object, states: set[str] | None) -> list[str]:
        path = _ptr("transitions", i, "source")
        if source == WILDCARD:
            return sorted(states) if states is not None else []
        items = source if isinstance(source, list) else [source]
        if isinstance(source, list) and not source:
            self.err(path, "minItems", "source list must not be empty")
        out: list[str] = []
        for j, s in enumerate(items):
            p = _ptr("transitions", i, "source", j) if isinstance(source, list) else path
            if s == WILDCARD:
                self.err(p, "enum", "'*' means every state and may only stand alone")
                continue
            problem = _name_problem(s)
            if problem is not None:
                self.err(p, "type", f"source {problem}")
            elif states is not None and s not in states:
                self.err(p, "enum", f"source {s!r} is not a state")
            elif s in out:
                self.err(p, "uniqueItems", f"source {s!r} is listed twice")
            else:
                assert isinstance(s, str)
                out.append(s)
        return out

    def guards(self, path: str, value: object, triggers: set[str]) -> None:
        names = value if isinstance(value, list) else [value]
        for j, name in enumerate(names):
            p = f"{path}/{j}" if isinstance(value, list) else path
            problem = _name_problem(name)
            if problem is not None:
                self.err(p, "pattern", f"guard {problem}")
            elif name in triggers:
                self.err(p, "enum", f"guard {name!r} has the name of a trigger")
            elif name not in self.predicates:
                known = ", ".join(sorted(self.predicates)) or "none are registered"
                self.err(p, "enum", f"guard {name!r} is not a registered safe predicate ({known})")


def parse_procedure(
    content: str | Mapping[str, Any] | Procedure,
    *,
    predicates: PredicateRegistry = EMPTY_PREDICATES,
) -> Procedure:
    """Validate a procedure given as v0 JSON text or as an object.

    Raises ``InvalidRequest`` (``PayloadTooLarge`` for size) whose details name every
    offending path; nothing is half-accepted.
    """
    data = _load(content)
    checker = _Checker(predicates)
    checker.machine(data)
    if checker.errors:
        first = checker.errors[0]
        more = f" (and {len(checker.errors) - 1} more)" if len(checker.errors) > 1 else ""
        raise InvalidRequest(
            f"invalid procedure at {first.path or '/'}: {first.message}{more}", checker.errors
        )
    try:
        return Procedure.model_validate(data)
    except ValidationError as exc:
        details = [
            ErrorDetail(_ptr(*e["loc"]), str(e["type"]), str(e["msg"])) for e in exc.errors()
        ]
        raise InvalidRequest("invalid procedure", details) from None


def procedure_to_dict(procedure: Procedure) -> dict[str, Any]:
    """The object form, holding exactly the keys the procedure was given."""
    return procedure.model_dump(mode="json", exclude_unset=True)


def procedure_to_json(procedure: Procedure) -> str:
    """The v0 string form (compact, key order kept)."""
    return json.dumps(procedure_to_dict(procedure), ensure_ascii=False, separators=(",", ":"))
