"""The models mirror the schemas: same fields, same required set, same rules at the edges."""

from __future__ import annotations

import json
import typing
from enum import Enum
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from memorywire.wire import MODELS, examples, registry, schema, schema_id, to_wire, validate
from memorywire.wire import models as m

# (schema name, JSON pointer inside it, model)
PAIRS: list[tuple[str, str, type[BaseModel]]] = [
    *[(kind, "", model) for kind, model in MODELS.items()],
    ("recall.response", "/$defs/hit", m.RecallHit),
    ("remember.response", "/$defs/conflict", m.ConflictCandidate),
    ("remember.response", "/$defs/near_duplicate", m.NearDuplicate),
    ("forget.response", "/$defs/store_count", m.StoreCount),
    ("expire", "/$defs/policy", m.ExpirePolicy),
    ("common", "/$defs/store_failure", m.StoreFailure),
    ("types/fsm", "/$defs/transition", m.Transition),
    ("governance/review", "/$defs/diff", m.Diff),
]
PAIR_IDS = [f"{k}{p}" for k, p, _ in PAIRS]


def _node(kind: str, ptr: str) -> dict[str, Any]:
    node: Any = schema(kind)
    for part in filter(None, ptr.split("/")):
        node = node[part]
    return dict(node)


def _resolve(kind: str, node: dict[str, Any]) -> dict[str, Any]:
    """Follow ``$ref`` chains so enum and default checks see the referenced keywords."""
    merged = dict(node)
    while "$ref" in merged:
        ref = merged.pop("$ref")
        target = schema_id(kind) + ref if ref.startswith("#") else ref
        base, _, frag = target.partition("#")
        found: Any = registry().contents(base)
        for part in filter(None, frag.split("/")):
            found = found[part]
        merged = {**found, **merged}
    return merged


def _wire_fields(model: type[BaseModel]) -> dict[str, Any]:
    return {name: f for name, f in model.model_fields.items() if not f.exclude}


def _is_discriminator(model: type[BaseModel], name: str) -> bool:
    # Typed records default ``type`` to their Literal; on the wire v0 requires it.
    return name == "type" and issubclass(model, m.MemoryRecord) and model is not m.MemoryRecord


def test_every_wire_model_has_a_schema() -> None:
    covered = {model for _, _, model in PAIRS}
    public = {
        getattr(m, n)
        for n in m.__all__
        if isinstance(getattr(m, n), type) and issubclass(getattr(m, n), BaseModel)
    }
    assert public - covered == set()


@pytest.mark.parametrize(("kind", "ptr", "model"), PAIRS, ids=PAIR_IDS)
def test_properties_equal_model_fields(kind: str, ptr: str, model: type[BaseModel]) -> None:
    node = _node(kind, ptr)
    assert set(node["properties"]) == set(_wire_fields(model))


@pytest.mark.parametrize(("kind", "ptr", "model"), PAIRS, ids=PAIR_IDS)
def test_required_sets_agree(kind: str, ptr: str, model: type[BaseModel]) -> None:
    node = _node(kind, ptr)
    model_required = {
        n for n, f in _wire_fields(model).items() if f.is_required() or _is_discriminator(model, n)
    }
    assert set(node.get("required", [])) == model_required


@pytest.mark.parametrize(("kind", "ptr", "model"), PAIRS, ids=PAIR_IDS)
def test_extra_keys_policy_agrees(kind: str, ptr: str, model: type[BaseModel]) -> None:
    extra = model.model_config.get("extra")
    assert _node(kind, ptr)["additionalProperties"] is (extra == "allow")


def _enum_values(annotation: Any) -> set[str] | None:
    for arg in [annotation, *typing.get_args(annotation)]:
        if isinstance(arg, type) and issubclass(arg, Enum):
            return {e.value for e in arg}
        if typing.get_origin(arg) is typing.Literal:
            return {getattr(a, "value", a) for a in typing.get_args(arg)}
    return None


@pytest.mark.parametrize(("kind", "ptr", "model"), PAIRS, ids=PAIR_IDS)
def test_enums_and_defaults_agree(kind: str, ptr: str, model: type[BaseModel]) -> None:
    props = _node(kind, ptr)["properties"]
    for name, field in _wire_fields(model).items():
        prop = _resolve(kind, props[name])
        values = _enum_values(field.annotation)
        if values is not None:
            allowed = set(prop.get("enum", [])) | ({prop["const"]} if "const" in prop else set())
            if not allowed and prop.get("type") == "array":
                allowed = set(_resolve(kind, prop["items"]).get("enum", []))
            assert allowed == values, name
        default = None if field.default_factory or field.is_required() else field.default
        if default is not None and not _is_discriminator(model, name):
            assert prop.get("default") == getattr(default, "value", default), name
        if "default" in prop:
            produced = field.default_factory() if field.default_factory else field.default
            assert getattr(produced, "value", produced) == prop["default"], name


# --- differential probing: the schema is never looser than the model ------------------------

PROBES: list[Any] = [
    None,
    "",
    "x",
    "x" * 257,
    "semantik",
    -1,
    0,
    1,
    2,
    3,
    4,
    1000,
    1001,
    0.5,
    1.5,
    -0.5,
    True,
    [],
    ["a"],
    [""],
    {},
    {"k": "v"},
    "semantic",
    "rrf",
    "archive",
    "merge_content",
]


def _model_accepts(model: type[BaseModel], doc: Any) -> bool:
    try:
        model.model_validate_json(json.dumps(doc), strict=True)
    except ValidationError:
        return False
    return True


def _probe_cases() -> list[tuple[str, str, str]]:
    return [
        (e.kind, e.name, f)
        for e in examples()
        if e.kind in MODELS
        for f in _wire_fields(MODELS[e.kind])
    ]


# Where the schema is deliberately stricter than the model: a procedural remember's content
# must be an FSM (the model keeps it as text or a plain object for procedural.py to replay).
STRICTER = {("remember", "content")}


@pytest.mark.parametrize(("kind", "name", "field"), _probe_cases())
def test_schema_and_model_agree_on_probes(kind: str, name: str, field: str) -> None:
    model = MODELS[kind]
    base = next(e.document for e in examples(kind) if e.name == name)
    for value in PROBES:
        doc = {**base, field: value}
        schema_ok = not validate(kind, doc)
        model_ok = _model_accepts(model, doc)
        if schema_ok:
            assert model_ok, f"schema admits {field}={value!r} but the model refuses it"
        elif model_ok and value is not None and (kind, field) not in STRICTER:
            pytest.fail(
                f"model admits {field}={value!r} but the schema refuses: {validate(kind, doc)}"
            )


@pytest.mark.parametrize("kind", sorted(MODELS))
def test_model_dumps_validate(kind: str) -> None:
    for ex in examples(kind):
        model = MODELS[kind].model_validate(ex.document)
        assert validate(kind, to_wire(model)) == [], ex.name


def test_excluded_diagnostics_never_reach_the_wire() -> None:
    failure = m.StoreFailure(store="pg", error="down")
    resp = m.RememberResponse(
        id="a", stored_at=1, stores=["sqlite"], pending_approval=False, failures=[failure]
    )
    body = to_wire(resp)
    assert "failures" not in body
    assert validate("remember.response", body) == []
    assert "failures" not in schema("remember.response")["properties"]
