"""Validation of wire documents against the v0 schemas, with messages a person can act on.

Every problem is reported, not only the first, each as a :class:`ValidationIssue` carrying a
JSON pointer to the offending value, the failing schema keyword and a sentence. Three
refinements over raw ``jsonschema`` output make the result precise:

* ``required`` points at the missing field itself (``/content``), not at its parent;
* ``additionalProperties`` yields one issue per unknown key, with a "did you mean";
* ``anyOf``/``oneOf`` failures report the errors of the one branch whose type matched,
  or a schema-supplied ``errorMessage`` (the ajv-errors convention, keyed by keyword).

The ``contentSchema`` keyword, an annotation in draft 2020-12, is enforced here for strings
whose ``contentMediaType`` is ``application/json``: a procedural FSM sent as a JSON string
in ``remember.content`` is decoded and checked like an object, and pointers continue into
the decoded document (``/content/transitions/0/before``).
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any, cast

from memorywire.errors import ErrorDetail, InvalidRequest
from memorywire.wire.fastcheck import accepts
from memorywire.wire.registry import registry, schema_id

if TYPE_CHECKING:
    from jsonschema.exceptions import ValidationError
    from jsonschema.protocols import Validator

__all__ = [
    "ValidationIssue",
    "best_match",
    "check",
    "issues_at",
    "reference_issues",
    "validate",
    "validator_for",
]


@dataclass(frozen=True, order=True)
class ValidationIssue:
    """One problem: where (JSON pointer, ``""`` is the document), which keyword, and why."""

    path: str
    keyword: str
    message: str
    schema_path: str = ""

    def to_detail(self) -> ErrorDetail:
        return ErrorDetail(self.path, self.keyword, self.message)

    def __str__(self) -> str:
        return f"{self.path or '(root)'}: {self.message} [{self.keyword}]"


def _content_schema(
    validator: Any, content_schema: Any, instance: Any, schema: Mapping[str, Any]
) -> Iterator[ValidationError]:
    if not isinstance(instance, str) or schema.get("contentMediaType") != "application/json":
        return
    try:
        decoded = json.loads(instance)
    except json.JSONDecodeError as exc:
        from jsonschema.exceptions import ValidationError

        yield ValidationError(
            f"must hold a JSON document: {exc.msg} at line {exc.lineno}, column {exc.colno}",
            validator="contentMediaType",
        )
        return
    yield from validator.descend(decoded, content_schema)


@cache
def _validator_class() -> Any:
    """Draft 2020-12 plus ``contentSchema``; built on the first check, so that importing the
    wire models (every entry point does) does not load ``jsonschema``."""
    from jsonschema import Draft202012Validator, validators

    return validators.extend(  # type: ignore[no-untyped-call]
        Draft202012Validator, {"contentSchema": _content_schema}
    )


@cache
def validator_for(kind: str) -> Validator:
    """A ready validator for one document kind (``remember``, ``types/fsm``, ...)."""
    validator: Validator = _validator_class()({"$ref": schema_id(kind)}, registry=registry())
    return validator


def validate(kind: str, document: Any) -> list[ValidationIssue]:
    """Every problem with ``document`` as a ``kind``, sorted by path; ``[]`` when valid."""
    if accepts(kind, document):
        return []
    return reference_issues(kind, document)


def reference_issues(kind: str, document: Any) -> list[ValidationIssue]:
    """:func:`validate` by the reference validator alone (what the fast pre-check must match)."""
    issues: set[ValidationIssue] = set()
    for error in validator_for(kind).iter_errors(document):
        issues.update(_issues(error))
    return sorted(issues, key=lambda i: (i.path.split("/"), i.keyword, i.message))


@cache
def _validator_at(kind: str, fragment: str) -> Validator:
    validator: Validator = _validator_class()({"$ref": schema_id(kind) + fragment},
                                              registry=registry())
    return validator


def issues_at(kind: str, fragment: str, document: Any) -> list[ValidationIssue]:
    """Every problem with ``document`` as one part of ``kind``'s schema (``#/oneOf/1``: a
    dump's record line), by the reference validator. A ``oneOf`` of whole-document shapes
    only says "matches none"; validating the one shape meant names the field."""
    issues: set[ValidationIssue] = set()
    for error in _validator_at(kind, fragment).iter_errors(document):
        issues.update(_issues(error))
    return sorted(issues, key=lambda i: (i.path.split("/"), i.keyword, i.message))


def best_match(kind: str, document: Any) -> str | None:
    """The single most useful problem as one line (``"/type: must be one of ..."``)."""
    from jsonschema.exceptions import relevance

    errors = list(validator_for(kind).iter_errors(document))
    if not errors:
        return None
    first = next(_issues(max(errors, key=relevance)))
    return f"{first.path or '(root)'}: {first.message}"


def check(kind: str, document: Any) -> None:
    """Raise :class:`InvalidRequest` listing every problem, or return when valid."""
    issues = validate(kind, document)
    if not issues:
        return
    head = best_match(kind, document) or str(issues[0])
    more = f" (and {len(issues) - 1} more)" if len(issues) > 1 else ""
    raise InvalidRequest(f"invalid {kind}: {head}{more}", [i.to_detail() for i in issues])


# --- turning jsonschema errors into issues ------------------------------------------------


def pointer(parts: Sequence[str | int]) -> str:
    """RFC 6901 JSON pointer of a path."""
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def _issues(error: ValidationError) -> Iterator[ValidationIssue]:
    path = list(error.absolute_path)
    spath = pointer(list(error.absolute_schema_path))
    keyword = str(error.validator)
    want: Any = error.validator_value
    custom = _custom_message(error)
    if keyword in ("anyOf", "oneOf") and custom is None:
        branch = _matching_branch(error)
        if branch is not None:
            for sub in branch:
                yield from _issues(sub)
            return
    if keyword == "required" and custom is None:
        # one error per missing name; naming the field in the pointer is what callers want
        present = error.instance if isinstance(error.instance, Mapping) else {}
        for name in want:
            if name not in present:
                yield ValidationIssue(
                    pointer([*path, name]), keyword, f"missing required field {name!r}", spath
                )
        return
    if keyword == "additionalProperties" and custom is None and isinstance(error.instance, Mapping):
        node: Any = error.schema
        known = list(node.get("properties", {}))
        for name in error.instance:
            if name in known:
                continue
            hint = difflib.get_close_matches(str(name), known, n=1)
            msg = f"unknown field {name!r}" + (f" (did you mean {hint[0]!r}?)" if hint else "")
            allowed = f"; allowed: {', '.join(known)}" if not hint else ""
            yield ValidationIssue(pointer([*path, name]), keyword, msg + allowed, spath)
        return
    yield ValidationIssue(pointer(path), keyword, custom or _message(error), spath)


def _custom_message(error: ValidationError) -> str | None:
    node: Any = error.schema
    spec = node.get("errorMessage") if isinstance(node, Mapping) else None
    if isinstance(spec, str):
        return spec
    if isinstance(spec, Mapping):
        value = spec.get(str(error.validator))
        return str(value) if value is not None else None
    return None


def _matching_branch(error: ValidationError) -> list[ValidationError] | None:
    """Errors of the only branch whose ``type`` fits the value, if exactly one does."""
    branches: dict[Any, list[ValidationError]] = {}
    for sub in error.context or []:
        branches.setdefault(sub.relative_schema_path[0], []).append(sub)
    depth = len(error.absolute_path)
    fitting = [
        errs
        for errs in branches.values()
        if not any(e.validator == "type" and len(e.absolute_path) == depth for e in errs)
    ]
    return fitting[0] if len(fitting) == 1 else None


_JSON_TYPES: tuple[tuple[type | tuple[type, ...], str], ...] = (
    (bool, "boolean"),
    (int, "integer"),
    (float, "number"),
    (str, "string"),
    ((list, tuple), "array"),
    (Mapping, "object"),
    (type(None), "null"),
)


def _json_type(value: Any) -> str:
    for py, name in _JSON_TYPES:
        if isinstance(value, py):
            return name
    return type(value).__name__


def _show(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


def _a(name: str) -> str:
    return ("an " if name[0] in "aeiou" else "a ") + name


def _message(error: ValidationError) -> str:
    kw = str(error.validator)
    want, got = cast(Any, error.validator_value), cast(Any, error.instance)
    if kw == "type":
        names = [want] if isinstance(want, str) else list(want)
        return f"must be {' or '.join(_a(n) for n in names)}, not {_a(_json_type(got))}"
    if kw == "enum":
        return f"must be one of {', '.join(map(str, want))} (got {_show(got)})"
    if kw == "const":
        return f"must be {_show(want)} (got {_show(got)})"
    if kw in ("minLength", "minItems", "minProperties") and want == 1:
        return "must not be empty"
    unit = {"Length": "characters", "Items": "items", "Properties": "keys"}
    for prefix, word in (("min", "at least"), ("max", "at most")):
        for suffix, noun in unit.items():
            if kw == prefix + suffix:
                return f"must have {word} {want} {noun} (has {len(got)})"
    bounds = {"minimum": ">=", "maximum": "<=", "exclusiveMinimum": ">", "exclusiveMaximum": "<"}
    if kw in bounds:
        return f"must be {bounds[kw]} {want} (got {_show(got)})"
    if kw in ("anyOf", "oneOf"):
        return "does not match any of the allowed shapes"
    return str(error.message)
